//! Where engine work runs: a pool of reader engines (one `SQLite` connection each, sharing
//! loaded vectors) and one writer, all on blocking threads, behind bounded queues.
//!
//! Every search reads inside one snapshot, and every ingest batch is one transaction, so a read
//! sees a document whole or not at all. A job that has started runs to its end even when the
//! request times out or the client goes away: a write the server began is committed, and the
//! reader slot is given back only when the work is done, so load stays bounded.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use ckeep_engine::{Engine, ReaderPool};
use ckeep_store::DynStore;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::error::{ApiError, ErrorCode};

/// The engine every job runs on.
pub type StoreEngine = Engine<DynStore>;

/// The reader pool and the writer.
#[derive(Debug)]
pub struct Workers {
    idle_readers: ReaderPool<DynStore>,
    read_slots: Arc<Semaphore>,
    writer: Arc<Mutex<StoreEngine>>,
    write_slot: Arc<Semaphore>,
    /// How long a request may wait for a free slot before it is turned away (503 overloaded).
    queue_timeout: Duration,
    /// How long a read may take before its answer is given up (503 timeout).
    read_timeout: Duration,
    /// Reader engines in the pool, and requests waiting for a slot now.
    readers: usize,
    waiting: Arc<AtomicUsize>,
}

/// Counts a request as waiting for a slot until dropped (also when the wait is abandoned).
struct Waiting(Arc<AtomicUsize>);

