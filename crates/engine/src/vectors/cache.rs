//! What dense search has loaded from the store — each representation's vectors, the codes of a
//! quantised one, the HNSW graphs — shared by a writer engine and its readers, with the one
//! lock that makes concurrent queries after a write load once, and the refresh policy that says
//! when loaded vectors older than the store may still be searched.
//!
//! Every lock of these maps is taken here and nowhere else.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock};
use std::time::{Duration, Instant};

use ckeep_index::Hnsw;

use super::codes::CodeIndex;
use super::live::DenseIndex;
use crate::error::Result;

/// Where "now" comes from for the refresh policy: the system's monotonic clock, or a test's,
/// so refreshing is tested by moving a clock instead of sleeping.
pub(crate) trait Clock: Send + Sync + std::fmt::Debug {
    /// The current instant.
    fn now(&self) -> Instant;
}

/// The monotonic clock.
#[derive(Debug)]
struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Instant {
        Instant::now()
    }
}

/// When loaded vectors older than the store may still be searched: never (`interval` `None`:
/// every write is caught up with before the next query), or for half the interval after the
/// store was read (see [`VectorCache::load`]).
#[derive(Debug, Clone)]
pub(crate) struct Refresh {
    pub interval: Option<Duration>,
    pub clock: Arc<dyn Clock>,
}

impl Default for Refresh {
    fn default() -> Self {
        Self { interval: None, clock: Arc::new(SystemClock) }
    }
}

/// Something loaded from the store (one representation's vectors or codes) as of a store
/// generation.
#[derive(Debug)]
pub(crate) struct Loaded<T> {
    pub value: Arc<T>,
    pub generation: u64,
    /// When the store was read for it.
    pub at: Instant,
}

impl<T> Clone for Loaded<T> {
    fn clone(&self) -> Self {
        Self { value: Arc::clone(&self.value), generation: self.generation, at: self.at }
    }
}

/// Vectors and graphs loaded from the store, each with the store generation it was read at.
#[derive(Debug, Default)]
pub(crate) struct Maps {
    /// Each representation's vectors, normalised, loaded (or derived) on its first dense query
    /// and brought up to date from the store's change log after writes.
    dense: HashMap<String, Loaded<DenseIndex>>,
    /// The compact codes of each quantised representation, loaded on its first dense query.
    codes: HashMap<String, Loaded<CodeIndex>>,
    /// The HNSW graph over those vectors' base (by the generation of the base), for large
    /// collections; `None` when the stored one is stale and the engine waits for the background
    /// index.
    ann: HashMap<String, (u64, Option<Arc<Hnsw>>)>,
}

/// What the cache holds of one graph.
#[derive(Debug, Clone)]
pub(crate) enum GraphEntry {
    /// Nothing for that generation: it must be read or built.
    Unknown,
    /// The graph, or `None` when the stored one is stale and the background index will build
    /// it (searches scan exactly meanwhile).
    Known(Option<Arc<Hnsw>>),
}

/// What [`VectorCache::load`] keeps: its map among the caches.
pub(crate) trait Cached: Sized {
    fn slot(maps: &Maps) -> &HashMap<String, Loaded<Self>>;
    fn slot_mut(maps: &mut Maps) -> &mut HashMap<String, Loaded<Self>>;
}

impl Cached for DenseIndex {
    fn slot(maps: &Maps) -> &HashMap<String, Loaded<Self>> {
        &maps.dense
    }
    fn slot_mut(maps: &mut Maps) -> &mut HashMap<String, Loaded<Self>> {
        &mut maps.dense
    }
}

impl Cached for CodeIndex {
    fn slot(maps: &Maps) -> &HashMap<String, Loaded<Self>> {
        &maps.codes
    }
    fn slot_mut(maps: &mut Maps) -> &mut HashMap<String, Loaded<Self>> {
        &mut maps.codes
    }
}

/// The maps and the loading lock, shared by an engine and its readers.
#[derive(Debug, Default)]
struct Shared {
    maps: RwLock<Maps>,
    /// Held while loading into `maps`, so concurrent queries after a write load once.
    loading: Mutex<()>,
}

/// One engine's view of the shared caches: the shared maps, and its own refresh policy (a
/// reader may tolerate older vectors than its writer does).
#[derive(Debug, Clone, Default)]
pub(crate) struct VectorCache {
    shared: Arc<Shared>,
    refresh: Refresh,
}

