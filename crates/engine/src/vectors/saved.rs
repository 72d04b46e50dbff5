//! Segments as the store keeps them, so a save writes only what changed and a restart finds
//! the graphs the writes made. The whole graph ([`super::blob`]) is the first segment's; each
//! frozen segment is a blob of its own in the same format (stamp, chunk ids, graph); the rows
//! tombstoned since a save go in a small blob per save, as float32 vectors or int8 codes,
//! whichever the index held (a removed chunk's vector leaves the store, yet the graph that
//! holds its row still walks through it); and a list names them all, with each segment's
//! tombstones. Float32 vectors and int8 codes share one list and its graphs, since codes walk
//! the graphs built over the floats: [`SavedRows`] is what differs. The list is written last in the same
//! transaction as the blobs it names, so a process stopped at any point leaves the old list or
//! the new one. It names the whole graph it extends by its stamp: a new whole graph ends it.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use ckeep_core::{ChunkId, DocKey};
use ckeep_index::Hnsw;
use ckeep_store::{StoreRead, VectorMatrix};

use super::VectorIndex;
use super::blob::VectorIndexBuild;
use super::blob::{GraphBlobName, blob_parts, graph_blob, is_current, stamp_of};
use super::live::DenseIndex;
use super::segmented::{Rows, Segment, Segmented};
use crate::error::Result;

/// Opens a segment list (and tells it from other blobs).
const LIST_MAGIC: u32 = 0x314c_4753; // "SGL1"
/// Opens a blob of tombstoned rows' vectors.
const GONE_MAGIC: u32 = 0x3145_4e47; // "GNE1"
/// Opens a blob of tombstoned rows' int8 codes.
pub(crate) const GONE_CODES_MAGIC: u32 = 0x3143_4e47; // "GNC1"

/// What the store keeps of a representation's segments beyond its whole graph.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct SegmentList {
    /// The stamp of the whole graph the segments extend.
    pub base: [u8; 32],
    /// The frozen segments saved, by id.
    pub segments: Vec<u64>,
    /// Each segment's tombstones (segment 0: the whole graph's), as chunk ids.
    pub removed: Vec<(u64, Vec<ChunkId>)>,
    /// The numbers of the blobs that hold the tombstoned rows' vectors.
    pub gone: Vec<u64>,
}

/// Little-endian fields read in turn; `None` once the bytes run out.
struct Fields<'a>(&'a [u8]);

impl Fields<'_> {
    fn take<const N: usize>(&mut self) -> Option<[u8; N]> {
        let (head, rest) = self.0.split_at_checked(N)?;
        self.0 = rest;
        head.try_into().ok()
    }

    fn u64(&mut self) -> Option<u64> {
        self.take().map(u64::from_le_bytes)
    }

    /// A count of items of at least `size` bytes each, bounded by the bytes left.
    fn count(&mut self, size: usize) -> Option<usize> {
        let n = usize::try_from(self.u64()?).ok()?;
        (n.checked_mul(size)? <= self.0.len()).then_some(n)
    }
}

impl SegmentList {
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut b = LIST_MAGIC.to_le_bytes().to_vec();
        b.extend(self.base);
        let mut put = |v: u64| b.extend(v.to_le_bytes());
        put(self.segments.len() as u64);
        for &s in &self.segments {
            put(s);
        }
        put(self.removed.len() as u64);
        for (segment, chunks) in &self.removed {
            put(*segment);
            put(chunks.len() as u64);
            for c in chunks {
                put(c.0 as u64);
            }
        }
        put(self.gone.len() as u64);
        for &g in &self.gone {
            put(g);
        }
        b
    }

    /// `None` when malformed.
    pub fn from_bytes(bytes: &[u8]) -> Option<Self> {
        let mut f = Fields(bytes);
        if f.take()? != LIST_MAGIC.to_le_bytes() {
            return None;
        }
        let base = f.take()?;
        let n = f.count(8)?;
        let segments = (0..n).map(|_| f.u64()).collect::<Option<_>>()?;
        let mut removed = Vec::new();
        for _ in 0..f.count(16)? {
            let segment = f.u64()?;
            let chunks = (0..f.count(8)?).map(|_| f.u64().map(|c| ChunkId(c as i64)));
            removed.push((segment, chunks.collect::<Option<_>>()?));
        }
        let gone = (0..f.count(8)?).map(|_| f.u64()).collect::<Option<_>>()?;
        f.0.is_empty().then_some(Self { base, segments, removed, gone })
    }
}

