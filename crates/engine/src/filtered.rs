//! A filtered search: the documents a metadata filter lets through, and how a dense search
//! finds the best of their chunks — every matching chunk scored exactly when few match, the
//! HNSW graph walked with the filter when many do (as Qdrant chooses by the filter's
//! cardinality). Either way the filter is applied *during* the search, never to a top-k cut
//! before it, so a selective filter still returns k results when k matching chunks exist.

use std::fmt::Write;
use std::sync::{Arc, Mutex, PoisonError};

use serde::Serialize;

use ckeep_core::DocKey;

/// A filtered walk reaches its `ef` matching rows after visiting about `1 / share` times the
/// rows an unfiltered walk visits; scoring the matching rows exactly costs one product each.
/// The walk is chosen when `matching × share` exceeds this many rows, an estimate of what an
/// unfiltered walk with the engine's beam (128) and 16 links per node visits. At 100k chunks
/// (`cargo bench -p ckeep-engine --bench filters`) it pre-filters at 0.1 % and 1 % (faster
/// than the unfiltered walk) and walks at 61 % (1.8× the unfiltered walk, recall 0.995).
const FILTERED_WALK_ROWS: f64 = 4_096.0;

/// The documents a filter lets through, as one bit per store key: membership is asked once
/// per candidate chunk, up to every chunk of a collection, so it costs a load, not a hash.
#[derive(Debug, Clone, Default)]
pub(crate) struct AllowedDocs {
    bits: Vec<u64>,
    count: usize,
}

impl AllowedDocs {
    /// The set of `keys` (store keys are small positive integers: rowids and serials).
    pub fn new(keys: impl IntoIterator<Item = DocKey>) -> Self {
        let mut set = Self::default();
        for DocKey(key) in keys {
            let Ok(key) = usize::try_from(key) else { continue };
            let (word, bit) = (key / 64, key % 64);
            if word >= set.bits.len() {
                set.bits.resize(word + 1, 0);
            }
            if set.bits[word] & (1 << bit) == 0 {
                set.bits[word] |= 1 << bit;
                set.count += 1;
            }
        }
        set
    }

    /// Whether `doc` passes.
    #[inline]
    pub fn contains(&self, doc: DocKey) -> bool {
        usize::try_from(doc.0)
            .ok()
            .and_then(|key| self.bits.get(key / 64).map(|w| w & (1 << (key % 64)) != 0))
            .unwrap_or(false)
    }

    /// The keys that pass, in order.
    pub fn keys(&self) -> Vec<DocKey> {
        let mut keys = Vec::with_capacity(self.count);
        for (w, &word) in self.bits.iter().enumerate() {
            let mut bits = word;
            while bits != 0 {
                let bit = bits.trailing_zeros() as usize;
                keys.push(DocKey((w * 64 + bit) as i64));
                bits &= bits - 1;
            }
        }
        keys
    }

    /// How many documents pass.
    pub fn len(&self) -> usize {
        self.count
    }
}

/// Filters answered lately, by their JSON and the store generation they were answered at:
/// applications repeat a few filters (a tenant, a folder, a language) on every query, and the
/// store reads every document's metadata to answer one (about 2 ms at 15k documents).
/// Shared by an engine and its readers; a write changes the generation, so nothing stale is
/// ever used.
#[derive(Debug, Clone, Default)]
pub(crate) struct FilterCache(Arc<Mutex<Vec<CachedFilter>>>);

/// A filter's JSON, the generation it was answered at, and its answer.
type CachedFilter = (String, u64, Arc<AllowedDocs>);

/// Filters the cache keeps (the least recently used goes first).
const CACHED_FILTERS: usize = 32;

impl FilterCache {
    /// The documents `key` (a filter's JSON) lets through at `generation`, answered by
    /// `answer` unless cached.
    pub fn get_or<E>(
        &self,
        key: String,
        generation: u64,
        answer: impl FnOnce() -> Result<AllowedDocs, E>,
    ) -> Result<Arc<AllowedDocs>, E> {
        let lock = || self.0.lock().unwrap_or_else(PoisonError::into_inner);
        {
            let mut entries = lock();
            if let Some(i) = entries.iter().position(|(k, g, _)| *g == generation && *k == key) {
                let entry = entries.remove(i);
                let allowed = Arc::clone(&entry.2);
                entries.push(entry);
                return Ok(allowed);
            }
        }
        // Answered without the lock: readers answering other filters do not wait.
        let allowed = Arc::new(answer()?);
        let mut entries = lock();
        entries.retain(|(k, g, _)| *g == generation && *k != key);
        if entries.len() >= CACHED_FILTERS {
            entries.remove(0);
        }
        entries.push((key, generation, Arc::clone(&allowed)));
        Ok(allowed)
    }
}

