//! A representation's vectors as the engine searches them while the store changes: a base
//! matrix with its HNSW graph, the rows written since (scanned exactly) and the base rows
//! whose vectors were removed or replaced since (skipped).
//!
//! A reader that holds them applies the store's vector change log
//! ([`ckeep_store::StoreRead::vector_changes`]) instead of reading every vector again after
//! each write; a server's indexer folds the new rows into the graph (HNSW inserts and
//! tombstones, [`DenseIndex::absorbed`]) and rebuilds the graph only when removed rows pass
//! [`REBUILD_SHARE`] of it. So a store under constant writes keeps approximate search.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use ckeep_core::{ChunkHit, ChunkId};
use ckeep_index::{Hnsw, dot, dot_all, dot_rows};
use ckeep_store::VectorMatrix;

use crate::filtered::{AllowedDocs, DenseFilter, FilteredBy};

/// Above this share of removed base rows the graph is rebuilt rather than updated: tombstones
/// still cost the walks that pass through them.
pub(crate) const REBUILD_SHARE: f64 = 0.2;

/// A representation's normalised vectors as of one store generation.
#[derive(Debug, Clone)]
pub(crate) struct DenseIndex {
    /// The rows the graph indexes, including those removed since (see `removed`).
    pub base: Arc<VectorMatrix>,
    /// The generation `base` was read (or last absorbed) at: its graph is cached under it.
    pub base_generation: u64,
    /// Each chunk's latest row in `base` (which `removed` may list since).
    rows: Arc<HashMap<ChunkId, u32>>,
    /// Rows of chunks whose vectors were written after `base_generation`.
    pub tail: VectorMatrix,
    /// Rows of `base` whose vectors were removed or replaced since they were read.
    removed: HashSet<u32>,
    /// How many rows `base` had when it was last read whole or compacted: the rows appended
    /// since are the graph's inserts.
    compacted_rows: usize,
}

/// Up to this many rows are scanned on the query's own thread: the tail of a store under
/// writes is this small, and a parallel scan would queue behind the ingest's work on the shared
/// thread pool.
const SCAN_ON_THREAD_ROWS: usize = 32_768;

/// Hits of `m`'s rows scored against `q`, but for the rows `skip` says.
fn scan_rows(m: &VectorMatrix, q: &[f32], skip: impl Fn(usize) -> bool) -> Vec<ChunkHit> {
    if m.is_empty() {
        return Vec::new(); // also of no dimension (a store read before any vector)
    }
    let scores = if m.len() <= SCAN_ON_THREAD_ROWS {
        let mut scores = Vec::new();
        dot_rows(&m.data, m.dim, q, &mut scores);
        scores
    } else {
        dot_all(&m.data, m.dim, q)
    };
    scores
        .into_iter()
        .enumerate()
        .filter(|&(i, _)| !skip(i))
        .map(|(i, score)| ChunkHit { chunk: m.ids[i], doc: m.docs[i], score })
        .collect()
}

/// Appends row `i` of `from` to `to`.
fn push_row(to: &mut VectorMatrix, from: &VectorMatrix, i: usize) {
    to.ids.push(from.ids[i]);
    to.docs.push(from.docs[i]);
    to.data.extend_from_slice(&from.data[i * from.dim..(i + 1) * from.dim]);
}

impl DenseIndex {
    /// All of a representation's vectors, read at `generation`.
    pub fn full(base: VectorMatrix, generation: u64) -> Self {
        let rows = base.ids.iter().enumerate().map(|(i, &id)| (id, i as u32)).collect();
        let tail = VectorMatrix { dim: base.dim, ..VectorMatrix::default() };
        Self {
            compacted_rows: base.len(),
            base: Arc::new(base),
            base_generation: generation,
            rows: Arc::new(rows),
            tail,
            removed: HashSet::new(),
        }
    }

    /// Columns (0 when empty).
    pub fn dim(&self) -> usize {
        self.base.dim.max(self.tail.dim)
    }

    /// Live rows.
    pub fn len(&self) -> usize {
        self.base.len() - self.removed.len() + self.tail.len()
    }