/// Rows a saved segment is put together from again: float32 vectors, or int8 codes.
pub(crate) trait SavedRows: Rows {
    /// Appends row `r` of `from` (rows of the same kind and dimension).
    fn push_row_of(&mut self, from: &Self, r: usize);
    /// Appends the row of the normalised float32 vector `v`, as these rows hold it.
    fn push_vector(&mut self, chunk: ChunkId, doc: DocKey, v: &[f32]);
    /// The blob that keeps these rows as tombstones' rows.
    fn gone_blob(&self) -> Vec<u8>;
    /// The rows of a blob of tombstones' rows, as rows like `like` (its kind and dimension);
    /// `None` when malformed or of another kind or dimension.
    fn from_gone_blob(bytes: &[u8], like: &Self) -> Option<Self>;

    /// The first `n` rows, and the rest.
    fn split_front(self, n: usize) -> (Self, Self) {
        (self.retain(|r| r < n), self.retain(|r| r >= n))
    }
}

impl SavedRows for VectorMatrix {
    fn push_row_of(&mut self, from: &Self, r: usize) {
        self.push_vector(from.ids[r], from.docs[r], from.row(r));
    }

    fn push_vector(&mut self, chunk: ChunkId, doc: DocKey, v: &[f32]) {
        self.ids.push(chunk);
        self.docs.push(doc);
        self.data.extend_from_slice(v);
    }

    fn gone_blob(&self) -> Vec<u8> {
        let mut b = GONE_MAGIC.to_le_bytes().to_vec();
        b.reserve(16 + self.len() * (16 + 4 * self.dim));
        b.extend((self.dim as u64).to_le_bytes());
        b.extend((self.len() as u64).to_le_bytes());
        for r in 0..self.len() {
            b.extend(self.ids[r].0.to_le_bytes());
            b.extend(self.docs[r].0.to_le_bytes());
            for x in self.row(r) {
                b.extend(x.to_le_bytes());
            }
        }
        b
    }

    fn from_gone_blob(bytes: &[u8], like: &Self) -> Option<Self> {
        let mut rows = VectorMatrix { dim: like.dim, ..VectorMatrix::default() };
        for (chunk, doc, v) in gone_vectors(bytes, like.dim)? {
            rows.push_vector(chunk, doc, &v);
        }
        Some(rows)
    }

    /// Split without a copy of the first rows (a million rows are 1.5 GB).
    fn split_front(mut self, n: usize) -> (Self, Self) {
        let rest = VectorMatrix {
            ids: self.ids.split_off(n),
            docs: self.docs.split_off(n),
            dim: self.dim,
            data: self.data.split_off(n * self.dim),
        };
        (self, rest)
    }
}

/// The rows `(chunk, document, vector)` of a float32 tombstones' blob of dimension `dim`;
/// `None` when malformed or of another dimension.
pub(crate) fn gone_vectors(bytes: &[u8], dim: usize) -> Option<Vec<(ChunkId, DocKey, Vec<f32>)>> {
    let mut f = Fields(bytes);
    if f.take()? != GONE_MAGIC.to_le_bytes() || f.u64()? != dim as u64 {
        return None;
    }
    let n = f.count(16 + 4 * dim)?;
    let mut rows = Vec::with_capacity(n);
    for _ in 0..n {
        let (chunk, doc) = (ChunkId(f.u64()? as i64), DocKey(f.u64()? as i64));
        let v = (0..dim).map(|_| f.take().map(f32::from_le_bytes)).collect::<Option<_>>()?;
        rows.push((chunk, doc, v));
    }
    f.0.is_empty().then_some(rows)
}

/// The saved segments of a representation, read back: the whole graph's chunk ids, each
/// frozen segment's ids and graph, and the tombstoned rows (those removed since the save
/// among them).
#[derive(Debug)]
pub(crate) struct SavedSegments<R> {
    pub list: SegmentList,
    pub base: Vec<ChunkId>,
    pub frozen: Vec<(u64, Vec<ChunkId>, Hnsw)>,
    /// Tombstoned rows as their segments hold them, and each one's row among them by chunk.
    pub gone: R,
    pub gone_at: HashMap<ChunkId, usize>,
    /// The chunks of `gone` removed since the list was saved ([`StoreRead::removed_vectors`]).
    pub since: HashSet<ChunkId>,
}

