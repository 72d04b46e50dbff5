//! What a search is asked and what it answers: the request, and the results in the JSON shape of
//! DESIGN.md that every front end renders.

use ckeep_core::{ChunkId, Location, Span};
use ckeep_index::TermExplanation;
use ckeep_store::{Manifest, MetadataFilter};
use serde::Serialize;

use crate::defaults::{MAX_K, MAX_QUERY_BYTES};
use crate::error::{Error, Result};
use crate::more_models::{dense_models, is_further_model, is_own_model};
use crate::overrides::{StrategyFields, StrategyOverrides};
use crate::strategy::Strategy;
use crate::summarize::Summarizer;

/// A search as every front end asks it: the query, the strategy as given (a whole spec, else
/// the store's default, with parts laid over it: flags, JSON fields, keyword arguments), and
/// the options. The engine resolves it against the store in one place
/// ([`crate::Searcher::resolve`]), so no front end decides a default, loads a model or checks
/// a limit itself.
#[derive(Debug, Clone, Default)]
pub struct SearchRequest {
    /// The query text.
    pub query: String,
    /// A whole strategy; `None`: the store's default ([`crate::Searcher::default_strategy`]).
    pub strategy: Option<Strategy>,
    /// Parts laid over the strategy, each replacing its own when given.
    pub parts: StrategyOverrides,
    /// Whether to include score explanations.
    pub explain: bool,
    /// Only documents whose metadata passes (dense search then scans exactly, so a filter that
    /// keeps few documents still finds their best chunks).
    pub filter: Option<MetadataFilter>,
}

impl SearchRequest {
    /// A request with the store's default strategy.
    pub fn new(query: impl Into<String>) -> Self {
        Self { query: query.into(), ..Self::default() }
    }

    /// A request whose strategy and parts are given as strings (HTTP, MCP, Python): each
    /// parsed here, a bad value a user error naming its field.
    pub fn from_fields(query: impl Into<String>, fields: &StrategyFields) -> Result<Self> {
        Ok(Self { strategy: fields.spec()?, parts: fields.overrides()?, ..Self::new(query) })
    }

    /// The same request with `strategy` in place of the store's default.
    #[must_use]
    pub fn with_strategy(mut self, strategy: Strategy) -> Self {
        self.strategy = Some(strategy);
        self
    }

    /// The same request with `parts` laid over its strategy.
    #[must_use]
    pub fn with_parts(mut self, parts: StrategyOverrides) -> Self {
        self.parts = parts;
        self
    }

    /// The same request with score explanations, or without.
    #[must_use]
    pub fn with_explain(mut self, explain: bool) -> Self {
        self.explain = explain;
        self
    }

    /// The same request keeping only documents `filter` lets through (`None`: all).
    #[must_use]
    pub fn with_filter(mut self, filter: Option<MetadataFilter>) -> Self {
        self.filter = filter;
        self
    }
}

/// What an engine accepts of a search: the most results and the longest query, and whether
/// requests are remote. A library or the CLI takes the engine's own bounds
/// ([`SearchLimits::default`]); a server sets its own, and marks its requests remote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SearchLimits {
    /// Most results (`k`, `rerank_k`).
    pub max_k: usize,
    /// Longest query, in bytes.
    pub max_query_bytes: usize,
    /// Whether requests come from remote clients, which must not make the engine call a
    /// server (`rerank=URL`) or load a model they name ([`SearchLimits::admit`]).
    pub remote: bool,
}

impl Default for SearchLimits {
    fn default() -> Self {
        Self { max_k: MAX_K, max_query_bytes: MAX_QUERY_BYTES, remote: false }
    }
}

impl SearchLimits {
    /// Checks a query and its resolved strategy against these limits.
    pub(crate) fn check(&self, query: &str, strategy: &Strategy) -> Result<()> {
        if query.trim().is_empty() {
            return Err(Error::Invalid("the query is empty".into()));
        }
        if query.len() > self.max_query_bytes {
            return Err(Error::Invalid(format!(
                "the query is {} bytes; the limit is {}",
                query.len(),
                self.max_query_bytes
            )));
        }
        if strategy.k > self.max_k {
            return Err(Error::Invalid(format!(
                "k = {} is out of range: expected 1 to {}",
                strategy.k, self.max_k
            )));
        }
        Ok(())
    }

    /// Refuses, for remote requests, every part of `strategy` that would make the engine call
    /// a server or load a model or file the client names: a reranker (`rerank=URL`), a model
    /// (`model=`, `models=`) other than the store's own or further ones, and a summarizer
    /// other than one whose summaries the store holds (`summarizer=http:URL` or `llm:FILE`
    /// would generate). The one rule of search, ask and evaluation alike: a client reaches
    /// only what the operator configured. A local caller (`remote` false) is not limited.
    pub fn admit(&self, strategy: &Strategy, manifest: &Manifest) -> Result<()> {
        if !self.remote {
            return Ok(());
        }
        let refuse = |part: &str| {
            Err(Error::Invalid(format!(
                "`{part}` is not accepted from a client: the server calls no server and loads no \
                 model or file a request names, only what it was started with"
            )))
        };
        if let Some(url) = &strategy.rerank {
            return refuse(&format!("rerank={url}"));
        }
        // A model the store lacks among several is refused as for a local caller, with the
        // command that adds its vectors.
        if !strategy.extra_models.is_empty() {
            dense_models(strategy, manifest)?;
        }
        let stores = |m: &str| is_own_model(manifest, m) || is_further_model(manifest, m);
        if let Some(m) = strategy.model.as_deref().filter(|m| !stores(m)) {
            return refuse(&format!("model={m}"));
        }
        if let Some(m) = strategy.extra_models.iter().find(|m| !stores(m)) {
            return refuse(&format!("models=…+{m}"));
        }
        if let Some(sm) = &strategy.summarizer
            && matches!(sm, Summarizer::Llm(_) | Summarizer::Http(_))
            && !manifest.summarizers.contains(&sm.to_string())
        {
            return refuse(&format!("summarizer={sm}"));
        }
        Ok(())
    }
}

