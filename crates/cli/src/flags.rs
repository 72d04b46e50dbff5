//! Flag groups and value parsers that several commands share (specs are parsed here, so a bad
//! one is a usage error with exit code 2 before anything runs). Each command's own arguments
//! live beside its `run` in `commands/`.

use ckeep_engine::{Level, MetadataFilter, Mode, SearchRequest, Strategy, StrategyOverrides};
use ckeep_eval::Metric;
use ckeep_index::Aggregation;
use ckeep_text::ChunkerSpec;
use clap::Args;
use std::path::PathBuf;

/// What a model spec may be, for commands that embed with it; `MODEL_HELP` adds `--precision`,
/// which commands that only read a store's vectors (`search`, `ask`) do not have.
macro_rules! model_spec_help {
    () => {
        "Embedding model: a name (all-MiniLM-L6-v2, potion-base-8M; installed with `ckeep model pull`, or found in the Hugging Face cache), a model directory (sentence-transformers or Model2Vec), or an OpenAI-compatible server as URL#MODEL (e.g. http://localhost:11434/v1#nomic-embed-text; key from CKEEP_API_KEY or OPENAI_API_KEY). A name or directory followed by @int8 runs the encoder's matrix products in int8"
    };
}

pub(crate) const MODEL_HELP: &str = concat!(model_spec_help!(), " (see --precision)");

const QUERY_MODEL_HELP: &str = concat!(
    "The model that embeds the query for dense search (default: the store's; a store with several models takes any of them).\n\n",
    model_spec_help!()
);

const MODE_HELP: &str = "Scoring mode: bm25 (terms), dense (cosine of embeddings), or hybrid \
(both fused: hybrid:rrf[=K] by reciprocal rank; hybrid:linear=W by W·dense + (1−W)·BM25; plain \
hybrid is rrf with one model and linear=0.6, shared, with several). Default: the store's \
strategy, else bm25; see --strategy for every part";

/// `MODEL_HELP` after what a command does with the model (its doc comment is the short help,
/// which `--help` would otherwise replace).
pub(crate) fn model_long_help(what: &str) -> String {
    format!("{what}\n\n{MODEL_HELP}")
}

pub(crate) const PRECISION_HELP: &str = "Arithmetic of the encoder's matrix products: f32, or int8 (weights a quarter of the size, vectors within a cosine of 0.995 of f32; faster where the CPU has AVX-512 VNNI; transformer models only). The same as MODEL@int8; a store records it with its model";

const PAIR_MODELS: &str = "Embedding model. Given again (`--model A --model B`), each further model's whole-text, chunk-pair and best-pair cosines become features of a learned pair score (`pairs --learn`, `--pair-model`); the first model's scores are the ones reported";

/// How pair similarity cuts and scores texts.
#[derive(Debug, Args)]
pub struct PairScoring {
    /// How to cut each text (default: windows of clamp(words/4, 18, 150) words, the chunk-pair
    /// experiment's rule).
    #[arg(long, value_name = "SPEC", default_value = ckeep_engine::PAIR_CHUNKER, value_parser = parse_chunker)]
    pub chunker: ChunkerSpec,
    /// Number of most similar chunk pairs averaged.
    #[arg(long, value_name = "K", default_value_t = ckeep_engine::DEFAULT_TOP_K, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=ckeep_engine::MAX_K as u64))]
    pub top_k: usize,
    #[arg(long, value_name = "MODEL", default_value = ckeep_engine::DEFAULT_MODEL,
          help = PAIR_MODELS, long_help = model_long_help(PAIR_MODELS))]
    pub model: Vec<String>,
    #[arg(long, value_name = "PRECISION", default_value = "f32", help = PRECISION_HELP)]
    pub precision: ckeep_embed::Precision,
}

pub(crate) fn parse_fraction(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(f) if f > 0.0 && f < 1.0 => Ok(f),
        _ => Err(format!("`{s}` is not a fraction strictly between 0 and 1")),
    }
}

