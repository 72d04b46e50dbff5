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

mod dedup;
mod dense;
mod derive;
mod expand;
mod ingest;
mod represent;
mod search;
mod similar;
mod strategy;
mod summarize;

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use ckeep_embed::Embedder;
use ckeep_index::{Analyzer, Bm25};
use ckeep_store::VectorMatrix;

pub use ckeep_llm::default_cache_path as default_generation_cache;
pub use dedup::{ChunkMatch, DedupOptions, DuplicateCluster, DuplicatePair, MatchedChunk};
pub use dense::ANN_MIN_VECTORS;
pub use derive::{DeriveProgress, DeriveReport, StageReport};
pub use expand::Expansion;
pub use ingest::{Ingest, IngestReport};
pub use represent::{ContextParts, Representation, parse_list as parse_representations};
pub use search::{SearchRequest, SearchResponse, SearchResult};
pub use similar::{
    ChunkPair, DEFAULT_THRESHOLD, DEFAULT_TOP_K, EmbeddedText, PairScore, PairScorer,
};
pub use strategy::{Level, MAX_K, Mode, Strategy};
pub use summarize::{LoadedSummarizer, Summarizer};

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
    /// The store was indexed with another analyzer (a store from another ckeep version).
    #[error(
        "the store's lexical index uses analyzer `{stored}`, this ckeep uses `{ours}`; re-create the store"
    )]
    AnalyzerMismatch {
        /// In the manifest.
        stored: String,
        /// This build's.
        ours: String,
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
}

/// Engine results.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The engine over one store.
#[derive(Debug)]
pub struct Engine<S> {
    store: S,
    analyzer: Analyzer,
    bm25: Bm25,
    embedder: Option<Arc<dyn Embedder>>,
    /// Each representation's vectors, normalised, loaded (or derived) on its first dense query;
    /// dropped whenever the store may change.
    dense: RwLock<HashMap<String, Arc<VectorMatrix>>>,
    /// The HNSW graphs over those vectors, for large collections.
    ann: RwLock<HashMap<String, Arc<ckeep_index::Hnsw>>>,
    /// Where language-model summaries are cached (`None`: not cached).
    generation_cache: Option<std::path::PathBuf>,
}

impl<S> Engine<S> {
    /// An engine over `store` with default BM25 parameters and no embedding model.
    pub fn new(store: S) -> Self {
        Self {
            store,
            analyzer: Analyzer::default(),
            bm25: Bm25::default(),
            embedder: None,
            dense: RwLock::new(HashMap::new()),
            ann: RwLock::new(HashMap::new()),
            generation_cache: None,
        }
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

    /// The embedding model, if any.
    pub fn embedder(&self) -> Option<&Arc<dyn Embedder>> {
        self.embedder.as_ref()
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

    /// The store, for writing directly.
    pub fn store_mut(&mut self) -> &mut S {
        self.forget_vectors();
        &mut self.store
    }

    fn forget_vectors(&mut self) {
        self.dense.get_mut().unwrap_or_else(std::sync::PoisonError::into_inner).clear();
        self.ann.get_mut().unwrap_or_else(std::sync::PoisonError::into_inner).clear();
    }
}
