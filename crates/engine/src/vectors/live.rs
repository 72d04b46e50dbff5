//! A representation's float32 vectors as dense search holds them while the store changes:
//! segments of normalised rows ([`super::segmented`]). The first is the vectors read whole,
//! which walk the store's graph; a server's indexer freezes the rows written since into
//! segments with graphs of their own ([`super::segments`]); rows written after the last freeze
//! are scanned exactly, rows removed or replaced since their segment was made are skipped.
//!
//! A reader that holds them applies the store's vector change log
//! ([`ckeep_store::StoreRead::vector_changes`]) instead of reading every vector again after
//! each write. So a store under constant writes keeps approximate search, and an update costs
//! the size of the change.

use ckeep_core::{ChunkId, DocKey};
use ckeep_index::{Hnsw, dot, dot_all, dot_rows};
use ckeep_store::VectorMatrix;

use super::segmented::{Rows, Segmented};

/// Above this share of removed rows a segment's graph is rebuilt rather than kept: tombstones
/// still cost the walks that pass through them.
pub(crate) const REBUILD_SHARE: f64 = 0.2;

/// A representation's normalised vectors as of one store generation.
pub(crate) type DenseIndex = Segmented<VectorMatrix>;

/// Up to this many rows are scanned on the query's own thread: the tail of a store under
/// writes is this small, and a parallel scan would queue behind the ingest's work on the shared
/// thread pool.
const SCAN_ON_THREAD_ROWS: usize = 32_768;

/// Appends row `i` of `from` to `to`.
fn push_row(to: &mut VectorMatrix, from: &VectorMatrix, i: usize) {
    to.ids.push(from.ids[i]);
    to.docs.push(from.docs[i]);
    to.data.extend_from_slice(&from.data[i * from.dim..(i + 1) * from.dim]);
}

impl Rows for VectorMatrix {
    fn ids(&self) -> &[ChunkId] {
        &self.ids
    }

    fn docs(&self) -> &[DocKey] {
        &self.docs
    }

    fn dim(&self) -> usize {
        self.dim
    }

    fn retain(&self, keep: impl Fn(usize) -> bool) -> Self {
        let mut m = VectorMatrix { dim: self.dim, ..VectorMatrix::default() };
        for i in (0..self.len()).filter(|&i| keep(i)) {
            push_row(&mut m, self, i);
        }
        m
    }

    fn append(&mut self, more: &Self) -> bool {
        if self.dim != more.dim && !(self.is_empty() && self.dim == 0) {
            return false;
        }
        self.dim = more.dim;
        for i in 0..more.len() {
            push_row(self, more, i);
        }
        true
    }

    /// Every live row's exact score (the merge keeps the best): a dense scan of all rows, or,
    /// when `sparse`, only the live ones scored.
    fn scan(
        &self,
        q: &[f32],
        _wanted: usize,
        live: impl Fn(usize) -> bool + Sync,
        sparse: bool,
    ) -> Vec<(u32, f32)> {
        if self.is_empty() {
            return Vec::new(); // also of no dimension (a store read before any vector)
        }
        let dim = self.dim;
        if sparse {
            let row = |r: usize| &self.data[r * dim..(r + 1) * dim];
            return (0..self.len())
                .filter(|&r| live(r))
                .map(|r| (r as u32, dot(row(r), q)))
                .collect();
        }
        let scores = if self.len() <= SCAN_ON_THREAD_ROWS {
            let mut scores = Vec::new();
            dot_rows(&self.data, dim, q, &mut scores);
            scores
        } else {
            dot_all(&self.data, dim, q)
        };
        let scored = scores.into_iter().enumerate().filter(|&(r, _)| live(r));
        scored.map(|(r, score)| (r as u32, score)).collect()
    }

    fn walk(
        &self,
        graph: &Hnsw,
        q: &[f32],
        k: usize,
        ef: usize,
        floor: f32,
    ) -> Option<Vec<(u32, f32)>> {
        (graph.len() == self.len()).then(|| graph.search_above(&self.data, q, k, ef, floor))
    }

    fn walk_kept(
        &self,
        graph: &Hnsw,
        q: &[f32],
        k: usize,
        ef: usize,
        keep: impl Fn(u32) -> bool,
    ) -> Option<Vec<(u32, f32)>> {
        (graph.len() == self.len()).then(|| graph.search_filtered(&self.data, q, k, ef, keep))
    }

    fn memory(&self) -> usize {
        4 * self.data.len() + 16 * self.ids.len()
    }
}

