//! Retrieval strategies as one value with a textual form, usable on the command line and in
//! TOML files: comma-separated `key=value` parts, e.g. `chunker=paragraphs,mode=bm25,level=doc,agg=max,k=10`.
//!
//! Values may themselves contain commas (`chunker=hierarchy:512,128` or
//! `chunker=words:100,overlap=20`): a part that is not `known_key=value` continues the previous
//! value. Omitted keys take the defaults of [`Strategy::default`].

use std::fmt;
use std::str::FromStr;

use ckeep_index::{Aggregation, Fusion};
use ckeep_store::Manifest;
use ckeep_text::ChunkerSpec;
use serde::Serialize;

use crate::defaults::MAX_K;
use crate::diversify::Diversify;
use crate::error::Error;
use crate::expand::Expansion;
use crate::lexical::LexicalParams;
use crate::represent::{Representation, parse_list};
use crate::summarize::Summarizer;

/// Keys of the spec.
const KEYS: [&str; 21] = [
    "chunker",
    "analyzer",
    "model",
    "models",
    "repr",
    "summarizer",
    "mode",
    "k1",
    "b",
    "title_weight",
    "level",
    "agg",
    "expand",
    "diversify",
    "exact",
    "quantize",
    "oversample",
    "rescore",
    "k",
    "rerank",
    "rerank_k",
];

/// How chunks are scored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// Okapi BM25 over the chunks' analysed text.
    #[default]
    Bm25,
    /// Cosine similarity of embeddings (exact scan).
    Dense,
    /// BM25 and dense lists fused (`hybrid`, `hybrid:rrf[=K]`, `hybrid:linear=W`).
    Hybrid(Fusion),
}

/// What a result is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Level {
    /// A chunk.
    #[default]
    Chunk,
    /// A document, ranked from its chunks by the aggregation.
    Doc,
}

/// A complete retrieval recipe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Strategy {
    /// The chunker the index must have been built with (`None`: whatever the store has).
    pub chunker: Option<ChunkerSpec>,
    /// The analyzer the index must have been built with (`None`: whatever the store has;
    /// evaluation then lets `auto` choose).
    pub analyzer: Option<ckeep_index::Analyzer>,
    /// The embedding model the index is built with (`None`: the store's, if any). Evaluation
    /// builds one index per (chunker, model).
    pub model: Option<String>,
    /// Further models whose dense lists are fused beside `model`'s (`models=A+B`: `model` A,
    /// these B); each must be a model the store holds vectors of.
    pub extra_models: Vec<String>,
    /// Scoring mode (default `bm25`).
    pub mode: Mode,
    /// BM25's `k1`, `b` and title weight, where they differ from the engine's.
    pub lexical: LexicalParams,
    /// Result level (default `chunk`).
    pub level: Level,
    /// Chunk-to-document aggregation for `level=doc` (default `max`).
    pub agg: Aggregation,
    /// Number of results (default 10).
    pub k: usize,
    /// How each result grows into its context after ranking (default none).
    pub expand: Expansion,
    /// How the top `k` are picked from a deeper ranking for novelty (default none).
    pub diversify: Diversify,
    /// Exact dense scan even where an HNSW graph or quantised codes would be used (default
    /// false).
    pub exact: bool,
    /// How the searched representation's vectors are held for the scan (`None`: as the store
    /// says, see `ckeep add --quantize`).
    pub quantize: Option<ckeep_index::Quantization>,
    /// Candidates of a quantised representation rescored per result (default: 2 for int8, 15
    /// for binary, as `HELP` says).
    pub oversample: Option<usize>,
    /// Whether a quantised representation's candidates are rescored with their float32
    /// vectors (default true).
    pub rescore: bool,
    /// The representations searched; several are fused by RRF at document level. Empty: the
    /// store's default (`plain`, or what `--fields` chose), filled in when the search runs.
    pub repr: Vec<Representation>,
    /// The summaries a summary-based representation uses (default: the store's only one).
    pub summarizer: Option<Summarizer>,
    /// A reranker server (`URL[#MODEL]`, the common `/rerank` API) that reorders the top
    /// `rerank_k` results.
    pub rerank: Option<String>,
    /// How many results the reranker scores (default 50).
    pub rerank_k: usize,
}

