//! A quantised representation as dense search holds it: segments of compact codes, each row
//! with its chunk and document. The first segment is the codes read whole, which walk the
//! store's graph once read; a server's indexer freezes the rows written since into further
//! segments, each with its own graph ([`super::segments`]). Rows written after the last freeze
//! are the tail, scanned; rows removed or replaced since their segment was made are its
//! tombstones. So a quantised store under writes walks graphs, and a change costs its own size.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, OnceLock};

use ckeep_core::{ChunkHit, ChunkId, DocKey};
use ckeep_index::{Codes, Hnsw, top_k};

/// Rows of codes with the chunk and document of each.
#[derive(Debug, Clone, Default)]
pub(crate) struct CodeRows {
    pub ids: Vec<ChunkId>,
    pub docs: Vec<DocKey>,
    pub codes: Codes,
}

impl CodeRows {
    /// Rows.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// The rows `keep` accepts, in order.
    pub fn retain(&self, keep: impl Fn(usize) -> bool) -> Self {
        let kept = || (0..self.len()).filter(|&i| keep(i));
        Self {
            ids: kept().map(|i| self.ids[i]).collect(),
            docs: kept().map(|i| self.docs[i]).collect(),
            codes: self.codes.retain_rows(&keep),
        }
    }

    /// `self` followed by `more`; `None` when their codes differ in kind or dimension.
    fn joined(mut self, more: &Self) -> Option<Self> {
        if self.ids.is_empty() {
            return Some(more.clone());
        }
        self.codes.append(&more.codes).then_some(())?;
        self.ids.extend_from_slice(&more.ids);
        self.docs.extend_from_slice(&more.docs);
        Some(self)
    }
}

/// Rows frozen together, in chunk order, with the graph their codes walk.
#[derive(Debug)]
pub(crate) struct CodeSegment {
    /// Unique among one representation's segments, so tombstones outlive merges of others.
    pub id: u64,
    pub rows: CodeRows,
    /// The HNSW graph over these rows: set when a frozen segment is made; for the segment read
    /// whole, the store's graph, read when a search first needs it (`None` when the collection
    /// is small, the codes binary, or the stored graph is not current).
    pub graph: OnceLock<Option<Arc<Hnsw>>>,
}

impl CodeSegment {
    /// The row of `chunk`, found by bisection (rows are in chunk order).
    fn row_of(&self, chunk: ChunkId) -> Option<u32> {
        self.rows.ids.binary_search(&chunk).ok().map(|r| r as u32)
    }
}

/// A quantised representation's codes as of one store generation (see the module's account).
#[derive(Debug, Clone)]
pub(crate) struct CodeIndex {
    pub segments: Vec<Arc<CodeSegment>>,
    /// Each segment's rows removed or replaced since it was made, by segment id.
    pub removed: HashMap<u64, HashSet<u32>>,
    /// Rows written since the last freeze, in the order they were read.
    pub tail: CodeRows,
}

impl CodeIndex {
    /// Codes read whole, in chunk order: one segment.
    pub fn whole(rows: CodeRows) -> Self {
        let none = rows.codes.retain_rows(|_| false);
        let segment = CodeSegment { id: 0, rows, graph: OnceLock::new() };
        let tail = CodeRows { codes: none, ..CodeRows::default() };
        Self { segments: vec![Arc::new(segment)], removed: HashMap::new(), tail }
    }

    /// The segment read whole (whose graph the store keeps).
    pub fn first(&self) -> &CodeSegment {
        &self.segments[0]
    }

    /// Live rows.
    pub fn len(&self) -> usize {
        let frozen: usize = self.segments.iter().map(|s| s.rows.len()).sum();
        frozen - self.tombstones() + self.tail.len()
    }

    /// Rows removed from segments since they were made.
    pub fn tombstones(&self) -> usize {
        self.removed.values().map(HashSet::len).sum()
    }

    /// Columns.
    pub fn dim(&self) -> usize {
        self.first().rows.codes.dim().max(self.tail.codes.dim())
    }