/// How a filtered dense search found its candidates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub enum FilteredBy {
    /// Every matching chunk scored exactly (few match, or the collection has no graph).
    PreFilter,
    /// The HNSW graph walked through every chunk, only matching ones returned (many match).
    FilteredGraph,
    /// The matching chunks' compact codes scanned, the best rescored with float32 vectors.
    CodesScan,
    /// The store's own exact vector search, restricted to the matching documents.
    Store,
}

impl FilteredBy {
    /// Pre-filtering or a filtered walk for `matching` of `total` chunks (see
    /// `FILTERED_WALK_ROWS`); a pre-filter without a graph.
    pub fn choose(matching: usize, total: usize, has_graph: bool) -> Self {
        let share = matching as f64 / total.max(1) as f64;
        if has_graph && matching as f64 * share > FILTERED_WALK_ROWS {
            Self::FilteredGraph
        } else {
            Self::PreFilter
        }
    }

    /// What `--explain` says.
    pub fn describe(self) -> &'static str {
        match self {
            Self::PreFilter => "pre-filter: every matching chunk scored exactly",
            Self::FilteredGraph => "filtered graph: HNSW walked, only matching chunks kept",
            Self::CodesScan => "the matching chunks' codes scanned, the best rescored",
            Self::Store => "the store's exact search over the matching documents",
        }
    }
}

/// What a filter let through and how the dense search used it: `--explain`'s account.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct FilterPlan {
    /// Documents whose metadata passes.
    pub documents: usize,
    /// Their chunks among the searched vectors (dense searches of loaded vectors or codes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chunks: Option<usize>,
    /// Those chunks' share of all the searched vectors.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub share: Option<f64>,
    /// How the dense search found its candidates (absent for BM25, which scores every posting
    /// and keeps the matching ones: exact whatever the filter).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dense: Option<FilteredBy>,
}

impl FilterPlan {
    /// One line for the terminal.
    pub fn describe(&self) -> String {
        let mut line = format!("filter: {} document(s) pass", self.documents);
        if let (Some(chunks), Some(share)) = (self.chunks, self.share) {
            let _ = write!(line, ", {chunks} chunk(s), {:.2} % of the vectors", share * 100.0);
        }
        if let Some(by) = self.dense {
            let _ = write!(line, "; dense {}", by.describe());
        }
        line
    }
}

/// How one dense search used a filter: the matching chunks it counted and its plan.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct DenseFilter {
    pub matching: Option<usize>,
    pub total: Option<usize>,
    pub by: FilteredBy,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn membership_is_exact_and_ignores_keys_no_store_makes() {
        let set = AllowedDocs::new([DocKey(1), DocKey(64), DocKey(65), DocKey(64), DocKey(-3)]);
        assert_eq!(set.len(), 3);
        assert_eq!(set.keys(), [DocKey(1), DocKey(64), DocKey(65)]);
        for k in [1, 64, 65] {
            assert!(set.contains(DocKey(k)));
        }
        for k in [0, 2, 63, 66, 1_000_000, -3] {
            assert!(!set.contains(DocKey(k)));
        }
        assert_eq!(AllowedDocs::new([]).len(), 0);
    }

    #[test]
    fn a_cached_filter_is_answered_once_per_generation() {
        let cache = FilterCache::default();
        let asked = std::cell::Cell::new(0);
        let get = |key: &str, generation| {
            cache
                .get_or::<()>(key.into(), generation, || {
                    asked.set(asked.get() + 1);
                    Ok(AllowedDocs::new([DocKey(generation as i64)]))
                })
                .unwrap()
        };
        assert!(get("a", 1).contains(DocKey(1)));
        assert!(get("a", 1).contains(DocKey(1)));
        assert!(get("a", 2).contains(DocKey(2)), "a write's generation is answered anew");
        get("b", 2);
        assert_eq!(asked.get(), 3);
        let cache = FilterCache::default();
        for i in 0..=CACHED_FILTERS {
            cache.get_or::<()>(i.to_string(), 1, || Ok(AllowedDocs::default())).unwrap();
        }
        assert_eq!(cache.0.lock().unwrap().len(), CACHED_FILTERS, "the oldest went");
    }

    #[test]
    fn few_matches_are_scored_exactly_many_walk_the_graph() {
        // 100k chunks: 0.1 % and 1 % pre-filter, 50 % walks; no graph, no walk.
        assert_eq!(FilteredBy::choose(100, 100_000, true), FilteredBy::PreFilter);
        assert_eq!(FilteredBy::choose(1_000, 100_000, true), FilteredBy::PreFilter);
        assert_eq!(FilteredBy::choose(50_000, 100_000, true), FilteredBy::FilteredGraph);
        assert_eq!(FilteredBy::choose(50_000, 100_000, false), FilteredBy::PreFilter);
        assert_eq!(FilteredBy::choose(0, 0, true), FilteredBy::PreFilter);
    }
}