/// A strategy's `analyzer=`: the analyzer its index must have. `auto` is how a new store
/// chooses one, and what leaving the key out means in `eval`, so it is refused here with that.
fn analyzer(value: &str) -> Result<ckeep_index::Analyzer, String> {
    if value == "auto" {
        return Err("analyzer=auto is what leaving `analyzer=` out means (the store's analyzer, \
             or in eval the one the documents' script picks); name one of standard, cjk or \
             jieba, or leave the key out"
            .into());
    }
    value.parse()
}

/// Longest strategy spec: its parts are a line of `key=value`s; a longer one is a request
/// meant to cost (and would be echoed whole in its error).
pub const MAX_SPEC_BYTES: usize = 4096;

/// Refuses a spec longer than [`MAX_SPEC_BYTES`], naming it by its start.
fn too_long(spec: &str) -> Result<(), Error> {
    if spec.len() <= MAX_SPEC_BYTES {
        return Ok(());
    }
    let message = format!("a strategy of {} bytes; at most {MAX_SPEC_BYTES}", spec.len());
    Err(Error::Strategy { spec: ckeep_core::opening(spec), message })
}

/// Largest `oversample` accepted: beyond it rescoring reads more vectors than a scan would.
const MAX_OVERSAMPLE: usize = 1_000;

impl Default for Strategy {
    fn default() -> Self {
        Self {
            chunker: None,
            analyzer: None,
            model: None,
            extra_models: Vec::new(),
            mode: Mode::Bm25,
            lexical: LexicalParams::default(),
            level: Level::Chunk,
            agg: Aggregation::Max,
            k: 10,
            expand: Expansion::None,
            diversify: Diversify::None,
            exact: false,
            quantize: None,
            oversample: None,
            rescore: true,
            repr: Vec::new(),
            summarizer: None,
            rerank: None,
            rerank_k: crate::defaults::DEFAULT_RERANK_K,
        }
    }
}

