//! `ckeep serve`: the engine behind a JSON API over HTTP, so any language can add documents and
//! search them.
//!
//! # Brief overview
//! - [`AppState::open`] opens a store with a writer and a pool of readers ([`workers`]);
//!   [`router`] is the whole API as an axum `Router` (tests drive it without a port);
//!   [`serve`] runs it on a listener until a shutdown signal, then lets writes finish.
//! - Every API route needs `Authorization: Bearer TOKEN` when a token is set; `/health`,
//!   `/openapi.json` and the playground's files (`/`, `/ui/*`) hold no data and stay open.
//! - Errors are JSON with a stable code ([`error::ErrorCode`]); every limit is in [`Limits`].
//! - Queries from concurrent requests share model calls ([`batch::BatchingEmbedder`]).
//! - The API is described at `/openapi.json`; every answer carries an `x-request-id`, each
//!   request is logged through `tracing`, and `/metrics` serves Prometheus metrics
//!   ([`observe`]).
//! - `/` serves the playground, a web page over the same API (see `ui`).
//! - [`mcp`] offers the same search, reads and writes as Model Context Protocol tools.
//!
//! # Example
//!
//! A server on a free port over a new store (BM25 only: no model): one document in, a Chinese
//! query out with its byte span, then a clean shutdown.
//!
//! ```
//! use ckeep_server::{AppState, ServerConfig};
//! use serde_json::{Value, json};
//!
//! let dir = tempfile::tempdir().unwrap();
//! let store = dir.path().join("store").display().to_string();
//! let state = AppState::open(&store, None, ServerConfig::default()).unwrap();
//! let runtime = tokio::runtime::Runtime::new().unwrap();
//! let listener = runtime.block_on(tokio::net::TcpListener::bind("127.0.0.1:0")).unwrap();
//! let base = format!("http://{}", listener.local_addr().unwrap());
//! let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
//! let served = runtime.spawn(ckeep_server::serve(listener, state, async {
//!     let _ = stopped.await;
//! }));
//!
//! let text = "Oolong is a partly oxidised tea. 乌龙茶是一种半发酵茶。";
//! ureq::post(&format!("{base}/documents"))
//!     .send_json(json!({"id": "tea", "text": text}))
//!     .unwrap();
//! let found: Value = ureq::post(&format!("{base}/search"))
//!     .send_json(json!({"query": "半发酵", "k": 1}))
//!     .unwrap()
//!     .body_mut()
//!     .read_json()
//!     .unwrap();
//! let hit = &found["results"][0];
//! let (start, end) = (hit["spans"][0][0].as_u64().unwrap(), hit["spans"][0][1].as_u64().unwrap());
//! assert_eq!(hit["doc_id"], "tea");
//! assert_eq!(&text[start as usize..end as usize], hit["text"].as_str().unwrap());
//!
//! stop.send(()).unwrap();
//! runtime.block_on(served).unwrap().unwrap();
//! ```

pub mod batch;
pub mod error;
mod guard;
mod json;
mod listen;
pub mod logs;
pub mod mcp;
pub mod observe;
mod openapi;
mod request_id;
mod routes;
mod ui;
pub mod workers;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use axum::Router;
use ckeep_embed::Embedder;
use ckeep_engine::Engine;
use ckeep_store::{DynStore, SqliteStore};

pub use error::ApiError;
pub use guard::AllowedHosts;
pub use openapi::openapi;
pub use routes::ROUTES;
pub use ui::CONTENT_SECURITY_POLICY;
pub use workers::StoreEngine;

use crate::batch::BatchingEmbedder;
use crate::workers::Workers;

/// Page cache of each reader connection, in MiB: searches read postings and chunk rows, and
/// the vectors live in the shared engine cache, not in `SQLite`'s.
const READER_PAGE_CACHE_MIB: u32 = 16;

/// Every limit the server enforces; each is answered with a clear 4xx or 503.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Largest request body in bytes (413 beyond).
    pub max_body_bytes: usize,
    /// Most documents in one add request.
    pub max_documents: usize,
    /// Largest `k` of a search.
    pub max_k: usize,
    /// Longest query in bytes.
    pub max_query_bytes: usize,
    /// Longest a read (search, get, similar) may run before it is answered with 503 timeout.
    pub read_timeout: Duration,
    /// Longest a request waits for a free worker before it is answered with 503 overloaded.
    pub queue_timeout: Duration,
    /// Most requests handled at once (bodies included); more are answered with 503 overloaded
    /// at once, so memory stays below about this many times `max_body_bytes`.
    pub max_in_flight: usize,
    /// Longest a connection may take to send a request's headers, counted from when the
    /// server starts waiting for them (also on a kept-alive connection between requests);
    /// then it is closed.
    pub header_timeout: Duration,
    /// Most connections open at once; further ones wait to be accepted.
    pub max_connections: usize,
}