/// Results in the JSON shape of DESIGN.md.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SearchResponse {
    /// The query.
    pub query: String,
    /// The strategy, in its textual form.
    pub strategy: String,
    /// Results, best first.
    pub results: Vec<SearchResult>,
    /// With `explain`: the store's default strategy, which the caller's parts were laid over,
    /// and where it came from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_strategy: Option<crate::strategy::DefaultStrategy>,
    /// With `explain` and a filter: what the filter let through and how the dense search used
    /// it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub filter: Option<crate::filtered::FilterPlan>,
    /// When there are no results and the query's words are not why: an empty store, or a
    /// filter no document passes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub no_results: Option<crate::no_results::NoResults>,
    /// Where the time went; not part of the JSON (a server sends it as `Server-Timing`).
    #[serde(skip)]
    pub timing: SearchTiming,
}

/// Time spent in one search, so that the query's embedding (a model's cost) can be told apart
/// from the search itself (the index's cost) by anyone measuring either.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SearchTiming {
    /// Embedding the query (zero for BM25 search).
    pub embed: std::time::Duration,
    /// The whole search, embedding included.
    pub total: std::time::Duration,
}

/// One result: a chunk, or a document with the chunks that ranked it.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SearchResult {
    /// 1-based rank.
    pub rank: usize,
    /// The document's id.
    pub doc_id: String,
    /// The score (BM25 for chunks; aggregated for documents).
    pub score: f32,
    /// The text of the spans, in document order.
    pub text: String,
    /// Byte spans into the stored document, in document order.
    pub spans: Vec<Span>,
    /// Where each span came from in the source file, for documents extracted from a PDF (the
    /// pages) or an HTML, EPUB or DOCX file (the element); absent for other documents.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub locations: Vec<Location>,
    /// Each span's lines in the stored document (editors jump to `path:line`).
    pub lines: Vec<crate::lines::LineSpan>,
    /// Heading path of the (first) chunk.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub headings: String,
    /// The chunks behind the result, best first.
    pub chunks: Vec<ResultChunk>,
    /// Why the result ranks where it does (with `explain`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub explain: Option<Explanation>,
}

/// A chunk behind a result.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ResultChunk {
    /// Its id.
    pub chunk_id: ChunkId,
    /// Its span.
    pub span: Span,
    /// Its score.
    pub score: f32,
}

/// Score components of one result.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Explanation {
    /// Scoring mode.
    pub mode: String,
    /// The analysed query terms (BM25).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub query_terms: Vec<String>,
    /// The embedding model (dense).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// How the document score was formed from chunk scores (document level only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aggregation: Option<String>,
    /// How the hits were grown into the returned context, if they were.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expansion: Option<String>,
    /// The representation(s) scored, when not `plain` (the chunk scores are the first one's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub representation: Option<String>,
    /// Where maximal marginal relevance put the result, and the redundancy it was charged
    /// (`diversify=mmr`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diversity: Option<crate::diversify::Redundancy>,
    /// Per chunk, each matching term's part of its BM25 score.
    pub chunks: Vec<ChunkExplanation>,
}

/// One fused list's part in a chunk's score.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ListExplanation {
    /// `bm25`, or the embedding model of a dense list.
    pub list: String,
    /// The chunk's score in the list (BM25, or cosine).
    pub score: f32,
    /// Its 1-based rank there.
    pub rank: usize,
    /// What the list added to the fused score.
    pub contribution: f32,
}

/// Score components of one chunk.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ChunkExplanation {
    /// The chunk.
    pub chunk_id: ChunkId,
    /// Its span.
    pub span: Span,
    /// Its BM25 score (BM25 and hybrid modes; absent when it matched no query term).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bm25: Option<f32>,
    /// Its cosine similarity to the query (dense and hybrid modes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dense: Option<f32>,
    /// Its rank in the BM25 list (hybrid).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bm25_rank: Option<usize>,
    /// Its rank in the dense list (hybrid).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dense_rank: Option<usize>,
    /// Its fused score (hybrid).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fused: Option<f32>,
    /// Each fused list it is in (hybrid): `bm25` or the model, its score and rank there, and
    /// what that list added to the fused score.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub lists: Vec<ListExplanation>,
    /// Per matching term (BM25 mode).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub terms: Vec<TermExplanation>,
}