    /// Whether the base is all there is: no rows written or removed since it was read.
    pub fn is_pure(&self) -> bool {
        self.tail.is_empty() && self.removed.is_empty()
    }

    /// The index after the writes that changed the vectors of `changed`, whose vectors now
    /// are `fresh` (normalised; chunks without one were removed). `None` when `fresh` has
    /// another dimension: then the caller reads every vector again.
    pub fn with_changes(&self, changed: &[ChunkId], fresh: &VectorMatrix) -> Option<Self> {
        if fresh.is_empty() && changed.is_empty() {
            return Some(self.clone());
        }
        if !fresh.is_empty() && self.dim() != 0 && fresh.dim != self.dim() {
            return None;
        }
        let changed_set: HashSet<ChunkId> = changed.iter().copied().collect();
        let mut removed = self.removed.clone();
        removed.extend(changed.iter().filter_map(|c| self.rows.get(c).copied()));
        let dim = self.dim().max(fresh.dim);
        let mut tail = VectorMatrix { dim, ..VectorMatrix::default() };
        for i in 0..self.tail.len() {
            if !changed_set.contains(&self.tail.ids[i]) {
                push_row(&mut tail, &self.tail, i);
            }
        }
        for i in 0..fresh.len() {
            push_row(&mut tail, fresh, i);
        }
        Some(Self {
            base: Arc::clone(&self.base),
            base_generation: self.base_generation,
            rows: Arc::clone(&self.rows),
            tail,
            removed,
            compacted_rows: self.compacted_rows,
        })
    }

    /// Every live row scored against `q`; the base searched through `graph` for `candidates`
    /// when given (a few more when removed rows may take places), the tail always scanned.
    pub fn search(
        &self,
        q: &[f32],
        graph: Option<&Hnsw>,
        candidates: usize,
        ef: usize,
    ) -> Vec<ChunkHit> {
        let base = &self.base;
        let mut hits = match graph {
            Some(g) => {
                let asked = candidates + self.removed.len().min(candidates);
                g.search(&base.data, q, asked, ef.max(asked))
                    .into_iter()
                    .filter(|(row, _)| !self.removed.contains(row))
                    .map(|(row, score)| ChunkHit {
                        chunk: base.ids[row as usize],
                        doc: base.docs[row as usize],
                        score,
                    })
                    .collect()
            }
            None => scan_rows(base, q, |i| self.removed.contains(&(i as u32))),
        };
        if !self.tail.is_empty() {
            hits.extend(scan_rows(&self.tail, q, |_| false));
        }
        hits
    }

    /// The live rows of `allowed` documents scored against `q`, by the plan
    /// [`FilteredBy::choose`] picks for how many match: exactly, or (many matching rows and a
    /// `graph`) the best `candidates` found by a filtered walk of the base; the tail is
    /// always scanned.
    pub fn search_allowed(
        &self,
        q: &[f32],
        graph: Option<&Hnsw>,
        candidates: usize,
        ef: usize,
        allowed: &AllowedDocs,
    ) -> (Vec<ChunkHit>, DenseFilter) {
        let base = &self.base;
        let live =
            |row: usize| allowed.contains(base.docs[row]) && !self.removed.contains(&(row as u32));
        let base_matching = (0..base.len()).filter(|&r| live(r)).count();
        let tail_matching = self.tail.docs.iter().filter(|&&d| allowed.contains(d)).count();
        let matching = base_matching + tail_matching;
        let by = FilteredBy::choose(matching, self.len(), graph.is_some());
        let hit = |row: u32, score: f32| ChunkHit {
            chunk: base.ids[row as usize],
            doc: base.docs[row as usize],
            score,
        };
        let walked = graph.filter(|_| by == FilteredBy::FilteredGraph).map(|g| {
            g.search_filtered(&base.data, q, candidates, ef.max(candidates), |r| live(r as usize))
        });
        let mut hits: Vec<ChunkHit> = if let Some(found) = walked {
            found.into_iter().map(|(row, score)| hit(row, score)).collect()
        } else {
            let dim = base.dim;
            (0..base.len())
                .filter(|&r| live(r))
                .map(|r| hit(r as u32, dot(&base.data[r * dim..(r + 1) * dim], q)))
                .collect()
        };
        if tail_matching > 0 {
            hits.extend(scan_rows(&self.tail, q, |i| !allowed.contains(self.tail.docs[i])));
        }
        (hits, DenseFilter { matching: Some(matching), total: Some(self.len()), by })
    }