impl Strategy {
    /// The keys a spec is made of (`KEY=VALUE`), for tools that write specs.
    pub const KEYS: &'static [&'static str] = &KEYS;

    /// One line per key, for `--help`.
    pub const HELP: &'static str = "\
chunker=SPEC   chunker the index must be built with (default: the store's)
analyzer=standard|cjk|jieba
               analyzer the index must be built with (default: the store's; eval: auto)
model=NAME     embedding model (a name, directory or URL; default: the store's)
models=A+B[+…] with mode=hybrid: BM25 fused with one dense list per model (up to 4),
               each a model the store holds vectors of (`ckeep add --model A --model B`)
mode=bm25|dense|hybrid[:rrf[=K]|:linear=W[+W…]]
               scoring: BM25, cosine of embeddings, or both fused by reciprocal rank
               (K = 60) or by W·dense + (1−W)·BM25 on min–max normalised scores; with
               several models one W each (BM25 gets 1 − ΣW) or one W they share.
               Plain hybrid: rrf with one model, linear=0.6 (shared) with several
               (default bm25)
k1=X, b=X      BM25's saturation and length normalisation (default 0.9 and 0.4)
title_weight=W BM25F: a title term weighs W text terms, the title a field of its own
               (needs the title indexed: --fields title,text or repr=contextual:title;
               default: title and text are one flat field)
level=chunk|doc  rank chunks, or documents from their chunks (default chunk)
agg=max|mean:K|sum  chunk-to-document aggregation for level=doc, over the best 1,000
               chunks (default max)
k=N            number of results (default 10)
expand=window:W|parent|doc|merge:R
               after ranking, grow each hit: W sentences each side, its parent chunk, the
               whole document, or auto-merge into parents when more than R of their
               children are hits (the parent keeps its best child's score); overlaps
               merged
diversify=mmr[:λ[:N]]
               maximal marginal relevance: pick the k results one by one from the best N
               (default max(4k, 40)) by λ·relevance − (1−λ)·similarity to those already
               picked (λ default 0.5; relevance: score ÷ the best; similarity: cosine of
               the chunks' own embeddings, or of their terms in a store without them;
               document results by their best chunks); runs before rerank and expansion
exact=true     exact dense scan even for collections searched by HNSW (20,000+ vectors) or
               held quantised (see `ckeep add --quantize`)
quantize=int8|binary|none
               scan compact codes of the vectors (a quarter or a thirty-second of the
               RAM), rescoring the best candidates exactly (default: as the store says,
               see `ckeep add --quantize`)
oversample=N   a quantised representation's best N × k candidates are rescored with their
               float32 vectors (default 2 for int8, 15 for binary)
rescore=false  rank by the quantised codes alone (faster, less exact)
repr=R[+R…]    representation(s) searched (default: the store's, plain unless it was added
               with --fields title,text; see `ckeep add --help`); several are fused by
               reciprocal rank at document level (needs level=doc)
summarizer=S   the summaries summary-based representations use (default: the store's
               only one)
rerank=URL[#MODEL]
               reorder the top results by a reranker server's scores (a cross-encoder
               behind the /rerank API of TEI, Jina, Cohere and others; key from
               CKEEP_API_KEY)
rerank_k=N     how many results the reranker scores (default 50)";

    /// Checks `k` and the representations, and returns the strategy.
    pub fn validate(self) -> Result<Self, Error> {
        if self.k == 0 || self.k > MAX_K {
            return Err(Error::Invalid(format!(
                "k = {} is out of range: expected 1 to {MAX_K}",
                self.k
            )));
        }
        if self.rerank_k == 0 || self.rerank_k > MAX_K {
            return Err(Error::Invalid(format!(
                "rerank_k = {} is out of range: expected 1 to {MAX_K}",
                self.rerank_k
            )));
        }
        if self.repr.len() > 1 && self.level != Level::Doc {
            return Err(Error::Invalid(format!(
                "repr={} fuses document rankings; add level=doc",
                self.repr_spec()
            )));
        }
        if !self.extra_models.is_empty() && !matches!(self.mode, Mode::Hybrid(_)) {
            return Err(Error::Invalid(format!(
                "models={} fuses a dense list per model with BM25's; use mode=hybrid (hybrid:linear=W+W with weights summing to 1 leaves BM25 out)",
                self.models_spec()
            )));
        }
        if 1 + self.extra_models.len() > ckeep_index::MAX_DENSE_LISTS {
            return Err(Error::Invalid(format!(
                "models= fuses at most {} models",
                ckeep_index::MAX_DENSE_LISTS
            )));
        }
        if let Mode::Hybrid(Fusion::Linear(weights)) = self.mode {
            weights.of(1 + self.extra_models.len()).map_err(Error::Invalid)?;
        }
        if self.mode == Mode::Dense && !self.lexical.is_default() {
            return Err(Error::Invalid(
                "k1, b and title_weight shape BM25 scores; use mode=bm25 or mode=hybrid".into(),
            ));
        }
        if self.repr.contains(&Representation::Summary) && self.mode != Mode::Dense {
            return Err(Error::Invalid(
                "repr=summary is a vector per document with no text of its own; use mode=dense"
                    .into(),
            ));
        }
        Ok(self)
    }

    /// The models in their textual form (`A+B`; empty when the strategy names none).
    pub fn models_spec(&self) -> String {
        self.model.iter().chain(&self.extra_models).cloned().collect::<Vec<_>>().join("+")
    }

    /// The representations in their textual form (`plain+summary`).
    pub fn repr_spec(&self) -> String {
        self.repr.iter().map(ToString::to_string).collect::<Vec<_>>().join("+")
    }
}

impl Mode {
    /// Whether the mode embeds the query (dense or hybrid).
    pub fn needs_model(self) -> bool {
        !matches!(self, Mode::Bm25)
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Mode::Bm25 => f.write_str("bm25"),
            Mode::Dense => f.write_str("dense"),
            Mode::Hybrid(Fusion::Auto) => f.write_str("hybrid"),
            Mode::Hybrid(fusion) => write!(f, "hybrid:{fusion}"),
        }
    }
}

impl FromStr for Mode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "bm25" => Ok(Mode::Bm25),
            "dense" => Ok(Mode::Dense),
            "hybrid" => Ok(Mode::Hybrid(Fusion::default())),
            _ => match s.strip_prefix("hybrid:") {
                Some(f) => {
                    f.parse().map(Mode::Hybrid).map_err(|e: ckeep_index::Error| e.to_string())
                }
                None => Err(format!(
                    "unknown mode `{s}`; expected bm25, dense or hybrid[:rrf|:linear=W]"
                )),
            },
        }
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Level::Chunk => "chunk",
            Level::Doc => "doc",
        })
    }
}