    /// Whether row `row` of `segment` is removed.
    pub fn is_removed(&self, segment: &CodeSegment, row: u32) -> bool {
        self.removed.get(&segment.id).is_some_and(|r| r.contains(&row))
    }

    /// The index after the writes that changed the vectors of `changed`, whose codes now are
    /// `fresh` (chunks without one were removed): their rows in segments tombstoned, in the
    /// tail replaced. `None` when `fresh` has codes of another kind or dimension.
    pub fn with_changes(&self, changed: &[ChunkId], fresh: &CodeRows) -> Option<Self> {
        if !fresh.ids.is_empty() && self.dim() != 0 && fresh.codes.dim() != self.dim() {
            return None;
        }
        let gone: HashSet<ChunkId> = changed.iter().copied().collect();
        let mut removed = self.removed.clone();
        for segment in &self.segments {
            for row in changed.iter().filter_map(|&c| segment.row_of(c)) {
                removed.entry(segment.id).or_default().insert(row);
            }
        }
        let tail = self.tail.retain(|i| !gone.contains(&self.tail.ids[i])).joined(fresh)?;
        Some(Self { segments: self.segments.clone(), removed, tail })
    }

    /// Live rows of `allowed` documents (all live rows without a filter).
    pub fn matching(&self, allowed: impl Fn(DocKey) -> bool) -> usize {
        let mut n = 0;
        for s in &self.segments {
            let live = |&(r, d): &(usize, &DocKey)| allowed(*d) && !self.is_removed(s, r as u32);
            n += s.rows.docs.iter().enumerate().filter(live).count();
        }
        n + self.tail.docs.iter().filter(|&&d| allowed(d)).count()
    }

    /// The best `wanted` live rows for `q` by the codes' estimates, best first, among the
    /// documents `keep` accepts: each segment's graph walked when it has one and `walk` says
    /// so (with tombstones and rejected rows skipped), else its codes scanned; the tail
    /// scanned. Estimates of every segment are on one scale, so the merge ranks them as one
    /// collection would.
    pub fn nearest(
        &self,
        q: &[f32],
        wanted: usize,
        ef: usize,
        keep: Option<&(dyn Fn(DocKey) -> bool + Sync)>,
        walk: bool,
    ) -> Vec<ChunkHit> {
        let mut hits = Vec::new();
        for s in &self.segments {
            let rows = &s.rows;
            let dead = self.removed.get(&s.id);
            let live = |r: usize| {
                keep.is_none_or(|k| k(rows.docs[r]))
                    && dead.is_none_or(|d| !d.contains(&(r as u32)))
            };
            let graph = s.graph.get().and_then(Option::as_ref).filter(|_| walk);
            let walked = graph.and_then(|g| match keep {
                // A few more when tombstones may take places.
                None => {
                    let asked = wanted + dead.map_or(0, HashSet::len).min(wanted);
                    let found = g.search_codes(&rows.codes, q, asked, ef.max(asked))?;
                    Some(found.into_iter().filter(|&(r, _)| live(r as usize)).collect())
                }
                Some(_) => {
                    g.search_codes_filtered(&rows.codes, q, wanted, ef, |r| live(r as usize))
                }
            });
            let found = walked.unwrap_or_else(|| rows.codes.nearest(q, wanted, live));
            hits.extend(found.into_iter().map(|(r, score)| ChunkHit {
                chunk: rows.ids[r as usize],
                doc: rows.docs[r as usize],
                score,
            }));
        }
        if !self.tail.ids.is_empty() {
            let tail = &self.tail;
            let found = tail.codes.nearest(q, wanted, |r| keep.is_none_or(|k| k(tail.docs[r])));
            hits.extend(found.into_iter().map(|(r, score)| ChunkHit {
                chunk: tail.ids[r as usize],
                doc: tail.docs[r as usize],
                score,
            }));
        }
        top_k(hits, wanted)
    }