    /// The live rows in chunk order (how the store reads them, so a graph built over them
    /// carries the stamp a fresh read would).
    pub fn sorted_matrix(&self) -> VectorMatrix {
        let base = (0..self.base.len())
            .filter(|&i| !self.removed.contains(&(i as u32)))
            .map(|i| (&*self.base, i));
        let mut live: Vec<(&VectorMatrix, usize)> =
            base.chain((0..self.tail.len()).map(|i| (&self.tail, i))).collect();
        live.sort_unstable_by_key(|&(m, i)| m.ids[i]);
        let mut m = VectorMatrix { dim: self.dim(), ..VectorMatrix::default() };
        for (from, i) in live {
            push_row(&mut m, from, i);
        }
        m
    }

    /// Whether the graph should be rebuilt rather than updated.
    pub fn needs_rebuild(&self) -> bool {
        self.removed.len() as f64 > REBUILD_SHARE * self.base.len() as f64
    }

    /// The index with its tail folded into the base, read as of `generation`, and `graph`
    /// (the base's) updated to match: tail rows inserted, removed rows tombstoned.
    pub fn absorbed(&self, graph: &Hnsw, generation: u64) -> (Self, Hnsw) {
        let mut base = VectorMatrix::clone(&self.base);
        let mut rows = HashMap::clone(&self.rows);
        let mut graph = graph.clone();
        for &row in &self.removed {
            graph.delete(&base.data, row);
        }
        for i in 0..self.tail.len() {
            let row = base.len() as u32;
            push_row(&mut base, &self.tail, i);
            rows.insert(self.tail.ids[i], row);
            graph.insert(&base.data, row);
        }
        let tail = VectorMatrix { dim: base.dim, ..VectorMatrix::default() };
        let index = Self {
            base: Arc::new(base),
            base_generation: generation,
            rows: Arc::new(rows),
            tail,
            removed: self.removed.clone(),
            compacted_rows: self.compacted_rows,
        };
        (index, graph)
    }

    /// How many rows the graph took in place (inserted or tombstoned) since the base was read
    /// whole or compacted.
    pub fn changes_in_place(&self) -> usize {
        self.base.len() - self.compacted_rows + self.removed.len()
    }

