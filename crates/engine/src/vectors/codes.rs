//! A quantised representation's rows as dense search holds them: compact codes in segments
//! ([`super::segmented`]), each row with its chunk and document. Int8 codes walk the graphs
//! built over the float32 vectors of the same rows; binary codes are scanned.

use ckeep_core::{ChunkId, DocKey};
use ckeep_index::{Codes, Hnsw, Quantization};

use super::saved::{GONE_CODES_MAGIC, SavedRows, gone_vectors};
use super::segmented::{Rows, Segment, Segmented};

/// Rows of codes with the chunk and document of each.
#[derive(Debug, Clone, Default)]
pub(crate) struct CodeRows {
    pub ids: Vec<ChunkId>,
    pub docs: Vec<DocKey>,
    pub codes: Codes,
}

/// A segment of codes.
pub(crate) type CodeSegment = Segment<CodeRows>;

/// A quantised representation's codes as of one store generation.
pub(crate) type CodeIndex = Segmented<CodeRows>;

impl Rows for CodeRows {
    fn ids(&self) -> &[ChunkId] {
        &self.ids
    }

    fn docs(&self) -> &[DocKey] {
        &self.docs
    }

    fn dim(&self) -> usize {
        self.codes.dim()
    }

    fn retain(&self, keep: impl Fn(usize) -> bool) -> Self {
        let kept = || (0..self.len()).filter(|&i| keep(i));
        Self {
            ids: kept().map(|i| self.ids[i]).collect(),
            docs: kept().map(|i| self.docs[i]).collect(),
            codes: self.codes.retain_rows(&keep),
        }
    }

    fn append(&mut self, more: &Self) -> bool {
        if !self.codes.append(&more.codes) {
            return false;
        }
        self.ids.extend_from_slice(&more.ids);
        self.docs.extend_from_slice(&more.docs);
        true
    }

    fn scan(
        &self,
        q: &[f32],
        wanted: usize,
        live: impl Fn(usize) -> bool + Sync,
        _sparse: bool,
    ) -> Vec<(u32, f32)> {
        self.codes.nearest(q, wanted, live)
    }

    fn walk(
        &self,
        graph: &Hnsw,
        q: &[f32],
        k: usize,
        ef: usize,
        floor: f32,
    ) -> Option<Vec<(u32, f32)>> {
        graph.search_codes_above(&self.codes, q, k, ef, floor)
    }

    fn walk_kept(
        &self,
        graph: &Hnsw,
        q: &[f32],
        k: usize,
        ef: usize,
        keep: impl Fn(u32) -> bool,
    ) -> Option<Vec<(u32, f32)>> {
        graph.search_codes_filtered(&self.codes, q, k, ef, keep)
    }

    fn memory(&self) -> usize {
        self.codes.memory() + 16 * self.ids.len()
    }
}

impl CodeRows {
    /// No rows, of `kind` codes of `dim` dimensions.
    pub fn empty(kind: Quantization, dim: usize) -> Self {
        Self { ids: Vec::new(), docs: Vec::new(), codes: Codes::new(kind, dim).unwrap_or_default() }
    }
}

/// Tombstones' rows are kept as their codes: the float32 vectors of rows removed before the
/// store kept a segment list are gone, and a code is all a walk needs. A float32 blob (a
/// float32 index's save) is read by encoding its vectors.
impl SavedRows for CodeRows {
    fn push_row_of(&mut self, from: &Self, r: usize) {
        if self.codes.push_row_of(&from.codes, r) {
            self.ids.push(from.ids[r]);
            self.docs.push(from.docs[r]);
        }
    }

    fn push_vector(&mut self, chunk: ChunkId, doc: DocKey, v: &[f32]) {
        if v.len() == self.codes.dim() {
            self.codes.push(v);
            self.ids.push(chunk);
            self.docs.push(doc);
        }
    }