pub(crate) const METRICS_HELP: &str =
    "Metrics (trec_eval definitions; a document is relevant when its grade is > 0):";

pub(crate) fn eval_help() -> String {
    format!("{METRICS_HELP}\n{}", ckeep_eval::Metric::HELP)
}

/// Which dataset `eval run` and `eval tune` evaluate on.
#[derive(Debug, Args)]
pub struct DatasetFlags {
    /// A dataset directory (BEIR layout, or docs.jsonl + queries.jsonl).
    #[arg(long, value_name = "DIR", conflicts_with_all = ["docs", "queries"])]
    pub dataset: Option<PathBuf>,
    /// The qrels split of a BEIR dataset (`chN` or `all` for fastbook-benchmark).
    #[arg(long, default_value = "test")]
    pub split: String,
    /// Refuse a corpus with documents of empty text instead of leaving them out (with a
    /// warning that lists them).
    #[arg(long)]
    pub strict: bool,
    /// Long-document layout: the documents file.
    #[arg(long, value_name = "FILE", requires = "queries")]
    pub docs: Option<PathBuf>,
    /// Long-document layout: the queries file.
    #[arg(long, value_name = "FILE", requires = "docs")]
    pub queries: Option<PathBuf>,
    /// Long-document layout: judge documents (`doc`), or the passage that answers the query
    /// (`passage`: needs `pid` in queries and `paragraphs` in docs; use level=chunk).
    #[arg(long, value_name = "LEVEL", default_value = "doc", value_parser = ["doc", "passage"])]
    pub relevance: String,
    /// Keep the evaluation indexes here (default: a temporary directory, removed afterwards);
    /// or build them in PostgreSQL: given a server URL, each index gets a database
    /// `ckeep_eval_<index>` of its own (replaced if it exists).
    #[arg(long, value_name = "DIR|URL")]
    pub work_dir: Option<String>,
    /// Model for strategies with mode=dense or hybrid that name none (model=…).
    #[arg(long, value_name = "MODEL")]
    pub model: Option<String>,
    #[arg(long, value_name = "PRECISION", default_value = "f32", requires = "model", help = PRECISION_HELP)]
    pub precision: ckeep_embed::Precision,
    /// Fields indexed for strategies that name no `repr=`: `text`, or `title,text` (the
    /// default for BEIR datasets, as their published figures index them).
    #[arg(long, value_name = "FIELDS", value_parser = parse_fields)]
    pub fields: Option<ckeep_engine::Fields>,
}

pub(crate) fn parse_fields(s: &str) -> Result<ckeep_engine::Fields, String> {
    s.parse()
}

pub(crate) fn parse_metric(s: &str) -> Result<ckeep_eval::Metric, String> {
    s.parse::<ckeep_eval::Metric>().map_err(|e| e.to_string())
}

pub(crate) const QUANTIZE_HELP: &str = "\
Hold the store's vectors in memory compactly for dense search (kept by the store):
  int8     one byte per dimension (a quarter of float32); recall@10 of the exact ranking
           stays at 0.99 or more after rescoring
  binary   one bit per dimension (a thirty-second); recall@10 0.97 or more after rescoring
           at a million vectors (oversample=20 for more, 5 for speed)
  none     float32 again
KIND applies to every stored representation; REPR=KIND (repeatable) to one, e.g.
plain=int8. Searches scan the codes, then rescore the best oversample × k candidates
with their float32 vectors, which stay in the store on disk (strategy keys
oversample=N, rescore=false, exact=true).";

pub(crate) fn parse_quantize(
    s: &str,
) -> Result<(Option<String>, ckeep_index::Quantization), String> {
    let (repr, kind) = match s.rsplit_once('=') {
        Some((repr, kind)) if !repr.is_empty() => (Some(repr.to_string()), kind),
        _ => (None, s),
    };
    Ok((repr, kind.parse().map_err(|e: ckeep_index::Error| e.to_string())?))
}

