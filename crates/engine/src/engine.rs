//! The engine over one store: the store, the models it searches and ingests with, and what it
//! has loaded, shared with the readers made from it. Work is done by the types it hands out:
//! [`Searcher`] (a read snapshot), [`Writer`] (every write) and [`VectorIndex`].

use std::sync::Arc;

use ckeep_embed::Embedder;
use ckeep_index::Bm25;

use ckeep_store::{Manifest, ReadSnapshot, StoreRead};

use crate::adapter::AdapterCache;
use crate::analysis::AnalyzerChoice;
use crate::error::Result;
use crate::filtered::FilterCache;
use crate::more_models::MoreModels;
use crate::request::{SearchLimits, SearchRequest, SearchResponse};
use crate::vectors::VectorIndex;
use crate::vectors::cache::VectorCache;

/// The engine over one store.
#[derive(Debug)]
pub struct Engine<S> {
    pub(crate) store: S,
    /// The analyzer asked for when documents are added to a store that has none yet.
    pub(crate) analyzer: AnalyzerChoice,
    pub(crate) bm25: Bm25,
    pub(crate) embedder: Option<Arc<dyn Embedder>>,
    /// The store's further models (`models=A+B`), loaded when first needed.
    pub(crate) more_models: MoreModels,
    /// Query adapters read from the store (`ckeep adapt`), shared with [`Engine::reader`]s.
    pub(crate) adapters: AdapterCache,
    /// Vectors and graphs loaded from the store, shared with [`Engine::reader`]s, and this
    /// engine's refresh policy.
    pub(crate) vectors: VectorCache,
    /// Whether the HNSW graph is kept current by the caller (a server's background task)
    /// rather than built at ingest or on a query that finds it stale.
    pub(crate) background_index: bool,
    /// Where language-model summaries are cached (`None`: not cached).
    pub(crate) generation_cache: Option<std::path::PathBuf>,
    /// Filters answered lately, shared with readers.
    pub(crate) filters: FilterCache,
    /// What searches may ask.
    pub(crate) limits: SearchLimits,
}

impl<S> Engine<S> {
    /// An engine over `store` with default BM25 parameters and no embedding model.
    pub fn new(store: S) -> Self {
        Self {
            store,
            analyzer: AnalyzerChoice::Auto,
            bm25: Bm25::default(),
            embedder: None,
            more_models: MoreModels::default(),
            adapters: AdapterCache::default(),
            vectors: VectorCache::default(),
            background_index: false,
            generation_cache: None,
            filters: FilterCache::default(),
            limits: SearchLimits::default(),
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
            adapters: self.adapters.clone(),
            vectors: self.vectors.shared(),
            background_index: self.background_index,
            generation_cache: self.generation_cache.clone(),
            filters: self.filters.clone(),
            limits: self.limits,
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
    /// [`Writer::refresh_vector_index`]: ingests do not rebuild it, and a query that finds it
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
    /// fingerprint (see [`Writer::add_model`]) rather than loading it from where the manifest
    /// says it came from.
    #[must_use]
    pub fn with_further_model(self, embedder: Arc<dyn Embedder>) -> Self {
        self.more_models.insert(embedder);
        self
    }

    /// The same engine loading the store's further models (for `models=A+B`) behind the
    /// embedding cache when `cache` (default: uncached), as [`crate::load_model`] does.
    #[must_use]
    pub fn with_model_cache(mut self, cache: bool) -> Self {
        self.more_models.cache = cache;
        self
    }

    /// Sets the embedding model in place (a pooled reader's, see [`crate::ReaderPool`]).
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

    /// The same engine accepting searches within `limits` (a server's own).
    #[must_use]
    pub fn with_search_limits(mut self, limits: SearchLimits) -> Self {
        self.limits = limits;
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

    /// Writes to the store (see [`Writer`]).
    pub fn writer(&mut self) -> Writer<'_, S> {
        Writer::new(self)
    }

    /// The store's vectors as this engine holds them (see [`VectorIndex`]).
    pub fn vectors(&self) -> VectorIndex<'_, S> {
        VectorIndex::new(&self.store, &self.vectors, self.background_index)
    }
}

/// Writes to an engine's store. Made by [`Engine::writer`]; it borrows the engine, so a
/// writer and that engine's searches do not overlap (readers over other connections do).
#[derive(Debug)]
pub struct Writer<'e, S> {
    pub(crate) engine: &'e mut Engine<S>,
}

impl<'e, S> Writer<'e, S> {
    /// The writer of `engine`.
    pub(crate) fn new(engine: &'e mut Engine<S>) -> Self {
        Self { engine }
    }
}

/// One search's view of the store: a read snapshot, and the manifest read once at its start,
/// which every step of the search (strategy defaults and checks, the analyzer, the model
/// check, representations) takes from here rather than reading it again. Made by
/// [`Engine::searcher`]; a writer committing while it lives cannot make its reads disagree.
///
/// Not for writing ([`crate::Writer`]), nor for holding across requests: a snapshot held keeps
/// the reader on the store's state at its start.
#[derive(Debug)]
pub struct Searcher<'e, S: StoreRead> {
    pub(crate) engine: &'e Engine<S>,
    pub(crate) manifest: Manifest,
    _snapshot: ReadSnapshot<'e, S>,
}

impl<'e, S: StoreRead> Searcher<'e, S> {
    /// The snapshot `snapshot` of `engine`'s store, whose manifest reads `manifest`.
    pub(crate) fn new(
        engine: &'e Engine<S>,
        manifest: Manifest,
        snapshot: ReadSnapshot<'e, S>,
    ) -> Self {
        Self { engine, manifest, _snapshot: snapshot }
    }
}

impl<S: StoreRead> Engine<S> {
    /// A view of the store for reading and searching (see [`Searcher`]): a read snapshot with
    /// the manifest read once.
    pub fn searcher(&self) -> Result<Searcher<'_, S>> {
        let snapshot = ReadSnapshot::begin(&self.store)?;
        let manifest = self.store.manifest()?;
        Ok(Searcher::new(self, manifest, snapshot))
    }

    /// Runs a search: ranked in one [`Searcher`], then reranked (if the strategy says so) once
    /// its snapshot is let go.
    pub fn search(&self, req: &SearchRequest) -> Result<SearchResponse> {
        let open = || {
            let searcher = self.searcher()?;
            Ok((searcher.resolve(req)?, searcher))
        };
        crate::rerank::staged(req, open, |searcher, strategy| searcher.ranked(req, strategy))
    }
}