impl FromStr for Level {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "chunk" => Ok(Level::Chunk),
            "doc" | "document" => Ok(Level::Doc),
            _ => Err(format!("unknown level `{s}`; expected chunk or doc")),
        }
    }
}

impl fmt::Display for Strategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(c) = &self.chunker {
            write!(f, "chunker={c},")?;
        }
        if let Some(a) = &self.analyzer {
            write!(f, "analyzer={a},")?;
        }
        if !self.extra_models.is_empty() {
            write!(f, "models={},", self.models_spec())?;
        } else if let Some(m) = &self.model {
            write!(f, "model={m},")?;
        }
        write!(f, "mode={},", self.mode)?;
        for part in self.lexical.parts() {
            write!(f, "{part},")?;
        }
        write!(f, "level={}", self.level)?;
        if self.level == Level::Doc {
            write!(f, ",agg={}", self.agg)?;
        }
        if self.expand != Expansion::None {
            write!(f, ",expand={}", self.expand)?;
        }
        if self.diversify != Diversify::None {
            write!(f, ",diversify={}", self.diversify)?;
        }
        if self.exact {
            f.write_str(",exact=true")?;
        }
        if let Some(q) = self.quantize {
            write!(f, ",quantize={q}")?;
        }
        if let Some(n) = self.oversample {
            write!(f, ",oversample={n}")?;
        }
        if !self.rescore {
            f.write_str(",rescore=false")?;
        }
        if !self.repr.is_empty() {
            write!(f, ",repr={}", self.repr_spec())?;
        }
        if let Some(s) = &self.summarizer {
            write!(f, ",summarizer={s}")?;
        }
        if let Some(r) = &self.rerank {
            write!(f, ",rerank={r}")?;
            if self.rerank_k != crate::defaults::DEFAULT_RERANK_K {
                write!(f, ",rerank_k={}", self.rerank_k)?;
            }
        }
        write!(f, ",k={}", self.k)
    }
}

impl FromStr for Strategy {
    type Err = Error;