/// How `sync` and `watch` index what they write: the settings of a new store, and the model.
#[derive(Debug, Args)]
pub struct IndexFlags {
    /// How to cut documents into chunks, for a new store (a store keeps its own).
    #[arg(long, value_name = "SPEC", value_parser = parse_chunker, long_help = chunker_help())]
    pub chunker: Option<ChunkerSpec>,
    /// How text becomes search terms, for a new store (a store keeps its own).
    #[arg(long, value_name = "NAME", value_parser = parse_analyzer, long_help = ANALYZER_HELP)]
    pub analyzer: Option<ckeep_engine::AnalyzerChoice>,
    /// Embed chunks with this model (default: the store's model, if it has one).
    #[arg(long, value_name = "MODEL", long_help = MODEL_HELP)]
    pub model: Option<String>,
    #[arg(long, value_name = "PRECISION", default_value = "f32", requires = "model", help = PRECISION_HELP)]
    pub precision: ckeep_embed::Precision,
}

impl IndexFlags {
    /// The model spec asked for, with its precision.
    pub fn model(&self) -> Option<String> {
        self.model.as_deref().map(|m| self.precision.apply(m))
    }
}

pub(crate) fn repr_help() -> String {
    format!(
        "Also build this representation for every document (repeatable); `plain` is always built with a model. Derived ones (summary-avg, window-avg) need only what they derive from.\n\n{}",
        ckeep_engine::Representation::HELP
    )
}

/// `--repr` of `search` and `ask`: what is searched, not what is built.
fn searched_repr_help() -> String {
    format!(
        "The representation searched (default: the store's: plain, or contextual:title for a store added with --fields title,text). Several joined by + fuse their document rankings by reciprocal rank (with --level doc). A representation must have been built by `ckeep add --repr`.\n\n{}",
        ckeep_engine::Representation::HELP
    )
}

pub(crate) fn parse_repr(s: &str) -> Result<ckeep_engine::Representation, String> {
    s.parse()
}

pub(crate) fn summarizer_help() -> String {
    format!(
        "Summarize every document this way (repeatable). Summaries are stored, embedded, computed once, and resumed after an interruption.\n\n{}",
        ckeep_engine::Summarizer::HELP
    )
}

/// Checks a `R+R…` list, kept as text (clap would read a `Vec` as repeated values).
pub(crate) fn parse_repr_list(s: &str) -> Result<String, String> {
    ckeep_engine::parse_representations(s).map(|_| s.to_string())
}

pub(crate) fn parse_summarizer(s: &str) -> Result<ckeep_engine::Summarizer, String> {
    s.parse()
}

pub(crate) fn chunker_help() -> String {
    format!(
        "How to cut documents into chunks (default: the store's chunker, or markdown:256 for a new store).\n\n{}",
        ChunkerSpec::HELP
    )
}

pub(crate) const ANALYZER_HELP: &str = "How text becomes search terms, chosen on a store's first add and kept by it (asking for another later is an error; queries always use the store's) [default: the store's, or auto].

standard   the English pipeline: words split at non-alphanumeric characters, lower-cased,
           English stop words dropped, Snowball (Porter2) stemming