impl<R: SavedRows> SavedSegments<R> {
    /// Adds the tombstoned rows `rows`, but not those known already.
    fn add_gone(&mut self, rows: &R) {
        for (r, &chunk) in rows.ids().iter().enumerate() {
            if !self.gone_at.contains_key(&chunk) {
                self.gone_at.insert(chunk, self.gone.len());
                self.gone.push_row_of(rows, r);
            }
        }
    }
}

impl<S: StoreRead> VectorIndex<'_, S> {
    /// The segment list stored for representation `name`, if any and readable.
    pub(crate) fn segment_list(&self, name: &str) -> Result<Option<SegmentList>> {
        let blob = self.store.aux(&GraphBlobName(name).list())?;
        Ok(blob.as_deref().and_then(SegmentList::from_bytes))
    }

    /// The segments saved for representation `name` (rows like `like`: its kind and
    /// dimension), read back; `None` when there are none or any part is missing, damaged or of
    /// another kind or dimension (then the vectors are read whole, and the next save starts the
    /// segments again).
    pub(crate) fn saved_segments<R: SavedRows>(
        &self,
        name: &str,
        like: &R,
    ) -> Result<Option<SavedSegments<R>>> {
        let dim = like.dim();
        let Some(list) = self.segment_list(name)? else { return Ok(None) };
        let blobs = GraphBlobName(name);
        let ids_of = |blob: &[u8]| {
            let (ids, _) = blob_parts(blob)?;
            ids.filter(|ids| is_current(blob, &stamp_of(dim, ids)))
        };
        let Some(base) = self.store.aux(&blobs.to_string())? else { return Ok(None) };
        let Some(base_ids) = ids_of(&base).filter(|_| is_current(&base, &list.base)) else {
            return Ok(None);
        };
        let mut saved = SavedSegments {
            list: SegmentList::default(),
            base: base_ids,
            frozen: Vec::new(),
            gone: like.retain(|_| false),
            gone_at: HashMap::new(),
            since: HashSet::new(),
        };
        for &id in &list.segments {
            let Some(blob) = self.store.aux(&blobs.segment(id))? else { return Ok(None) };
            let graph = blob_parts(&blob).and_then(|(_, g)| Hnsw::from_bytes(g));
            let Some((ids, graph)) = ids_of(&blob).zip(graph) else { return Ok(None) };
            if graph.len() != ids.len() {
                return Ok(None);
            }
            saved.frozen.push((id, ids, graph));
        }
        for &n in &list.gone {
            let blob = self.store.aux(&blobs.gone(n))?;
            let Some(rows) = blob.and_then(|b| R::from_gone_blob(&b, like)) else {
                return Ok(None);
            };
            saved.add_gone(&rows);
        }
        // Rows removed since the last save, normalised as when they were read.
        let mut removed = like.retain(|_| false);
        let mut row = Vec::new();
        self.store.removed_vectors(name, &mut |chunk, doc, v| {
            if v.len() == dim && !saved.gone_at.contains_key(&chunk) {
                row.clear();
                row.extend_from_slice(v);
                ckeep_embed::normalize(&mut row);
                removed.push_vector(chunk, doc, &row);
            }
        })?;
        saved.since = removed.ids().iter().copied().collect();
        saved.add_gone(&removed);
        saved.list = list;
        Ok(Some(saved))
    }

    /// The vectors of stored representation `name`, read whole at `generation` (`m`, in chunk
    /// order), in the segments the store saved for them: the chunks a saved segment holds
    /// live are its rows again, its other rows tombstones, and the rest the tail. Read whole
    /// (one segment) when nothing was saved or it does not fit the vectors.
    pub(crate) fn open_dense(
        &self,
        name: &str,
        m: VectorMatrix,
        generation: u64,
    ) -> Result<DenseIndex> {
        self.open_segmented(name, m, generation)
    }

    /// Rows `m` of stored representation `name` (float32 vectors or int8 codes), read whole
    /// at `generation` in chunk order, in the segments the store saved for them (see
    /// [`VectorIndex::open_dense`]).
    pub(crate) fn open_segmented<R: SavedRows>(
        &self,
        name: &str,
        m: R,
        generation: u64,
    ) -> Result<Segmented<R>> {
        let saved = if m.len() == 0 { None } else { self.saved_segments(name, &m)? };
        Ok(match saved {
            Some(saved) => assemble(m, saved, generation),
            None => Segmented::whole(m, generation),
        })
    }

    /// What a save of `index` (the vectors of stored representation `name` as of store
    /// generation `generation`, whose first segment's graph the store keeps) writes beyond
    /// what the store has: the frozen segments not saved yet, the vectors of rows tombstoned
    /// since, and the list; merged-away segments removed. `None` when the store is as `index`
    /// would leave it. Segments without a graph are not saved: their rows come back as the
    /// tail.
    pub(crate) fn segment_save<R: SavedRows>(
        &self,
        name: &str,
        index: &Segmented<R>,
        generation: u64,
    ) -> Result<Option<VectorIndexBuild>> {
        let first = &index.first().rows;
        let base = stamp_of(first.dim(), first.ids());
        let old = self.segment_list(name)?.filter(|l| l.base == base).unwrap_or_default();
        let blobs = GraphBlobName(name);
        let was_removed: HashMap<u64, HashSet<ChunkId>> =
            old.removed.iter().map(|(s, c)| (*s, c.iter().copied().collect())).collect();
        let mut list = SegmentList { base, gone: old.gone.clone(), ..SegmentList::default() };
        let mut build = VectorIndexBuild::default();
        let mut gone = index.tail.retain(|_| false);
        for s in &index.segments {
            if s.id != 0 {
                let Some(graph) = s.graph() else { continue };
                if !old.segments.contains(&s.id) {
                    build.put(blobs.segment(s.id), graph_blob(s.rows.dim(), s.rows.ids(), graph));
                }
                list.segments.push(s.id);
            }
            let Some(dead) = index.removed.get(&s.id) else { continue };
            let mut dead: Vec<usize> = dead.iter().map(|&r| r as usize).collect();
            dead.sort_unstable();
            let before = was_removed.get(&s.id);
            for &r in &dead {
                if before.is_none_or(|b| !b.contains(&s.rows.ids()[r])) {
                    gone.push_row_of(&s.rows, r);
                }
            }
            list.removed.push((s.id, dead.iter().map(|&r| s.rows.ids()[r]).collect()));
        }
        for &id in old.segments.iter().filter(|id| !list.segments.contains(id)) {
            build.remove(blobs.segment(id));
        }
        if list.removed.is_empty() {
            for n in list.gone.drain(..) {
                build.remove(blobs.gone(n));
            }
        } else if gone.len() > 0 {
            let n = list.gone.iter().max().map_or(1, |n| n + 1);
            build.put(blobs.gone(n), gone.gone_blob());
            list.gone.push(n);
        }
        // (An empty list is as good as none, whatever whole graph it names.)
        if build.is_empty() && (SegmentList { base: old.base, ..list.clone() }) == old {
            return Ok(None);
        }
        build.put(blobs.list(), list.to_bytes());
        build.forget_removed(name, generation);
        Ok(Some(build))
    }

    /// The removals that end the segments saved for `name`, when a whole graph replaces them.
    pub(crate) fn segments_ended(&self, name: &str, build: &mut VectorIndexBuild) -> Result<()> {
        let Some(list) = self.segment_list(name)? else { return Ok(()) };
        let blobs = GraphBlobName(name);
        for id in list.segments {
            build.remove(blobs.segment(id));
        }
        for n in list.gone {
            build.remove(blobs.gone(n));
        }
        build.remove(blobs.list());
        Ok(())
    }
}