impl Limits {
    /// The limits a server has unless told otherwise (`ckeep serve`'s flags default to them).
    pub const DEFAULT: Self = Self {
        max_body_bytes: 32 << 20,
        max_documents: 1000,
        max_k: 1000,
        max_query_bytes: 4096,
        read_timeout: Duration::from_secs(30),
        queue_timeout: Duration::from_secs(10),
        max_in_flight: 64,
        header_timeout: Duration::from_secs(10),
        max_connections: 512,
    };
}

impl Default for Limits {
    fn default() -> Self {
        Self::DEFAULT
    }
}

impl Limits {
    /// What the server's engines accept of a search: its bounds, from remote clients.
    pub fn search(&self) -> ckeep_engine::SearchLimits {
        ckeep_engine::SearchLimits {
            max_k: self.max_k,
            max_query_bytes: self.max_query_bytes,
            remote: true,
        }
    }
}

/// How the server runs.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Limits.
    pub limits: Limits,
    /// The bearer token every API request must carry (`None`: no authentication); see `routes`.
    pub token: Option<String>,
    /// Reader engines (concurrent reads).
    pub readers: usize,
    /// Whether concurrent queries share model calls.
    pub batch_queries: bool,
    /// How often the HNSW graph of a large collection is updated after writes (vectors written
    /// since inserted, removed ones tombstoned; rebuilt when those pass a fifth of it).
    pub index_interval: Duration,
    /// How long after a write dense search may still use the vectors loaded before it (BM25
    /// and reads by id see every committed write at once).
    pub refresh_interval: Duration,
    /// Whether the store's further models (loaded on a strategy's first use of them) embed
    /// through the embedding cache, as the CLI's do unless `--no-cache`.
    pub model_cache: bool,
    /// Who answers `/ask` (`--llm`): a model name, a `.gguf` file or `URL#MODEL`; `None`, the
    /// installed default model. Loaded on the first question, not at start.
    pub llm: Option<String>,
    /// The hosts requests may name (`Host`): loopback names unless told more, so a web page
    /// that rebinds its own domain to 127.0.0.1 reaches nothing.
    pub allowed_hosts: AllowedHosts,
}

impl ServerConfig {
    /// Refuses to listen on `addr` beyond loopback without a token (anyone who reaches it
    /// could read and change the store), unless the operator says so (`insecure`).
    pub fn check_listening(&self, addr: SocketAddr, insecure: bool) -> Result<(), ApiError> {
        if self.token.is_none() && !addr.ip().is_loopback() && !insecure {
            return Err(ApiError::invalid(format!(
                "listening on {addr} without a token would let anyone who reaches it read and \
                 change the store; give --token-file FILE, or --insecure-no-token to do it anyway"
            )));
        }
        Ok(())
    }
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            limits: Limits::default(),
            token: None,
            readers: std::thread::available_parallelism().map_or(4, |n| n.get() * 2).max(4),
            batch_queries: true,
            index_interval: Duration::from_secs(2),
            refresh_interval: Duration::from_secs(1),
            model_cache: false,
            llm: None,
            allowed_hosts: AllowedHosts::new(&[]),
        }
    }
}

/// A reader's own connection to the store; `SQLite` readers get a small page cache each.
fn open_reader(location: &str) -> Result<DynStore, ApiError> {
    if ckeep_store::is_postgres_url(location) {
        return Ok(ckeep_store::open(location)?);
    }
    let store = SqliteStore::open(Path::new(location))?;
    store.limit_page_cache(READER_PAGE_CACHE_MIB)?;
    Ok(store.into())
}

