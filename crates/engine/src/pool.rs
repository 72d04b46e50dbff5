//! Idle reader engines, lent one at a time: the server's fixed pool (behind its own slots) and
//! the Python store's pool that grows with its threads hold readers the same way.

use std::ops::{Deref, DerefMut};
use std::sync::{Arc, Mutex, PoisonError};

use crate::engine::Engine;

/// Reader engines not in use. Cloning gives another handle to the same pool.
#[derive(Debug)]
pub struct ReaderPool<S> {
    idle: Arc<Mutex<Vec<Engine<S>>>>,
}

impl<S> Clone for ReaderPool<S> {
    fn clone(&self) -> Self {
        Self { idle: Arc::clone(&self.idle) }
    }
}

impl<S> Default for ReaderPool<S> {
    fn default() -> Self {
        Self::new(Vec::new())
    }
}

impl<S> ReaderPool<S> {
    /// A pool holding `readers`.
    pub fn new(readers: Vec<Engine<S>>) -> Self {
        Self { idle: Arc::new(Mutex::new(readers)) }
    }

    /// An idle reader, lent until the lease is dropped; `None` when every reader is out.
    pub fn lease(&self) -> Option<Lease<S>> {
        let engine = self.lock().pop()?;
        Some(Lease { engine: Some(engine), pool: self.clone() })
    }

    /// An idle reader, or a new one from `open` when every reader is out: the new one joins
    /// the pool when its lease ends, so the pool grows to the most readers used at once.
    pub fn lease_or<E>(&self, open: impl FnOnce() -> Result<Engine<S>, E>) -> Result<Lease<S>, E> {
        match self.lease() {
            Some(lease) => Ok(lease),
            None => Ok(Lease { engine: Some(open()?), pool: self.clone() }),
        }
    }

    /// Readers idle now.
    pub fn idle(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Engine<S>>> {
        // A reader is put back whole or not at all, so a poisoned lock still guards a valid list.
        self.idle.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A reader lent from a [`ReaderPool`]. Dropping it, also while a panicking job unwinds, puts
/// the engine back, so the pool never shrinks.
#[derive(Debug)]
pub struct Lease<S> {
    engine: Option<Engine<S>>,
    pool: ReaderPool<S>,
}

impl<S> Deref for Lease<S> {
    type Target = Engine<S>;

    fn deref(&self) -> &Engine<S> {
        self.engine.as_ref().expect("held until drop")
    }
}

impl<S> DerefMut for Lease<S> {
    fn deref_mut(&mut self) -> &mut Engine<S> {
        self.engine.as_mut().expect("held until drop")
    }
}

impl<S> Drop for Lease<S> {
    fn drop(&mut self) {
        if let Some(engine) = self.engine.take() {
            self.pool.lock().push(engine);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ckeep_store::SqliteStore;

    fn reader() -> Engine<SqliteStore> {
        Engine::new(SqliteStore::in_memory().unwrap())
    }

    #[test]
    fn a_lease_returns_its_reader_also_when_its_job_panics() {
        let pool = ReaderPool::new(vec![reader()]);
        let lease = pool.lease().unwrap();
        assert!(pool.lease().is_none(), "the only reader is out");
        drop(lease);
        let handle = pool.clone();
        let panicked = std::thread::spawn(move || {
            let _lease = handle.lease().unwrap();
            panic!("a job fails");
        })
        .join();
        assert!(panicked.is_err());
        assert_eq!(pool.idle(), 1, "the reader came back while the job unwound");
    }

    #[test]
    fn a_pool_grows_to_the_readers_used_at_once() {
        let pool = ReaderPool::default();
        let opened = std::cell::Cell::new(0);
        let open = || {
            opened.set(opened.get() + 1);
            Ok::<_, std::convert::Infallible>(reader())
        };
        let (a, b) = (pool.lease_or(open).unwrap(), pool.lease_or(open).unwrap());
        drop((a, b));
        assert_eq!((opened.get(), pool.idle()), (2, 2));
        let _c = pool.lease_or(open).unwrap();
        assert_eq!(opened.get(), 2, "an idle reader is lent before a new one is opened");
    }
}