    fn from_str(spec: &str) -> Result<Self, Error> {
        too_long(spec)?;
        let err = |message: String| Error::Strategy { spec: spec.to_string(), message };
        let mut parts: Vec<(String, String)> = Vec::new();
        for raw in spec.split(',') {
            match raw.split_once('=') {
                Some((k, v)) if KEYS.contains(&k.trim()) => {
                    parts.push((k.trim().to_string(), v.trim().to_string()));
                }
                _ => match parts.last_mut() {
                    Some((_, v)) if !raw.trim().is_empty() => {
                        v.push(',');
                        v.push_str(raw.trim());
                    }
                    _ => {
                        return Err(err(format!(
                            "expected key=value with a key among {}, got `{raw}`",
                            KEYS.join(", ")
                        )));
                    }
                },
            }
        }
        let mut s = Strategy::default();
        let mut seen = Vec::new();
        for (key, value) in parts {
            if seen.contains(&key) {
                return Err(err(format!("`{key}` is given twice")));
            }
            // `model` and `models` name the same thing; the key itself was checked above.
            if key.starts_with("model") && seen.iter().any(|k| k.starts_with("model")) {
                return Err(err("give model= or models=, not both".into()));
            }
            match key.as_str() {
                "chunker" => {
                    s.chunker =
                        Some(value.parse().map_err(|e: ckeep_text::Error| err(e.to_string()))?);
                }
                "analyzer" => s.analyzer = Some(analyzer(&value).map_err(err)?),
                "mode" => s.mode = value.parse().map_err(err)?,
                "model" if value.is_empty() => return Err(err("model= needs a name".into())),
                "model" => s.model = Some(value),
                "models" => {
                    let names = parse_models(&value).map_err(err)?;
                    s.model = names.first().cloned();
                    s.extra_models = names[1..].to_vec();
                }
                "expand" => s.expand = value.parse().map_err(err)?,
                "diversify" => s.diversify = value.parse().map_err(err)?,
                "exact" | "rescore" => {
                    let flag = match value.as_str() {
                        "true" => true,
                        "false" => false,
                        _ => {
                            return Err(err(format!("{key} must be true or false, got `{value}`")));
                        }
                    };
                    if key == "exact" { s.exact = flag } else { s.rescore = flag }
                }
                "quantize" => {
                    s.quantize =
                        Some(value.parse().map_err(|e: ckeep_index::Error| err(e.to_string()))?);
                }
                "oversample" => {
                    let n = value.parse().ok().filter(|n| (1..=MAX_OVERSAMPLE).contains(n));
                    s.oversample = Some(n.ok_or_else(|| {
                        err(format!(
                            "oversample must be a whole number from 1 to {MAX_OVERSAMPLE}, got `{value}`"
                        ))
                    })?);
                }
                "level" => s.level = value.parse().map_err(err)?,
                key if LexicalParams::KEYS.contains(&key) => {
                    s.lexical.set(key, &value).map_err(err)?;
                }
                "repr" => s.repr = parse_list(&value).map_err(err)?,
                "summarizer" => s.summarizer = Some(value.parse().map_err(err)?),
                "agg" => {
                    s.agg = value.parse().map_err(|e: ckeep_index::Error| err(e.to_string()))?;
                }
                "k" => {
                    s.k = value
                        .parse()
                        .map_err(|_| err(format!("k must be a whole number, got `{value}`")))?;
                }
                "rerank" if value.is_empty() => {
                    return Err(err("rerank= needs a server URL".into()));
                }
                "rerank" => s.rerank = Some(value),
                "rerank_k" => {
                    s.rerank_k = value.parse().map_err(|_| {
                        err(format!("rerank_k must be a whole number, got `{value}`"))
                    })?;
                }
                other => return Err(err(format!("`{other}` is not available in this build yet"))),
            }
            seen.push(key);
        }
        s.validate().map_err(|e| err(e.to_string()))
    }
}

/// The models of `models=A+B`: named, each once.
fn parse_models(value: &str) -> Result<Vec<String>, String> {
    let names: Vec<String> = value.split('+').map(|m| m.trim().to_string()).collect();
    if names.iter().any(String::is_empty) {
        return Err(format!("models=A+B needs a name on each side of `+`, got `{value}`"));
    }
    if (1..names.len()).any(|i| names[..i].contains(&names[i])) {
        return Err(format!("models={value} names a model twice"));
    }
    Ok(names)
}

/// The strategy in force when a caller names none, and where it came from.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct DefaultStrategy {
    /// The strategy, as a spec.
    pub strategy: String,
    /// `built-in`, or what chose it (as `eval recommend --apply` recorded).
    pub from: String,
}