    /// The live rows of an absorbed index (no tail) in the order a whole read gives (by chunk
    /// id), and `graph` (its base's) over them: tombstones dropped, rows renumbered. The pair
    /// is what a reader would load, so the graph can be persisted for it.
    pub fn compacted(&self, graph: &Hnsw) -> (VectorMatrix, Hnsw) {
        debug_assert!(self.tail.is_empty(), "absorb the tail first");
        let mut order: Vec<u32> =
            (0..self.base.len() as u32).filter(|row| !self.removed.contains(row)).collect();
        order.sort_unstable_by_key(|&row| self.base.ids[row as usize]);
        let mut m = VectorMatrix { dim: self.base.dim, ..VectorMatrix::default() };
        for &row in &order {
            push_row(&mut m, &self.base, row as usize);
        }
        (m, graph.compacted(&order))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use ckeep_core::DocKey;
    use ckeep_index::HnswParams;

    /// Unit rows of `dim` for chunks `ids` (documents of the same number), from `seed`.
    pub(crate) fn matrix(ids: &[i64], dim: usize, seed: u64) -> VectorMatrix {
        let mut state = seed;
        let mut data = Vec::with_capacity(ids.len() * dim);
        for _ in 0..ids.len() * dim {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            data.push(((state >> 33) as f32 / (1u64 << 31) as f32) - 0.5);
        }
        for row in data.chunks_mut(dim) {
            ckeep_embed::normalize(row);
        }
        VectorMatrix {
            ids: ids.iter().map(|&i| ChunkId(i)).collect(),
            docs: ids.iter().map(|&i| DocKey(i)).collect(),
            dim,
            data,
        }
    }

    fn best(hits: &[ChunkHit]) -> ChunkId {
        hits.iter().max_by(|a, b| a.score.total_cmp(&b.score)).unwrap().chunk
    }

    #[test]
    fn changes_replace_remove_and_add_rows_and_absorbing_keeps_the_answers() {
        let ids: Vec<i64> = (1..=300).collect();
        let base = matrix(&ids, 8, 1);
        let index = DenseIndex::full(base.clone(), 5);
        // Chunk 3 replaced, chunk 7 removed, chunks 301..=310 added.
        let mut fresh = matrix(&[3], 8, 2);
        let added = matrix(&(301..=310).collect::<Vec<_>>(), 8, 3);
        for i in 0..added.len() {
            push_row(&mut fresh, &added, i);
        }
        let changed: Vec<ChunkId> = [3, 7].into_iter().chain(301..=310).map(ChunkId).collect();
        let changed_index = index.with_changes(&changed, &fresh).unwrap();
        assert_eq!(changed_index.len(), 300 - 1 + 10);
        assert!(!changed_index.is_pure() && index.is_pure());
        let live = changed_index.sorted_matrix();
        assert_eq!(live.len(), 309);
        assert!(!live.ids.contains(&ChunkId(7)));
        let row3 = live.ids.iter().position(|&c| c == ChunkId(3)).unwrap();
        assert_eq!(&live.data[row3 * 8..row3 * 8 + 8], &fresh.data[..8], "the new vector of 3");

        // Each fresh row is its own best match, and the removed chunk is never returned,
        // through the graph or the scan, before and after absorbing.
        let graph = Hnsw::build(&base.data, 8, HnswParams::default());
        let (absorbed, updated) = changed_index.absorbed(&graph, 9);
        assert!(absorbed.tail.is_empty() && absorbed.base_generation == 9);
        // Two rows tombstoned (3's old one, 7), eleven inserted (3's new one, 301..=310).
        assert_eq!(absorbed.changes_in_place(), 13);
        // Compacted: the rows a whole read gives, in its order, and a graph over them alone.
        let (rows, compact_graph) = absorbed.compacted(&updated);
        assert_eq!((rows.ids.clone(), rows.data.clone()), (live.ids.clone(), live.data.clone()));
        assert_eq!((compact_graph.len(), compact_graph.deleted_count()), (309, 0));
        let compacted = DenseIndex::full(rows, 9);
        assert_eq!(compacted.changes_in_place(), 0);
        for (ix, g) in [
            (&changed_index, Some(&graph)),
            (&changed_index, None),
            (&absorbed, Some(&updated)),
            (&compacted, Some(&compact_graph)),
        ] {
            for i in 0..fresh.len() {
                let hits = ix.search(&fresh.data[i * 8..(i + 1) * 8], g, 10, 64);
                assert_eq!(best(&hits), fresh.ids[i]);
            }
            let old7 = &base.data[6 * 8..7 * 8];
            assert!(ix.search(old7, g, 10, 64).iter().all(|h| h.chunk != ChunkId(7)));
            let old3 = &base.data[2 * 8..3 * 8];
            let hit3 = ix.search(old3, g, 300, 300).into_iter().find(|h| h.chunk == ChunkId(3));
            assert!(hit3.is_none_or(|h| h.score < 0.999), "the old vector of 3 is gone");
        }
        // A change of dimension is not applied.
        assert!(index.with_changes(&[ChunkId(3)], &matrix(&[3], 4, 2)).is_none());
    }

    #[test]
    fn vectors_written_after_an_empty_read_are_searched() {
        let empty = DenseIndex::full(VectorMatrix::default(), 1);
        assert_eq!((empty.len(), empty.dim()), (0, 0));
        let fresh = matrix(&[1, 2, 3], 8, 4);
        let ids = [ChunkId(1), ChunkId(2), ChunkId(3)];
        let index = empty.with_changes(&ids, &fresh).unwrap();
        assert_eq!((index.len(), index.dim()), (3, 8));
        let hits = index.search(&fresh.data[8..16], None, 10, 64);
        assert_eq!((hits.len(), best(&hits)), (3, ChunkId(2)));
        assert_eq!(index.sorted_matrix().ids, ids);
    }
}
