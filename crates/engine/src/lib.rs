//! The library facade: what the CLI, the server and users' programs call.
//!
//! # Brief overview
//! - [`Engine`] wraps a store. [`Engine::ingest`] opens an [`Ingest`] that chunks, indexes and
//!   writes documents in batches (one transaction each); unchanged documents are skipped by
//!   content hash, changed ones replaced.
//! - [`Engine::search`] runs a [`Strategy`] (`mode=bm25,level=doc,agg=max,k=10`) and returns a
//!   [`SearchResponse`] whose JSON form is the one in DESIGN.md.
//!
//! ```
//! use ckeep_core::Document;
//! use ckeep_engine::{Engine, SearchRequest};
//! use ckeep_store::SqliteStore;
//!
//! let mut engine = Engine::new(SqliteStore::in_memory().unwrap());
//! let mut ingest = engine.ingest(&"sentences".parse().unwrap()).unwrap();
//! ingest.add(Document::new("d", "", "Cats purr. Dogs bark loudly.")).unwrap();
//! ingest.finish().unwrap();
//! let res = engine.search(&SearchRequest::new("barking dog")).unwrap();
//! assert_eq!(res.results[0].text, "Dogs bark loudly.");
//! ```

mod adopt;
mod analysis;
mod dedup;
mod default_strategy;
mod derive;
mod diversify;
mod expand;
mod fault;
mod filtered;
mod ingest;
mod lexical;
mod manifest;
mod models;
mod more_models;
mod overrides;
mod pair_model;
mod pool;
mod rechunk;
mod report;
mod represent;
mod request;
mod rerank;
mod search;
mod similar;
mod strategy;
mod summarize;
mod sync;
mod vectors;
#[cfg(feature = "watch")]
mod watch;

use std::sync::Arc;

use ckeep_embed::Embedder;
use ckeep_index::Bm25;

pub use analysis::AnalyzerChoice;
pub use ckeep_index::Analyzer;
pub use ckeep_llm::default_cache_path as default_generation_cache;
pub use ckeep_store::MetadataFilter;
pub use dedup::{
    ChunkMatch, DedupOptions, DedupReport, DuplicateCluster, DuplicatePair, MatchedChunk,
};
pub use default_strategy::DefaultStrategy;
pub use derive::{DeriveProgress, DeriveReport, StageReport};
pub use diversify::{Diversify, Redundancy, SimilarityOf};
pub use expand::Expansion;
pub use fault::{Fault, UsageError};
pub use filtered::{FilterPlan, FilteredBy};
pub use ingest::{Ingest, IngestReport};
pub use lexical::{LexicalParams, Thousandths};
pub use models::{ModelSet, load_model, stored_model};
pub use overrides::{FilterSyntax, StrategyChoices, StrategyFields, StrategyOverrides};
pub use pair_model::{
    FEATURES as PAIR_FEATURES, FURTHER_MODEL_FEATURES as PAIR_FURTHER_MODEL_FEATURES,
    Features as PairFeatures, PairModel, best_threshold, feature_names as pair_feature_names,
    features as pair_features,
};
pub use pool::{Lease, ReaderPool};
pub use report::{AddReport, Skipped, StoreSummary};
pub use represent::{ContextParts, Fields, Representation, parse_list as parse_representations};
pub use rerank::DEFAULT_RERANK_K;
pub use search::{
    ListExplanation, MAX_QUERY_BYTES, SearchRequest, SearchResponse, SearchResult, SearchTiming,
    Searcher,
};
pub use similar::{
    ChunkPair, DEFAULT_THRESHOLD, DEFAULT_TOP_K, EmbeddedText, MAX_FURTHER_PAIR_MODELS,
    ModelPairScore, PairScore, PairScorer, TextVectors,
};
pub use strategy::{Level, MAX_K, Mode, Strategy};
pub use summarize::{LoadedSummarizer, Summarizer};
pub use sync::{SyncPlan, SyncReport};
pub use vectors::{ANN_MIN_VECTORS, GraphCheck, VectorIndexBuild};
#[cfg(feature = "watch")]
pub use watch::{Changes, ChangesReport, Debounce, FolderWatch};

/// The lexical field that holds chunks' own text.
pub const PLAIN_FIELD: &str = "plain";

/// The representation that holds chunks' own embeddings.
pub const PLAIN_REPR: &str = "plain";