impl Waiting {
    fn start(count: &Arc<AtomicUsize>) -> Self {
        count.fetch_add(1, Ordering::Relaxed);
        Self(Arc::clone(count))
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A reader lent with its slot. The lease is dropped before the permit (fields drop in order),
/// so the engine is back in the pool before the slot is released: a free slot always finds an
/// idle reader.
struct Slot {
    lease: ckeep_engine::Lease<DynStore>,
    _permit: OwnedSemaphorePermit,
}

impl Workers {
    /// `readers` engines beside `writer`.
    pub fn new(
        writer: StoreEngine,
        readers: Vec<StoreEngine>,
        queue_timeout: Duration,
        read_timeout: Duration,
    ) -> Self {
        Self {
            readers: readers.len(),
            waiting: Arc::default(),
            read_slots: Arc::new(Semaphore::new(readers.len())),
            idle_readers: ReaderPool::new(readers),
            writer: Arc::new(Mutex::new(writer)),
            write_slot: Arc::new(Semaphore::new(1)),
            queue_timeout,
            read_timeout,
        }
    }

    /// Requests waiting for a reader or the writer now.
    pub fn queued(&self) -> usize {
        self.waiting.load(Ordering::Relaxed)
    }

    /// Reader engines running a job now.
    pub fn readers_busy(&self) -> usize {
        self.readers.saturating_sub(self.read_slots.available_permits())
    }

    async fn slot(&self, slots: &Arc<Semaphore>) -> Result<OwnedSemaphorePermit, ApiError> {
        let _waiting = Waiting::start(&self.waiting);
        match tokio::time::timeout(self.queue_timeout, Arc::clone(slots).acquire_owned()).await {
            Ok(Ok(permit)) => Ok(permit),
            Ok(Err(_)) => {
                Err(ApiError::new(ErrorCode::ShuttingDown, "the server is shutting down"))
            }
            Err(_) => Err(ApiError::new(
                ErrorCode::Overloaded,
                format!(
                    "every worker stayed busy for {} ms; retry later",
                    self.queue_timeout.as_millis()
                ),
            )),
        }
    }

    /// Runs `job` on an idle reader, answering 503 timeout if it takes too long.
    pub async fn read<T, F>(&self, job: F) -> Result<T, ApiError>
    where
        T: Send + 'static,
        F: FnOnce(&StoreEngine) -> Result<T, ApiError> + Send + 'static,
    {
        self.read_within(Some(self.read_timeout), job).await
    }

    /// Runs `job` on an idle reader for as long as it takes (building the vector index).
    pub async fn read_untimed<T, F>(&self, job: F) -> Result<T, ApiError>
    where
        T: Send + 'static,
        F: FnOnce(&StoreEngine) -> Result<T, ApiError> + Send + 'static,
    {
        self.read_within(None, job).await
    }

    async fn read_within<T, F>(&self, timeout: Option<Duration>, job: F) -> Result<T, ApiError>
    where
        T: Send + 'static,
        F: FnOnce(&StoreEngine) -> Result<T, ApiError> + Send + 'static,
    {
        let permit = self.slot(&self.read_slots).await?;
        let idle = self.idle_readers.clone();
        let task = tokio::task::spawn_blocking(move || {
            let Some(lease) = idle.lease() else {
                return Err(ApiError::internal("a read slot without an idle reader"));
            };
            let slot = Slot { lease, _permit: permit };
            job(&slot.lease)
        });
        let joined = match timeout {
            Some(t) => tokio::time::timeout(t, task).await.map_err(|_| {
                ApiError::new(
                    ErrorCode::Timeout,
                    format!("the request took longer than {} ms", t.as_millis()),
                )
            })?,
            None => task.await,
        };
        joined.map_err(|e| ApiError::internal(format!("a read failed: {e}")))?
    }

    /// Runs `job` on the writer, once the writes before it are done. Not timed out: a write
    /// that started is finished and committed.
    pub async fn write<T, F>(&self, job: F) -> Result<T, ApiError>
    where
        T: Send + 'static,
        F: FnOnce(&mut StoreEngine) -> Result<T, ApiError> + Send + 'static,
    {
        let permit = self.slot(&self.write_slot).await?;
        let writer = Arc::clone(&self.writer);
        tokio::task::spawn_blocking(move || {
            let mut engine = writer.lock().unwrap_or_else(PoisonError::into_inner);
            let out = job(&mut engine);
            drop(permit);
            out
        })
        .await
        .map_err(|e| ApiError::internal(format!("a write failed: {e}")))?
    }

    /// Waits until no write is running and closes the queues: what shutdown calls, so every
    /// write a client was promised is committed before the process exits.
    pub async fn drain(&self) {
        if let Ok(permit) = self.write_slot.acquire().await {
            permit.forget();
        }
        self.write_slot.close();
        self.read_slots.close();
    }
}

#[cfg(test)]
mod tests {
    use ckeep_store::StoreRead;

    use super::*;

    fn engine(dir: &std::path::Path) -> StoreEngine {
        Engine::new(DynStore::from(ckeep_store::SqliteStore::open_or_create(dir).unwrap()))
    }

    /// One reader, held by a job that waits on `release`; the handle ends when the job has.
    async fn busy(
        workers: &Arc<Workers>,
    ) -> (std::sync::mpsc::Sender<()>, tokio::task::JoinHandle<Result<(), ApiError>>) {
        let (release, wait) = std::sync::mpsc::channel::<()>();
        let (started, running) = tokio::sync::oneshot::channel();
        let w = Arc::clone(workers);
        let handle = tokio::spawn(async move {
            w.read(move |_| {
                let _ = started.send(());
                let _ = wait.recv();
                Ok(())
            })
            .await
        });
        running.await.unwrap();
        (release, handle)
    }

    fn one_reader(dir: &std::path::Path, queue: Duration, read: Duration) -> Arc<Workers> {
        let writer = engine(dir);
        let reader = writer.reader(DynStore::from(ckeep_store::SqliteStore::open(dir).unwrap()));
        Arc::new(Workers::new(writer, vec![reader], queue, read))
    }

    #[tokio::test]
    async fn a_panicking_read_gives_its_reader_back() {
        let dir = tempfile::tempdir().unwrap();
        let workers = one_reader(dir.path(), Duration::from_mins(10), Duration::from_mins(10));
        for _ in 0..3 {
            let err = workers
                .read(|_| -> Result<(), ApiError> { panic!("a bug in a read job") })
                .await
                .unwrap_err();
            assert_eq!(err.code, ErrorCode::Internal);
            // The one reader is back: the next read runs instead of finding no idle engine.
            assert!(!workers.read(|e| Ok(e.store().location())).await.unwrap().is_empty());
        }
    }

    #[tokio::test]
    async fn a_full_pool_turns_requests_away_and_a_slow_read_times_out() {
        let dir = tempfile::tempdir().unwrap();
        let workers = one_reader(dir.path(), Duration::from_millis(50), Duration::from_millis(200));
        let (release, held) = busy(&workers).await;
        let err = workers.read(|_| Ok(())).await.unwrap_err();
        assert_eq!(err.code, ErrorCode::Overloaded);
        assert_eq!(err.status.as_u16(), 503);
        release.send(()).unwrap();
        // The slot comes back once the job ends (the held read itself may have timed out
        // meanwhile on a busy machine: that is not what this checks).
        let _ = held.await.unwrap();
        workers.read(|_| Ok(())).await.unwrap();
        // A read that cannot end before its bound times out; its job is let go only after.
        let (release, wait) = std::sync::mpsc::channel::<()>();
        let err = workers
            .read(move |_| {
                let _ = wait.recv();
                Ok(())
            })
            .await
            .unwrap_err();
        assert_eq!(err.code, ErrorCode::Timeout);
        release.send(()).unwrap();
        // Writes are never timed out: one held past twice the read bound still answers. (The
        // wait only makes the check meaningful; a busy machine can only lengthen it.)
        let (release, wait) = std::sync::mpsc::channel::<()>();
        let w = Arc::clone(&workers);
        let write = tokio::spawn(async move {
            w.write(move |_| {
                let _ = wait.recv();
                Ok(7)
            })
            .await
        });
        tokio::time::sleep(Duration::from_millis(400)).await;
        release.send(()).unwrap();
        assert_eq!(write.await.unwrap().unwrap(), 7);
        workers.drain().await;
        assert_eq!(workers.read(|_| Ok(())).await.unwrap_err().code, ErrorCode::ShuttingDown);
        assert_eq!(workers.write(|_| Ok(())).await.unwrap_err().code, ErrorCode::ShuttingDown);
    }
}