    /// Bytes of codes and chunk ids, and of the graphs read or built.
    pub fn memory(&self) -> (usize, usize) {
        let rows = |r: &CodeRows| r.codes.memory() + 16 * r.ids.len();
        let codes = self.segments.iter().map(|s| rows(&s.rows)).sum::<usize>() + rows(&self.tail);
        let graphs =
            self.segments.iter().filter_map(|s| s.graph.get()?.as_ref()).map(|g| g.memory());
        (codes, graphs.sum())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use ckeep_index::{HnswParams, Quantization};

    /// The int8 codes of `live::tests::matrix`'s rows for chunks `ids`, and the rows.
    pub(crate) fn unit_rows(ids: &[i64], dim: usize, seed: u64) -> (CodeRows, Vec<f32>) {
        let m = crate::vectors::live::tests::matrix(ids, dim, seed);
        let codes = Codes::encode(Quantization::Int8, &m.data, dim).unwrap();
        (CodeRows { ids: m.ids, docs: m.docs, codes }, m.data)
    }

    #[test]
    fn changes_tombstone_segment_rows_and_replace_tail_rows() {
        let dim = 16;
        let ids: Vec<i64> = (1..=400).collect();
        let (rows, data) = unit_rows(&ids, dim, 1);
        let graph = Hnsw::build(&data, dim, HnswParams::default());
        let index = CodeIndex::whole(rows);
        index.first().graph.set(Some(Arc::new(graph))).unwrap();
        // Chunk 3 replaced, 7 removed, 401..=410 added; then 405 replaced again, 406 removed.
        let (mut fresh, mut fresh_data) = unit_rows(&[3], dim, 2);
        let (added, added_data) = unit_rows(&(401..=410).collect::<Vec<_>>(), dim, 3);
        fresh = fresh.joined(&added).unwrap();
        fresh_data.extend(added_data);
        let changed: Vec<ChunkId> = [3, 7].into_iter().chain(401..=410).map(ChunkId).collect();
        let once = index.with_changes(&changed, &fresh).unwrap();
        assert_eq!((once.len(), once.tombstones(), once.tail.len()), (409, 2, 11));
        let (again, again_data) = unit_rows(&[405], dim, 4);
        let twice = once.with_changes(&[ChunkId(405), ChunkId(406)], &again).unwrap();
        assert_eq!((twice.len(), twice.tail.len()), (408, 10));
        assert_eq!(twice.tail.ids.last(), Some(&ChunkId(405)));

        let row = |d: &[f32], i: usize| d[i * dim..(i + 1) * dim].to_vec();
        let best = |ix: &CodeIndex, q: &[f32], walk| ix.nearest(q, 10, 64, None, walk)[0].chunk;
        for walk in [true, false] {
            // Each current vector is its own best match; removed and replaced ones are gone.
            assert_eq!(best(&twice, &row(&fresh_data, 0), walk), ChunkId(3));
            assert_eq!(best(&twice, &row(&again_data, 0), walk), ChunkId(405));
            assert_eq!(best(&twice, &row(&fresh_data, 4), walk), ChunkId(404));
            assert_eq!(best(&twice, &row(&data, 99), walk), ChunkId(100));
            for gone in [row(&data, 6), row(&fresh_data, 6)] {
                let hits = twice.nearest(&gone, 400, 400, None, walk);
                assert!(hits.iter().all(|h| h.chunk != ChunkId(7) && h.chunk != ChunkId(406)));
                assert_eq!(hits.len(), 400, "{walk}: every live row but one can be found");
            }
            // A filter keeps only its documents, from the segment and the tail alike.
            let even = |d: DocKey| d.0 % 2 == 0;
            let hits = twice.nearest(&row(&data, 9), 20, 64, Some(&even), walk);
            assert!(hits.len() == 20 && hits.iter().all(|h| h.doc.0 % 2 == 0));
            assert_eq!(hits[0].chunk, ChunkId(10));
        }
        assert_eq!(twice.matching(|d| d.0 > 400), 9);
        // Codes of another dimension are not applied: the caller reads all again.
        let (other, _) = unit_rows(&[3], 8, 5);
        assert!(index.with_changes(&[ChunkId(3)], &other).is_none());
    }
}