cjk        Unicode (UAX #29) words; runs of Han, kana and Hangul as overlapping character
           bigrams (Lucene's CJKAnalyzer approach); other words through the English
           pipeline
jieba      Chinese words by jieba (search mode) after Traditional-to-Simplified folding
           (OpenCC tables); kana and Hangul as in cjk; other words through the English
           pipeline
auto       standard for spaced scripts, jieba for Chinese, cjk for Japanese and Korean,
           from the script of the first documents added; add says which it chose";

pub(crate) fn parse_size_unit(s: &str) -> Result<ckeep_text::chunk::SizeUnit, String> {
    s.parse()
}

pub(crate) fn parse_analyzer(s: &str) -> Result<ckeep_engine::AnalyzerChoice, String> {
    s.parse()
}

pub(crate) fn parse_chunker(s: &str) -> Result<ChunkerSpec, String> {
    s.parse().map_err(|e: ckeep_text::Error| e.to_string())
}

pub(crate) fn parse_filter(s: &str) -> Result<ckeep_engine::MetadataFilter, String> {
    ckeep_engine::MetadataFilter::parse(s)
}

pub(crate) fn strategy_help() -> String {
    format!("A strategy spec: comma-separated key=value parts.\n\n{}", Strategy::HELP)
}

pub(crate) fn parse_mode(s: &str) -> Result<Mode, String> {
    s.parse()
}

pub(crate) fn parse_level(s: &str) -> Result<Level, String> {
    s.parse()
}

pub(crate) fn parse_expansion(s: &str) -> Result<ckeep_engine::Expansion, String> {
    s.parse()
}

pub(crate) fn parse_diversify(s: &str) -> Result<ckeep_engine::Diversify, String> {
    s.parse()
}

pub(crate) fn parse_agg(s: &str) -> Result<Aggregation, String> {
    s.parse().map_err(|e: ckeep_index::Error| e.to_string())
}

pub(crate) fn parse_strategy(s: &str) -> Result<Strategy, String> {
    s.parse().map_err(|e: ckeep_engine::Error| e.to_string())
}

/// How `add`, `sync` and `extract` read their inputs.
#[derive(Debug, Args)]
pub struct LoadFlags {
    /// Replace invalid UTF-8 with U+FFFD (with a warning) instead of rejecting the file.
    #[arg(long)]
    pub lossy: bool,
    /// Skip inputs that cannot be loaded, reporting them, instead of stopping (for `sync`,
    /// their stored documents are kept: the files are still there).
    #[arg(long)]
    pub keep_going: bool,
    /// Largest document accepted, in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = ckeep_text::load::DEFAULT_MAX_DOC_BYTES)]
    pub max_doc_bytes: u64,
}

impl LoadFlags {
    /// How these options read files.
    pub fn options(&self) -> ckeep_text::LoadOptions {
        ckeep_text::LoadOptions { lossy: self.lossy, max_doc_bytes: self.max_doc_bytes }
    }

    /// `paths` to read with these options.
    pub fn inputs(&self, paths: &[std::path::PathBuf]) -> ckeep_engine::Inputs {
        ckeep_engine::Inputs {
            paths: paths.to_vec(),
            load: self.options(),
            keep_going: self.keep_going,
        }
    }
}

/// Parses `--metrics ndcg@10,mrr@10`.
pub(crate) fn parse_metrics(s: &str) -> Result<Vec<Metric>, String> {
    s.split(',')
        .filter(|p| !p.trim().is_empty())
        .map(|p| p.parse::<Metric>().map_err(|e| e.to_string()))
        .collect()
}

/// How a search is run, as flags: a whole strategy and its parts, filters and the model
/// (`search`, `ask`).
#[derive(Debug, Args)]
pub struct StrategyFlags {
    /// Number of results [default: 10, or the strategy's k].
    #[arg(short, long, value_parser = clap::value_parser!(u64).range(1..=ckeep_engine::MAX_K as u64))]
    pub k: Option<u64>,
    #[arg(long, value_name = "MODE", value_parser = parse_mode, help = MODE_HELP)]
    pub mode: Option<Mode>,
    /// Return chunks, or documents ranked by their chunks.
    #[arg(long, value_parser = parse_level)]
    pub level: Option<Level>,
    /// How chunk scores become a document score with --level doc: max, mean:K (mean of the
    /// best K chunks) or sum; over the best 1,000 chunks of the query.
    #[arg(long = "aggregate", alias = "agg", value_name = "AGG", value_parser = parse_agg)]
    pub agg: Option<Aggregation>,
    /// After ranking, grow each hit into its context: window:W (W sentences on each side),
    /// parent, doc, or merge:R (auto-merge into parents when more than R of their children are
    /// hits). Overlapping contexts of one document are merged.
    #[arg(long, value_name = "EXPANSION", value_parser = parse_expansion)]
    pub expand: Option<ckeep_engine::Expansion>,
    /// Diversify the results by maximal marginal relevance: `mmr[:λ[:N]]` picks the k results
    /// one by one from the best N (default max(4k, 40)) by λ·relevance − (1−λ)·similarity to
    /// those already picked (λ default 0.5; 1 keeps the plain ranking). --explain shows each
    /// result's redundancy penalty.
    #[arg(long, value_name = "MMR", value_parser = parse_diversify)]
    pub diversify: Option<ckeep_engine::Diversify>,
    /// Exact dense scan even for collections searched through the HNSW graph (20,000+ vectors).
    #[arg(long)]
    pub exact: bool,
    /// The representation searched (default: the store's); R+R… fuses document rankings (with
    /// --level doc).
    #[arg(long, value_name = "REPR", value_parser = parse_repr_list, long_help = searched_repr_help())]
    pub repr: Option<String>,
    /// The summaries a summary-based representation uses (default: the store's only one).
    #[arg(long, value_name = "SPEC", value_parser = parse_summarizer)]
    pub summarizer: Option<ckeep_engine::Summarizer>,
    /// Reorder the top results by a reranker server's scores: `URL[#MODEL]` of the `/rerank`
    /// API (TEI, Jina, Cohere and compatible servers; key from `CKEEP_API_KEY`).
    #[arg(long, value_name = "URL")]
    pub rerank: Option<String>,
    /// How many results the reranker scores.
    #[arg(long, value_name = "N", requires = "rerank", value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=ckeep_engine::MAX_K as u64))]
    pub rerank_k: Option<usize>,
    /// A whole strategy spec; the flags above override its parts.
    #[arg(long, value_name = "SPEC", value_parser = parse_strategy, long_help = strategy_help())]
    pub strategy: Option<Strategy>,
    // The help is the engine's, which the playground shows too; the flag may be repeated.
    #[arg(long, value_name = "FILTER", value_parser = parse_filter,
        help = ckeep_engine::MetadataFilter::CONDITION_HELP)]
    pub filter: Vec<ckeep_engine::MetadataFilter>,
    /// The model that embeds the query for dense search (default: the store's).
    #[arg(long, value_name = "MODEL", long_help = QUERY_MODEL_HELP)]
    pub model: Option<String>,
}

impl StrategyFlags {
    /// The strategy's parts given as flags.
    pub fn parts(&self) -> anyhow::Result<StrategyOverrides> {
        let repr = self.repr.as_deref().map(ckeep_engine::parse_representations);
        Ok(StrategyOverrides {
            k: self.k.map(|k| k as usize),
            mode: self.mode,
            level: self.level,
            agg: self.agg,
            expand: self.expand,
            diversify: self.diversify,
            repr: repr.transpose().map_err(anyhow::Error::msg)?,
            summarizer: self.summarizer.clone(),
            model: self.model.clone(),
            // The flag only switches exact scans on.
            exact: self.exact.then_some(true),
            rerank: self.rerank.clone(),
            rerank_k: self.rerank_k,
        })
    }

    /// The search these flags ask for `query`: the whole spec if given, its parts laid over,
    /// and the filters.
    pub fn request(&self, query: &str) -> anyhow::Result<SearchRequest> {
        let filter = (!self.filter.is_empty()).then(|| MetadataFilter::all(self.filter.clone()));
        let mut req = SearchRequest::new(query).with_parts(self.parts()?).with_filter(filter);
        req.strategy.clone_from(&self.strategy);
        Ok(req)
    }
}