impl DenseIndex {
    /// The live rows in chunk order (how the store reads them, so a graph built over them
    /// carries the stamp a fresh read would).
    pub fn sorted_matrix(&self) -> VectorMatrix {
        let mut live: Vec<(&VectorMatrix, usize)> = Vec::with_capacity(self.len());
        for s in &self.segments {
            live.extend(self.live_rows(s).map(|r| (&*s.rows, r)));
        }
        live.extend((0..self.tail.len()).map(|i| (&self.tail, i)));
        live.sort_unstable_by_key(|&(m, i)| m.ids[i]);
        let mut m = VectorMatrix { dim: self.dim(), ..VectorMatrix::default() };
        for (from, i) in live {
            push_row(&mut m, from, i);
        }
        m
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use ckeep_core::ChunkHit;
    use ckeep_index::HnswParams;
    use std::sync::Arc;

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
    fn changes_replace_remove_and_add_rows_through_the_graph_and_the_scan() {
        let ids: Vec<i64> = (1..=300).collect();
        let base = matrix(&ids, 8, 1);
        let index = DenseIndex::whole(base.clone(), 5);
        let graph = Hnsw::build(&base.data, 8, HnswParams::default());
        index.first().graph.set(Some(Arc::new(graph))).unwrap();
        assert!(index.is_pure());
        // Chunk 3 replaced, chunk 7 removed, chunks 301..=310 added.
        let mut fresh = matrix(&[3], 8, 2);
        assert!(fresh.append(&matrix(&(301..=310).collect::<Vec<_>>(), 8, 3)));
        let changed: Vec<ChunkId> = [3, 7].into_iter().chain(301..=310).map(ChunkId).collect();
        let changed_index = index.with_changes(&changed, &fresh).unwrap();
        assert_eq!(changed_index.len(), 300 - 1 + 10);
        // Two rows of the first segment tombstoned, eleven written beside it.
        assert!(!changed_index.is_pure());
        let live = changed_index.sorted_matrix();
        assert_eq!(live.len(), 309);
        assert!(!live.ids.contains(&ChunkId(7)));
        let row3 = live.ids.iter().position(|&c| c == ChunkId(3)).unwrap();
        assert_eq!(&live.data[row3 * 8..row3 * 8 + 8], &fresh.data[..8], "the new vector of 3");

        // Each fresh row is its own best match, and the removed chunk is never returned,
        // through the graph or the scan.
        for walk in [true, false] {
            for i in 0..fresh.len() {
                let hits =
                    changed_index.nearest(&fresh.data[i * 8..(i + 1) * 8], 10, 64, None, walk);
                assert_eq!(best(&hits), fresh.ids[i]);
            }
            let old7 = &base.data[6 * 8..7 * 8];
            let hits = changed_index.nearest(old7, 10, 64, None, walk);
            assert!(hits.iter().all(|h| h.chunk != ChunkId(7)));
            let old3 = &base.data[2 * 8..3 * 8];
            let all = changed_index.nearest(old3, 300, 300, None, walk);
            let hit3 = all.into_iter().find(|h| h.chunk == ChunkId(3));
            assert!(hit3.is_none_or(|h| h.score < 0.999), "the old vector of 3 is gone");
            // A filter keeps only its documents, exactly scored.
            let even = |d: DocKey| d.0 % 2 == 0;
            let hits = changed_index.nearest(&base.data[9 * 8..10 * 8], 20, 64, Some(&even), walk);
            assert!(hits.len() == 20 && hits.iter().all(|h| h.doc.0 % 2 == 0));
            assert_eq!(hits[0].chunk, ChunkId(10));
        }
        // A change of dimension is not applied.
        assert!(index.with_changes(&[ChunkId(3)], &matrix(&[3], 4, 2)).is_none());
    }

    #[test]
    fn vectors_written_after_an_empty_read_are_searched() {
        let empty = DenseIndex::whole(VectorMatrix::default(), 1);
        assert_eq!((empty.len(), empty.dim()), (0, 0));
        let fresh = matrix(&[1, 2, 3], 8, 4);
        let ids = [ChunkId(1), ChunkId(2), ChunkId(3)];
        let index = empty.with_changes(&ids, &fresh).unwrap();
        assert_eq!((index.len(), index.dim()), (3, 8));
        let hits = index.nearest(&fresh.data[8..16], 10, 64, None, true);
        assert_eq!((hits.len(), best(&hits)), (3, ChunkId(2)));
        assert_eq!(index.sorted_matrix().ids, ids);
    }
}