    fn gone_blob(&self) -> Vec<u8> {
        let mut b = GONE_CODES_MAGIC.to_le_bytes().to_vec();
        b.extend((self.len() as u64).to_le_bytes());
        for (chunk, doc) in self.ids.iter().zip(&self.docs) {
            b.extend(chunk.0.to_le_bytes());
            b.extend(doc.0.to_le_bytes());
        }
        b.extend(self.codes.to_bytes());
        b
    }

    fn from_gone_blob(bytes: &[u8], like: &Self) -> Option<Self> {
        let mut rows = like.retain(|_| false);
        if let Some(vectors) = gone_vectors(bytes, like.dim()) {
            for (chunk, doc, v) in vectors {
                rows.push_vector(chunk, doc, &v);
            }
            return Some(rows);
        }
        let (magic, rest) = bytes.split_first_chunk::<4>()?;
        let (n, rest) = rest.split_first_chunk::<8>()?;
        let n = usize::try_from(u64::from_le_bytes(*n)).ok()?;
        if *magic != GONE_CODES_MAGIC.to_le_bytes() || n.checked_mul(16)? > rest.len() {
            return None;
        }
        let (keys, codes) = rest.split_at(16 * n);
        let word = |b: &[u8]| i64::from_le_bytes(b.try_into().unwrap_or_default());
        for key in keys.chunks_exact(16) {
            rows.ids.push(ChunkId(word(&key[..8])));
            rows.docs.push(DocKey(word(&key[8..])));
        }
        let codes = Codes::from_bytes(codes)?;
        // Only codes of `like`'s kind and dimension append (empty ones append anywhere).
        (codes.len() == n && rows.codes.append(&codes) && rows.codes.len() == n).then_some(rows)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use ckeep_index::HnswParams;
    use std::sync::Arc;

    /// The int8 codes of `live::tests::matrix`'s rows for chunks `ids`, and the rows.
    pub(crate) fn unit_rows(ids: &[i64], dim: usize, seed: u64) -> (CodeRows, Vec<f32>) {
        let m = crate::vectors::live::tests::matrix(ids, dim, seed);
        let codes = Codes::encode(Quantization::Int8, &m.data, dim).unwrap();
        (CodeRows { ids: m.ids, docs: m.docs, codes }, m.data)
    }

    #[test]
    fn tombstones_codes_read_back_and_float_tombstones_read_as_their_codes() {
        let (rows, data) = unit_rows(&[4, 9, 12], 8, 3);
        let like = CodeRows::empty(Quantization::Int8, 8);
        let blob = rows.gone_blob();
        let back = CodeRows::from_gone_blob(&blob, &like).unwrap();
        assert_eq!((back.ids.clone(), back.docs.clone()), (rows.ids.clone(), rows.docs.clone()));
        assert_eq!(back.codes, rows.codes);
        assert!(CodeRows::from_gone_blob(&blob[..blob.len() - 1], &like).is_none());
        assert!(CodeRows::from_gone_blob(&blob, &CodeRows::empty(Quantization::Int8, 6)).is_none());
        // A float32 index's blob of the same rows reads as the same codes.
        let m = crate::vectors::live::tests::matrix(&[4, 9, 12], 8, 3);
        assert_eq!(m.data, data);
        let floats = CodeRows::from_gone_blob(&m.gone_blob(), &like).unwrap();
        assert_eq!((floats.ids, floats.codes), (rows.ids, rows.codes));
    }

    #[test]
    fn changes_tombstone_segment_rows_and_replace_tail_rows() {
        let dim = 16;
        let ids: Vec<i64> = (1..=400).collect();
        let (rows, data) = unit_rows(&ids, dim, 1);
        let graph = Hnsw::build(&data, dim, HnswParams::default());
        let index = CodeIndex::whole(rows, 1);
        index.first().graph.set(Some(Arc::new(graph))).unwrap();
        // Chunk 3 replaced, 7 removed, 401..=410 added; then 405 replaced again, 406 removed.
        let (mut fresh, mut fresh_data) = unit_rows(&[3], dim, 2);
        let (added, added_data) = unit_rows(&(401..=410).collect::<Vec<_>>(), dim, 3);
        assert!(fresh.append(&added));
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