impl DefaultStrategy {
    /// The default a manifest puts in force.
    pub fn of(manifest: &Manifest) -> Self {
        match &manifest.default_strategy {
            Some(spec) => DefaultStrategy {
                strategy: spec.clone(),
                from: manifest.default_strategy_from.clone().unwrap_or_else(|| "unknown".into()),
            },
            None => DefaultStrategy {
                strategy: Strategy::default().to_string(),
                from: "built-in".into(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_help_states_the_oversampling_defaults_the_index_applies() {
        use ckeep_index::Quantization::{Binary, Int8};
        let said = format!(
            "(default {} for int8, {} for binary)",
            Int8.default_oversample(),
            Binary.default_oversample()
        );
        assert!(Strategy::HELP.contains(&said), "the help should say {said}");
    }

    #[test]
    fn parses_values_with_commas() {
        let s: Strategy =
            "chunker=hierarchy:512,128,mode=bm25,level=doc,agg=mean:3,k=5".parse().unwrap();
        assert_eq!(s.chunker.as_ref().unwrap().to_string(), "hierarchy:512,128");
        assert_eq!((s.level, s.agg, s.k), (Level::Doc, Aggregation::Mean(3), 5));
        let w: Strategy = "chunker=words:100,overlap=20,k=3".parse().unwrap();
        assert_eq!(w.chunker.unwrap().to_string(), "words:100,overlap=20");
    }

    #[test]
    fn display_round_trips() {
        for spec in [
            "mode=bm25,level=chunk,k=10",
            "chunker=paragraphs:1,mode=bm25,level=doc,agg=sum,k=100",
            "mode=dense,level=doc,agg=max,repr=plain+summary,summarizer=lead:128,k=10",
            "mode=hybrid:rrf,level=chunk,repr=contextual:title,headings,k=10",
            "mode=bm25,k1=1.2,b=0.75,title_weight=2.5,level=doc,agg=max,k=10",
            "models=a+b,mode=hybrid:linear=0.3+0.2,level=doc,agg=max,k=10",
            "models=a+b+c,mode=hybrid:rrf,level=chunk,k=10",
        ] {
            let s: Strategy = spec.parse().unwrap();
            assert_eq!(s.to_string(), spec);
        }
        assert_eq!(
            "".parse::<Strategy>().map(|s| s.to_string()).ok(),
            None,
            "empty spec is an error"
        );
        assert_eq!("k=3".parse::<Strategy>().unwrap(), Strategy { k: 3, ..Strategy::default() });
    }

    #[test]
    fn errors_say_what_is_wrong() {
        for (spec, needle) in [
            ("mode=hybrid:linear=3", "linear=W"),
            ("mode=sparse", "expected bm25, dense or hybrid"),
            ("expand=window:x", "unknown expansion"),
            ("repr=gist", "unknown representation"),
            ("repr=plain+late", "add level=doc"),
            ("repr=summary,mode=bm25", "mode=dense"),
            ("summarizer=lead", "unknown summarizer"),
            ("k=0", "out of range"),
            ("k=ten", "whole number"),
            ("level=para", "expected chunk or doc"),
            ("agg=median", "max, mean:K"),
            ("chunker=nope", "unknown chunker"),
            ("colour=red", "expected key=value"),
            ("k=1,k=2", "given twice"),
            ("b=2", "from 0 to 1"),
            ("k1=-1", "k1: expected a number"),
            ("mode=dense,title_weight=2", "use mode=bm25 or mode=hybrid"),
            ("models=a+b,mode=dense", "use mode=hybrid"),
            ("models=a+b,mode=hybrid:linear=0.2+0.2+0.2", "3 dense weights for 2 models"),
            ("mode=hybrid:linear=0.2+0.2", "2 dense weights for 1 model"),
            ("models=a+,mode=hybrid", "a name on each side"),
            ("models=a+a,mode=hybrid", "twice"),
            ("models=a+b,model=a,mode=hybrid", "not both"),
            ("models=a+b+c+d+e,mode=hybrid", "at most 4"),
        ] {
            let e = spec.parse::<Strategy>().unwrap_err().to_string();
            assert!(e.contains(needle), "{spec}: {e}");
        }
    }
}