impl VectorCache {
    /// A view of the same caches for another engine (a reader).
    pub fn shared(&self) -> Self {
        self.clone()
    }

    /// The refresh policy, to change it (see [`crate::Engine::with_refresh_interval`]).
    pub fn refresh_mut(&mut self) -> &mut Refresh {
        &mut self.refresh
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Maps> {
        self.shared.maps.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Maps> {
        self.shared.maps.write().unwrap_or_else(PoisonError::into_inner)
    }

    /// Holds the loading lock: whoever holds it is the one loading into the caches.
    pub fn loading(&self) -> MutexGuard<'_, ()> {
        self.shared.loading.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The value of type `T` (vectors, codes) cached under `key`, loaded by `load` (given the
    /// value it replaces and the store's generation `current`) once per store generation — or,
    /// with a refresh interval, at most once per half interval — with the generation it was
    /// read at and whether that is not the store's now.
    pub fn load<T: Cached>(
        &self,
        key: &str,
        current: u64,
        load: impl FnOnce(Option<&Loaded<T>>, u64) -> Result<T>,
    ) -> Result<(Arc<T>, u64, bool)> {
        let cached = || T::slot(&self.read()).get(key).cloned();
        // Reuse: current; or newer than this (old) snapshot; or read less than half the
        // refresh interval ago, or while another query reloads. Half: a write that lands just
        // after a read is then picked up by a reload that starts half an interval later and
        // finishes (reading only the changed vectors) well within the interval it was promised.
        let reusable = |l: &Loaded<T>| {
            l.generation >= current
                || self.refresh.interval.is_some_and(|i| {
                    self.refresh.clock.now().saturating_duration_since(l.at) < i / 2
                        || self.shared.loading.try_lock().is_err()
                })
        };
        if let Some(l) = cached().filter(reusable) {
            return Ok((l.value, l.generation, l.generation != current));
        }
        let _loading = self.loading();
        let previous = cached();
        if let Some(l) = previous.as_ref().filter(|l| l.generation >= current) {
            return Ok((Arc::clone(&l.value), l.generation, l.generation != current));
        }
        // Aged from when the store was read, not from when the load finished.
        let started = self.refresh.clock.now();
        let value = Arc::new(load(previous.as_ref(), current)?);
        let loaded = Loaded { value: Arc::clone(&value), generation: current, at: started };
        T::slot_mut(&mut self.write()).insert(key.to_string(), loaded);
        Ok((value, current, false))
    }

    /// What is cached of the graph for the vectors of `key` read at `generation`.
    pub fn graph(&self, key: &str, generation: u64) -> GraphEntry {
        match self.read().ann.get(key).filter(|(g, _)| *g == generation) {
            Some((_, graph)) => GraphEntry::Known(graph.clone()),
            None => GraphEntry::Unknown,
        }
    }

    /// Caches `graph` (or that there is none) as the one of `key`'s vectors read at
    /// `generation`, unless a newer one is.
    pub fn set_graph(&self, key: &str, generation: u64, graph: Option<Arc<Hnsw>>) {
        let mut maps = self.write();
        if maps.ann.get(key).is_none_or(|(g, _)| *g <= generation) {
            maps.ann.insert(key.to_string(), (generation, graph));
        }
    }

    /// Makes `index` (read at `generation`, the graph of its first segment set) the vectors
    /// of `key` that queries search, unless readers hold newer ones; whether it did.
    pub fn install_dense(&self, key: &str, index: DenseIndex, generation: u64) -> bool {
        let mut maps = self.write();
        if maps.dense.get(key).is_some_and(|l| l.generation > generation) {
            return false;
        }
        maps.ann.insert(key.to_string(), (index.read_at, index.first().graph().cloned()));
        let loaded = Loaded { value: Arc::new(index), generation, at: self.refresh.clock.now() };
        maps.dense.insert(key.to_string(), loaded);
        true
    }

    /// Installs `value` (codes) under `key` as read at `generation`, unless what is loaded
    /// is newer: then it is not, and the next pass starts from that.
    pub fn install<T: Cached>(&self, key: &str, value: T, generation: u64) -> bool {
        let mut maps = self.write();
        if T::slot(&maps).get(key).is_some_and(|l| l.generation > generation) {
            return false;
        }
        let loaded = Loaded { value: Arc::new(value), generation, at: self.refresh.clock.now() };
        T::slot_mut(&mut maps).insert(key.to_string(), loaded);
        true
    }

    /// Replaces the value (vectors, codes) loaded under `key` by what `change` makes of it
    /// (given it and the generation it was read at; `None`: leave it), holding the loading
    /// lock so no reader applies the store's changes to it meanwhile. Its generation and age
    /// stay: `change` reorganises the rows, it does not read the store's newer writes.
    pub fn update<T: Cached>(
        &self,
        key: &str,
        change: impl FnOnce(&T, u64) -> Result<Option<T>>,
    ) -> Result<bool> {
        let _loading = self.loading();
        let Some(loaded) = T::slot(&self.read()).get(key).cloned() else { return Ok(false) };
        let Some(changed) = change(&loaded.value, loaded.generation)? else { return Ok(false) };
        let value = Arc::new(changed);
        T::slot_mut(&mut self.write()).insert(key.to_string(), Loaded { value, ..loaded });
        Ok(true)
    }

    /// Each loaded value of type `T` (vectors, codes), by key, for memory reports.
    pub fn each<T: Cached>(&self, mut f: impl FnMut(&str, &T)) {
        for (k, l) in T::slot(&self.read()) {
            f(k, &l.value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ckeep_store::VectorMatrix;

    /// A clock that moves only when the test says.
    #[derive(Debug)]
    struct ManualClock(Mutex<Instant>);

    impl ManualClock {
        fn advance(&self, by: Duration) {
            *self.0.lock().unwrap() += by;
        }
    }

    impl Clock for ManualClock {
        fn now(&self) -> Instant {
            *self.0.lock().unwrap()
        }
    }

    fn index(rows: usize, generation: u64) -> DenseIndex {
        let m = VectorMatrix {
            ids: (0..rows as i64).map(ckeep_core::ChunkId).collect(),
            docs: vec![ckeep_core::DocKey(1); rows],
            dim: 1,
            data: vec![1.0; rows],
        };
        DenseIndex::whole(m, generation)
    }

    #[test]
    fn older_vectors_are_reused_for_half_the_refresh_interval_then_reloaded() {
        let clock = Arc::new(ManualClock(Mutex::new(Instant::now())));
        let mut cache = VectorCache::default();
        cache.refresh_mut().interval = Some(Duration::from_secs(10));
        cache.refresh_mut().clock = clock.clone();
        let loads = std::cell::Cell::new(0);
        let load = |generation: u64| {
            cache.load("plain", generation, |_, g| {
                loads.set(loads.get() + 1);
                Ok(index(g as usize, g))
            })
        };
        let (first, generation, stale) = load(1).unwrap();
        assert_eq!((first.len(), generation, stale, loads.get()), (1, 1, false, 1));
        // A write (generation 2) within half the interval: the loaded vectors are searched,
        // marked stale so their hits are checked against the store.
        clock.advance(Duration::from_secs(4));
        let (again, generation, stale) = load(2).unwrap();
        assert_eq!((again.len(), generation, stale, loads.get()), (1, 1, true, 1));
        // Past half the interval: caught up.
        clock.advance(Duration::from_secs(2));
        let (caught_up, generation, stale) = load(2).unwrap();
        assert_eq!((caught_up.len(), generation, stale, loads.get()), (2, 2, false, 2));
        // Current vectors are reused whatever the clock says.
        clock.advance(Duration::from_mins(1));
        assert_eq!(load(2).unwrap().1, 2);
        assert_eq!(loads.get(), 2);
    }

    #[test]
    fn without_a_refresh_interval_every_write_is_caught_up_with() {
        let cache = VectorCache::default();
        let mut loads = 0;
        for generation in [1, 1, 2, 3, 3] {
            let (_, g, stale) = cache
                .load("plain", generation, |_, g| {
                    loads += 1;
                    Ok(index(1, g))
                })
                .unwrap();
            assert_eq!((g, stale), (generation, false));
        }
        assert_eq!(loads, 3);
    }

    #[test]
    fn a_graph_is_not_replaced_by_an_older_one() {
        let cache = VectorCache::default();
        let graph =
            Arc::new(Hnsw::build(&[1.0, 0.0, 0.0, 1.0], 2, ckeep_index::HnswParams::default()));
        cache.set_graph("plain", 5, Some(graph));
        cache.set_graph("plain", 3, None);
        assert!(matches!(cache.graph("plain", 5), GraphEntry::Known(Some(_))));
        assert!(matches!(cache.graph("plain", 3), GraphEntry::Unknown));
        cache.set_graph("plain", 7, None);
        assert!(matches!(cache.graph("plain", 7), GraphEntry::Known(None)));
    }
}