/// What every request handler shares.
#[derive(Debug)]
pub struct AppState {
    workers: Workers,
    config: ServerConfig,
    in_flight: Arc<tokio::sync::Semaphore>,
    embedder: Option<Arc<dyn Embedder>>,
    batching: Option<Arc<BatchingEmbedder>>,
    /// Writes committed, and the count when the vector index was last built.
    writes: AtomicU64,
    indexed_at: AtomicU64,
    /// Threads of the background index (see [`background_pool`]).
    index_pool: rayon::ThreadPool,
    /// The background index's own reader (its connection), lent to the pool while it works.
    indexer: std::sync::Mutex<Option<StoreEngine>>,
    started: Instant,
    metrics: observe::Metrics,
    /// The playground's evaluations of the store (`/evaluate`).
    evaluations: std::sync::Mutex<routes::evaluate::Evaluations>,
    /// Who answers `/ask`, once a question has loaded it.
    answerer: tokio::sync::Mutex<Option<Arc<ckeep_engine::Answerer>>>,
}

/// The threads that update and rebuild the HNSW graph: a pool of their own, so a rebuild's
/// long parallel tasks never hold the shared pool that ingests (and large scans) use — rayon
/// workers finish their own queued work before taking injected jobs, which stalled a write for
/// the 50 s of a rebuild — and, on Linux, at nice 10, so queries and writes go first.
pub(crate) fn background_pool(name: &'static str) -> Result<rayon::ThreadPool, ApiError> {
    let threads = std::thread::available_parallelism().map_or(2, std::num::NonZero::get);
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(move |i| format!("{name}-{i}"))
        .start_handler(|_| lower_priority())
        .build()
        .map_err(|e| ApiError::internal(format!("cannot start the index threads: {e}")))
}

/// Lowers the calling thread's scheduling priority to nice 10 (Linux: per thread).
fn lower_priority() {
    #[cfg(target_os = "linux")]
    {
        let thread = rustix::thread::gettid();
        if let Err(e) = rustix::process::setpriority_process(Some(thread), 10) {
            tracing::debug!(error = %e, "index thread keeps its priority");
        }
    }
}

impl AppState {
    /// Opens (or creates) the store at `location` (a directory, or a `postgres://` URL) with
    /// `embedder` (the store's model, if any). Each reader gets its own connection.
    pub fn open(
        location: &str,
        embedder: Option<Arc<dyn Embedder>>,
        config: ServerConfig,
    ) -> Result<Arc<Self>, ApiError> {
        let batching = match (&embedder, config.batch_queries) {
            (Some(e), true) => Some(Arc::new(BatchingEmbedder::new(Arc::clone(e)))),
            _ => None,
        };
        let mut writer = Engine::new(ckeep_store::open_or_create(location)?)
            .with_background_index()
            .with_refresh_interval(config.refresh_interval)
            .with_model_cache(config.model_cache)
            .with_search_limits(config.limits.search());
        if let Some(e) = &embedder {
            writer = writer.with_embedder(Arc::clone(e));
        }
        let query_model: Option<Arc<dyn Embedder>> =
            batching.clone().map(|b| b as Arc<dyn Embedder>).or_else(|| embedder.clone());
        let mut readers = Vec::with_capacity(config.readers.max(1));
        for _ in 0..config.readers.max(1) {
            let mut reader = writer.reader(open_reader(location)?);
            if let Some(m) = &query_model {
                reader = reader.with_embedder(Arc::clone(m));
            }
            readers.push(reader);
        }
        let indexer = writer.reader(open_reader(location)?);
        let workers =
            Workers::new(writer, readers, config.limits.queue_timeout, config.limits.read_timeout);
        Ok(Arc::new(Self {
            workers,
            in_flight: Arc::new(tokio::sync::Semaphore::new(config.limits.max_in_flight.max(1))),
            config,
            embedder,
            batching,
            writes: AtomicU64::new(0),
            indexed_at: AtomicU64::new(0),
            index_pool: background_pool("ckeep-index")?,
            evaluations: std::sync::Mutex::default(),
            answerer: tokio::sync::Mutex::default(),
            indexer: std::sync::Mutex::new(Some(indexer)),
            started: Instant::now(),
            metrics: observe::Metrics::default(),
        }))
    }

    /// Who answers `/ask`: loaded on the first question (a model takes a second and half a
    /// gigabyte), then shared; a load that fails is tried again by the next question.
    pub(crate) async fn answerer(&self) -> Result<Arc<ckeep_engine::Answerer>, ApiError> {
        let mut slot = self.answerer.lock().await;
        if let Some(loaded) = slot.as_ref() {
            return Ok(Arc::clone(loaded));
        }
        let spec = self.config.llm.clone();
        let cache = self.config.model_cache.then(ckeep_engine::default_generation_cache);
        let loaded = tokio::task::spawn_blocking(move || {
            ckeep_engine::Answerer::load(spec.as_deref(), cache.as_deref())
        })
        .await
        .map_err(|e| ApiError::internal(format!("loading the language model: {e}")))??;
        let loaded = Arc::new(loaded);
        *slot = Some(Arc::clone(&loaded));
        Ok(loaded)
    }