/// The index of `m` (a representation's rows read whole at `generation`) in the segments
/// `saved` (see [`VectorIndex::open_dense`]).
fn assemble<R: SavedRows>(m: R, saved: SavedSegments<R>, generation: u64) -> Segmented<R> {
    let mut listed: HashMap<u64, HashSet<ChunkId>> =
        saved.list.removed.into_iter().map(|(s, c)| (s, c.into_iter().collect())).collect();
    // Rows removed since the save are tombstones as the saved ones are, whatever the store
    // holds under their chunk now (a replaced vector's new row is the tail's). A segment's
    // ids are in chunk order.
    let segments =
        std::iter::once((0, &saved.base)).chain(saved.frozen.iter().map(|f| (f.0, &f.1)));
    for (id, ids) in segments {
        for &chunk in saved.since.iter().filter(|c| ids.binary_search(c).is_ok()) {
            listed.entry(id).or_default().insert(chunk);
        }
    }
    let mut index = Segmented {
        segments: Vec::new(),
        removed: HashMap::new(),
        tail: m.retain(|_| false),
        read_at: generation,
    };
    // The whole graph's rows are usually the first rows read, none of them removed: then they
    // are kept where they were read.
    let mut m = m;
    let mut parts = Vec::new();
    if !listed.contains_key(&0) && m.ids().starts_with(&saved.base) {
        let (first, rest) = m.split_front(saved.base.len());
        index.segments.push(Arc::new(Segment::new(0, first)));
        m = rest;
    } else {
        parts.push((0, saved.base, None));
    }
    parts.extend(saved.frozen.into_iter().map(|(id, ids, g)| (id, ids, Some(Arc::new(g)))));
    let mut claimed = vec![false; m.len()];
    let zero = vec![0.0; m.dim()];
    for (id, ids, graph) in parts {
        let none = HashSet::new();
        let listed = listed.get(&id).unwrap_or(&none);
        let mut rows = m.retain(|_| false);
        let mut dead = HashSet::new();
        for (r, chunk) in ids.into_iter().enumerate() {
            let at = m.ids().binary_search(&chunk).ok();
            let live = at.filter(|&at| !listed.contains(&chunk) && !claimed[at]);
            if let Some(at) = live {
                claimed[at] = true;
                rows.push_row_of(&m, at);
                continue;
            }
            // A tombstone: the row walks with the vector it was built with, when known (not
            // when the store keeps no removed vectors, or forgot them: a zero vector, never
            // near a query).
            dead.insert(r as u32);
            match (saved.gone_at.get(&chunk), at) {
                (Some(&g), _) => rows.push_row_of(&saved.gone, g),
                (None, Some(at)) => rows.push_row_of(&m, at),
                (None, None) => rows.push_vector(chunk, DocKey(0), &zero),
            }
        }
        if !dead.is_empty() {
            index.removed.insert(id, dead);
        }
        let segment = match graph {
            Some(graph) => Segment::frozen(id, rows, Some(graph)),
            None => Segment::new(id, rows),
        };
        // The first segment's place is first: its graph is the store's whole one.
        if id == 0 {
            index.segments.insert(0, Arc::new(segment));
        } else {
            index.segments.push(Arc::new(segment));
        }
    }
    index.tail = m.retain(|r| !claimed[r]);
    index
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_segment_list_reads_back_and_damage_is_refused() {
        let list = SegmentList {
            base: [7; 32],
            segments: vec![1, 4],
            removed: vec![(0, vec![ChunkId(3)]), (4, vec![ChunkId(90), ChunkId(-2)])],
            gone: vec![1, 2],
        };
        let bytes = list.to_bytes();
        assert_eq!(SegmentList::from_bytes(&bytes), Some(list));
        for cut in [0, 3, 30, 40, bytes.len() - 1] {
            assert_eq!(SegmentList::from_bytes(&bytes[..cut]), None, "{cut}");
        }
        let mut huge = bytes.clone();
        huge[36..44].copy_from_slice(&u64::MAX.to_le_bytes());
        assert_eq!(SegmentList::from_bytes(&huge), None, "a count past the bytes");
        let rows = VectorMatrix {
            ids: vec![ChunkId(5)],
            docs: vec![DocKey(2)],
            dim: 2,
            data: vec![0.5, -0.5],
        };
        let blob = rows.gone_blob();
        let like = |dim| VectorMatrix { dim, ..VectorMatrix::default() };
        assert_eq!(VectorMatrix::from_gone_blob(&blob, &like(2)), Some(rows));
        assert_eq!(VectorMatrix::from_gone_blob(&blob, &like(3)), None, "another dimension");
        assert_eq!(VectorMatrix::from_gone_blob(&blob[..blob.len() - 1], &like(2)), None);
    }
}