/// Engine failures. Variants say whether the user or the system is at fault.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The store failed (see the store error for whose fault).
    #[error(transparent)]
    Store(#[from] ckeep_store::Error),
    /// Input could not be loaded (user error).
    #[error(transparent)]
    Load(#[from] ckeep_text::Error),
    /// The store was built with another chunker (user error).
    #[error(
        "the store was chunked with `{stored}`, not `{requested}`; use another --store, or omit --chunker"
    )]
    ChunkerMismatch {
        /// In the manifest.
        stored: String,
        /// Asked for.
        requested: String,
    },
    /// The store was indexed with another analyzer (user error).
    #[error(
        "the store's lexical index uses analyzer `{stored}`, not `{requested}`; use another --store, or omit --analyzer"
    )]
    AnalyzerMismatch {
        /// In the manifest.
        stored: String,
        /// Asked for.
        requested: String,
    },
    /// The store was indexed with an analyzer this build does not know (a store from another
    /// ckeep version; user error).
    #[error(
        "the store's lexical index uses analyzer `{stored}`, which this ckeep does not know; re-create the store"
    )]
    AnalyzerUnknown {
        /// In the manifest.
        stored: String,
    },
    /// A strategy spec is invalid or asks for something unavailable (user error).
    #[error("invalid strategy `{spec}`: {message}")]
    Strategy {
        /// The spec.
        spec: String,
        /// What is wrong.
        message: String,
    },
    /// A request parameter is invalid (user error).
    #[error("{0}")]
    Invalid(String),
    /// The store's vectors come from another model (user error).
    #[error(
        "the store's vectors were made with model `{stored}`, not `{requested}`; use --model {stored}, or another --store"
    )]
    ModelMismatch {
        /// In the manifest.
        stored: String,
        /// Asked for.
        requested: String,
    },
    /// The operation needs an embedding model and none was given (user error).
    #[error("{0}")]
    ModelRequired(String),
    /// Embedding failed (see the embedding error for whose fault).
    #[error(transparent)]
    Embed(#[from] ckeep_embed::Error),
    /// A language model (summaries) failed (see its error for whose fault).
    #[error(transparent)]
    Llm(#[from] ckeep_llm::Error),
    /// A server the search called (a reranker) failed or answered what it should not.
    #[error("{0}")]
    Server(String),
    /// Files could not be watched for changes (a path vanished, or the system's limit on
    /// watches was reached).
    #[error("cannot watch {}: {message}", path.display())]
    Watch {
        /// The path.
        path: std::path::PathBuf,
        /// Why.
        message: String,
    },
}

impl Error {
    /// Whether the caller is at fault (what was asked, or the input given) rather than the
    /// store, a model server or our code. The one rule behind the CLI's exit code 2 and the
    /// server's 4xx answers.
    pub fn is_user_error(&self) -> bool {
        match self {
            Self::Store(e) => e.is_user_error(),
            Self::Load(e) => e.is_user_error(),
            Self::Embed(e) => e.is_user_error(),
            Self::Llm(e) => e.is_user_error(),
            Self::ChunkerMismatch { .. }
            | Self::AnalyzerMismatch { .. }
            | Self::AnalyzerUnknown { .. }
            | Self::Strategy { .. }
            | Self::Invalid(_)
            | Self::ModelMismatch { .. }
            | Self::ModelRequired(_) => true,
            Self::Watch { .. } | Self::Server(_) => false,
        }
    }

    /// Whether the request conflicts with how the store was built (chunker, analyzer, model):
    /// a user error of its own kind (HTTP 409).
    pub fn is_conflict(&self) -> bool {
        matches!(
            self,
            Self::ChunkerMismatch { .. }
                | Self::ModelMismatch { .. }
                | Self::AnalyzerMismatch { .. }
                | Self::AnalyzerUnknown { .. }
        )
    }
}

/// Engine results.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The engine over one store.
#[derive(Debug)]
pub struct Engine<S> {
    store: S,
    /// The analyzer asked for when documents are added to a store that has none yet.
    analyzer: AnalyzerChoice,
    bm25: Bm25,
    embedder: Option<Arc<dyn Embedder>>,
    /// The store's further models (`models=A+B`), loaded when first needed.
    more_models: more_models::MoreModels,
    /// Vectors and graphs loaded from the store, shared with [`Engine::reader`]s, and this
    /// engine's refresh policy.
    vectors: vectors::cache::VectorCache,
    /// Whether the HNSW graph is kept current by the caller (a server's background task)
    /// rather than built at ingest or on a query that finds it stale.
    background_index: bool,
    /// Where language-model summaries are cached (`None`: not cached).
    generation_cache: Option<std::path::PathBuf>,
    /// Filters answered lately, shared with readers.
    filters: filtered::FilterCache,
}

impl<S> Engine<S> {
    /// An engine over `store` with default BM25 parameters and no embedding model.
    pub fn new(store: S) -> Self {
        Self {
            store,
            analyzer: AnalyzerChoice::Auto,
            bm25: Bm25::default(),
            embedder: None,
            more_models: more_models::MoreModels::default(),
            vectors: vectors::cache::VectorCache::default(),
            background_index: false,
            generation_cache: None,
            filters: filtered::FilterCache::default(),
        }
    }

    /// Another engine over `store` (another connection to the same data) that shares this
    /// one's model, settings and loaded vectors: a pool of readers beside one writer holds
    /// each representation's vectors once.
    pub fn reader<T>(&self, store: T) -> Engine<T> {
        Engine {
            store,
            analyzer: self.analyzer,
            bm25: self.bm25,
            embedder: self.embedder.clone(),
            more_models: self.more_models.clone(),
            vectors: self.vectors.shared(),
            background_index: self.background_index,
            generation_cache: self.generation_cache.clone(),
            filters: self.filters.clone(),
        }
    }

    /// The same engine with near-real-time dense search: a write is found by dense search
    /// within `interval` (vectors are brought up to date at most twice per interval, reading
    /// only the changed ones), and meanwhile the loaded ones are searched and their hits
    /// checked against the store (chunks removed since are dropped; chunks added since are
    /// found by BM25 at once). For servers under a steady stream of writes, where catching up
    /// after every write would take the queries' time.
    #[must_use]
    pub fn with_refresh_interval(mut self, interval: std::time::Duration) -> Self {
        self.vectors.refresh_mut().interval = Some(interval);
        self
    }

    /// The same engine with the HNSW graph left to the caller's
    /// [`Engine::refresh_vector_index`]: ingests do not rebuild it, and a query that finds it
    /// stale scans exactly instead of building it. For servers that ingest while they answer.
    #[must_use]
    pub fn with_background_index(mut self) -> Self {
        self.background_index = true;
        self
    }

    /// The same engine with language-model summaries cached in `path` (see
    /// [`ckeep_llm::default_cache_path`]), so re-indexing never summarises a document twice.
    #[must_use]
    pub fn with_generation_cache(mut self, path: std::path::PathBuf) -> Self {
        self.generation_cache = Some(path);
        self
    }

    /// The same engine with an embedding model (wrap it in a
    /// [`ckeep_embed::CachedEmbedder`] to skip texts embedded before).
    #[must_use]
    pub fn with_embedder(mut self, embedder: Arc<dyn Embedder>) -> Self {
        self.embedder = Some(embedder);
        self
    }

    /// The same engine with `embedder` used for a further model of the store with its
    /// fingerprint (see [`Engine::add_model`]) rather than loading it from where the manifest
    /// says it came from.
    #[must_use]
    pub fn with_further_model(self, embedder: Arc<dyn Embedder>) -> Self {
        self.more_models.insert(embedder);
        self
    }

    /// The same engine loading the store's further models (for `models=A+B`) behind the
    /// embedding cache when `cache` (default: uncached), as [`load_model`] does.
    #[must_use]
    pub fn with_model_cache(mut self, cache: bool) -> Self {
        self.more_models.cache = cache;
        self
    }

    /// Sets the embedding model in place (a pooled reader's, see [`ReaderPool`]).
    pub fn set_embedder(&mut self, embedder: Arc<dyn Embedder>) {
        self.embedder = Some(embedder);
    }

    /// The embedding model, if any.
    pub fn embedder(&self) -> Option<&Arc<dyn Embedder>> {
        self.embedder.as_ref()
    }

    /// The same engine with the analyzer a new store gets (`auto` by default: chosen from the
    /// script of the first documents); a store that has one keeps it, and asking for another is
    /// an error.
    #[must_use]
    pub fn with_analyzer(mut self, analyzer: AnalyzerChoice) -> Self {
        self.analyzer = analyzer;
        self
    }

    /// The same engine with other BM25 parameters.
    #[must_use]
    pub fn with_bm25(mut self, bm25: Bm25) -> Self {
        self.bm25 = bm25;
        self
    }

    /// The store.
    pub fn store(&self) -> &S {
        &self.store
    }

    /// The store, for writing directly (loaded vectors follow its writes by their generation).
    pub fn store_mut(&mut self) -> &mut S {
        &mut self.store
    }
}