    /// Model calls made for queries and the queries they embedded (batching at work).
    pub fn query_batches(&self) -> Option<(u64, u64)> {
        self.batching.as_ref().map(|b| b.calls())
    }

    /// Runs `job` on the writer once the writes before it are done, and counts it as a write
    /// (the vector index is rebuilt after it): how a folder watched beside the server is synced.
    pub async fn write<T, F>(&self, job: F) -> Result<T, ApiError>
    where
        T: Send + 'static,
        F: FnOnce(&mut StoreEngine) -> Result<T, ApiError> + Send + 'static,
    {
        let out = self.workers.write(job).await?;
        self.wrote();
        Ok(out)
    }

    pub(crate) fn wrote(&self) {
        self.writes.fetch_add(1, Ordering::Relaxed);
    }

    /// Updates the HNSW graph if writes happened since the last update: with the background
    /// index's own reader and threads (so ingests and queries go on); a rebuilt or compacted
    /// graph is saved by the writer. `last`: the server is stopping, so a graph updated in
    /// place is compacted and saved whatever its changes (see
    /// [`ckeep_engine::VectorIndex::compact`]).
    async fn refresh_index(&self, last: bool) -> Result<(), ApiError> {
        let writes = self.writes.load(Ordering::Relaxed);
        if writes == self.indexed_at.load(Ordering::Relaxed) && !(last && writes > 0) {
            return Ok(());
        }
        let taken = self.indexer.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take();
        let Some(engine) = taken else {
            return Ok(()); // the previous update still runs
        };
        let (done, result) = tokio::sync::oneshot::channel();
        self.index_pool.spawn(move || {
            let built = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                if last { engine.vectors().compact() } else { engine.vectors().build() }
            }));
            let _ = done.send((engine, built));
        });
        let (engine, built) =
            result.await.map_err(|_| ApiError::internal("the index thread stopped"))?;
        *self.indexer.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(engine);
        let builds =
            built.map_err(|_| ApiError::internal("updating the vector index panicked"))??;
        if !builds.is_empty() {
            self.workers.write(move |e| Ok(e.writer().save_vector_index(builds)?)).await?;
        }
        self.indexed_at.store(writes, Ordering::Relaxed);
        Ok(())
    }
}

/// The task that keeps the vector index current while a server runs.
pub(crate) struct Indexer {
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<()>,
}

impl Indexer {
    /// Stops updating (an update under way is finished first), then saves the graph as it
    /// stands, so the next process finds it current instead of building one.
    pub(crate) async fn finish(self) {
        let _ = self.stop.send(());
        let _ = self.task.await;
    }
}

impl AppState {
    /// Updates the HNSW graph every `index_interval` while writes come in, until
    /// [`Indexer::finish`].
    pub(crate) fn spawn_indexer(self: &Arc<Self>) -> Indexer {
        let state = Arc::clone(self);
        let (stop, mut stopped) = tokio::sync::oneshot::channel();
        let task = tokio::spawn(async move {
            loop {
                tokio::select! {
                    () = tokio::time::sleep(state.config.index_interval) => {}
                    _ = &mut stopped => break,
                }
                if let Err(e) = state.refresh_index(false).await {
                    tracing::warn!(error = %e.message, "vector index not rebuilt");
                }
            }
            if let Err(e) = state.refresh_index(true).await {
                tracing::warn!(error = %e.message, "vector index not saved");
            }
        });
        Indexer { stop, task }
    }
}

/// The whole API.
pub fn router(state: Arc<AppState>) -> Router {
    routes::router(state)
}

/// Serves `state` on `listener` until `shutdown` resolves; then stops accepting, lets requests
/// in flight finish, saves the vector index and waits for the last write to commit.
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: Arc<AppState>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let indexer = state.spawn_indexer();
    let limits = &state.config.limits;
    let (timeout, most) = (limits.header_timeout, limits.max_connections);
    listen::accept_loop(listener, router(Arc::clone(&state)), timeout, most, shutdown).await;
    indexer.finish().await;
    state.workers.drain().await;
    Ok(())
}

/// Resolves on SIGINT (Ctrl-C) or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = term => {},
    }
}
