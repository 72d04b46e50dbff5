//! Float32 segments as the store keeps them, so a save writes only what changed and a restart
//! finds the graphs the writes made. The whole graph ([`super::blob`]) is the first segment's;
//! each frozen segment is a blob of its own in the same format (stamp, chunk ids, graph); the
//! vectors of rows tombstoned since a save go in a small blob per save (a removed chunk's
//! vector leaves the store, yet the graph that holds its row still walks through it); and a
//! list names them all, with each segment's tombstones. The list is written last in the same
//! transaction as the blobs it names, so a process stopped at any point leaves the old list or
//! the new one. It names the whole graph it extends by its stamp: a new whole graph ends it.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use ckeep_core::{ChunkId, DocKey};
use ckeep_index::Hnsw;
use ckeep_store::{StoreRead, VectorMatrix};

use super::blob::{GraphBlobName, blob_parts, graph_blob, is_current, stamp, stamp_of};
use super::live::DenseIndex;
use super::maintain::VectorIndexBuild;
use super::segmented::{Segment, Segmented};
use crate::{Engine, Result};

/// Opens a segment list (and tells it from other blobs).
const LIST_MAGIC: u32 = 0x314c_4753; // "SGL1"
/// Opens a blob of tombstoned rows' vectors.
const GONE_MAGIC: u32 = 0x3145_4e47; // "GNE1"

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

/// The blob of tombstoned rows `(chunk, document, vector)` of dimension `dim`.
fn gone_blob(dim: usize, rows: &[(ChunkId, DocKey, &[f32])]) -> Vec<u8> {
    let mut b = GONE_MAGIC.to_le_bytes().to_vec();
    b.reserve(16 + rows.len() * (16 + 4 * dim));
    b.extend((dim as u64).to_le_bytes());
    b.extend((rows.len() as u64).to_le_bytes());
    for (chunk, doc, v) in rows {
        b.extend(chunk.0.to_le_bytes());
        b.extend(doc.0.to_le_bytes());
        for x in *v {
            b.extend(x.to_le_bytes());
        }
    }
    b
}

/// The rows of a [`gone_blob`] of dimension `dim`, by chunk; `None` when malformed or of
/// another dimension.
fn gone_rows(bytes: &[u8], dim: usize) -> Option<Vec<(ChunkId, DocKey, Vec<f32>)>> {
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
/// frozen segment's ids and graph, and the tombstoned rows' vectors (those removed since
/// the save among them).
#[derive(Debug, Default)]
pub(crate) struct SavedSegments {
    pub list: SegmentList,
    pub base: Vec<ChunkId>,
    pub frozen: Vec<(u64, Vec<ChunkId>, Hnsw)>,
    pub gone: HashMap<ChunkId, (DocKey, Vec<f32>)>,
    /// The chunks of `gone` removed since the list was saved ([`StoreRead::removed_vectors`]).
    pub since: HashSet<ChunkId>,
}

impl<S: StoreRead> Engine<S> {
    /// The segment list stored for representation `name`, if any and readable.
    pub(crate) fn segment_list(&self, name: &str) -> Result<Option<SegmentList>> {
        let blob = self.store.aux(&GraphBlobName(name).list())?;
        Ok(blob.as_deref().and_then(SegmentList::from_bytes))
    }

    /// The segments saved for representation `name` (of dimension `dim`), read back; `None`
    /// when there are none or any part is missing, damaged or of another dimension (then the
    /// vectors are read whole, and the next save starts the segments again).
    pub(crate) fn saved_segments(&self, name: &str, dim: usize) -> Result<Option<SavedSegments>> {
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
        let mut saved = SavedSegments { base: base_ids, ..SavedSegments::default() };
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
            let Some(rows) = blob.and_then(|b| gone_rows(&b, dim)) else { return Ok(None) };
            saved.gone.extend(rows.into_iter().map(|(c, d, v)| (c, (d, v))));
        }
        // Rows removed since the last save, with the vectors their segments hold.
        let mut removed = HashMap::new();
        self.store.removed_vectors(name, &mut |chunk, doc, v| {
            if v.len() == dim && !saved.gone.contains_key(&chunk) {
                removed.insert(chunk, (doc, v.to_vec()));
            }
        })?;
        saved.since = removed.keys().copied().collect();
        saved.gone.extend(removed);
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
        let saved = if m.is_empty() { None } else { self.saved_segments(name, m.dim)? };
        Ok(match saved {
            Some(saved) => assemble(m, saved, generation),
            None => DenseIndex::whole(m, generation),
        })
    }

    /// What a save of `index` (the vectors of stored representation `name` as of store
    /// generation `generation`, whose first segment's graph the store keeps) writes beyond
    /// what the store has: the frozen segments not saved yet, the vectors of rows tombstoned
    /// since, and the list; merged-away segments removed. `None` when the store is as `index`
    /// would leave it. Segments without a graph are not saved: their rows come back as the
    /// tail.
    pub(crate) fn segment_save(
        &self,
        name: &str,
        index: &DenseIndex,
        generation: u64,
    ) -> Result<Option<VectorIndexBuild>> {
        let base = stamp(&index.first().rows);
        let old = self.segment_list(name)?.filter(|l| l.base == base).unwrap_or_default();
        let blobs = GraphBlobName(name);
        let was_removed: HashMap<u64, HashSet<ChunkId>> =
            old.removed.iter().map(|(s, c)| (*s, c.iter().copied().collect())).collect();
        let mut list = SegmentList { base, gone: old.gone.clone(), ..SegmentList::default() };
        let mut build = VectorIndexBuild::default();
        let mut gone = Vec::new();
        for s in &index.segments {
            if s.id != 0 {
                let Some(graph) = s.graph() else { continue };
                if !old.segments.contains(&s.id) {
                    build.put(blobs.segment(s.id), graph_blob(&s.rows, graph));
                }
                list.segments.push(s.id);
            }
            let Some(dead) = index.removed.get(&s.id) else { continue };
            let mut dead: Vec<usize> = dead.iter().map(|&r| r as usize).collect();
            dead.sort_unstable();
            let before = was_removed.get(&s.id);
            for &r in &dead {
                let chunk = s.rows.ids[r];
                if before.is_none_or(|b| !b.contains(&chunk)) {
                    gone.push((chunk, s.rows.docs[r], s.rows.row(r)));
                }
            }
            list.removed.push((s.id, dead.iter().map(|&r| s.rows.ids[r]).collect()));
        }
        for &id in old.segments.iter().filter(|id| !list.segments.contains(id)) {
            build.remove(blobs.segment(id));
        }
        if list.removed.is_empty() {
            for n in list.gone.drain(..) {
                build.remove(blobs.gone(n));
            }
        } else if !gone.is_empty() {
            let n = list.gone.iter().max().map_or(1, |n| n + 1);
            build.put(blobs.gone(n), gone_blob(index.dim(), &gone));
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

/// The index of `m` (a representation's vectors read whole at `generation`) in the segments
/// `saved` (see [`Engine::open_dense`]).
fn assemble(mut m: VectorMatrix, saved: SavedSegments, generation: u64) -> DenseIndex {
    let mut listed: HashMap<u64, HashSet<ChunkId>> =
        saved.list.removed.into_iter().map(|(s, c)| (s, c.into_iter().collect())).collect();
    // Rows removed since the save are tombstones as the saved ones are, whatever the store
    // holds under their chunk now (a replaced vector's new row is the tail's).
    // (A segment's ids are in chunk order.)
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
        tail: VectorMatrix::default(),
        read_at: generation,
    };
    // The whole graph's rows are usually the first rows read, none of them removed: then they
    // are kept where they were read, not copied (a million rows are 1.5 GB).
    let mut parts = Vec::new();
    if !listed.contains_key(&0) && m.ids.starts_with(&saved.base) {
        let n = saved.base.len();
        let rest = VectorMatrix {
            ids: m.ids.split_off(n),
            docs: m.docs.split_off(n),
            dim: m.dim,
            data: m.data.split_off(n * m.dim),
        };
        index.segments.push(Arc::new(Segment::new(0, std::mem::replace(&mut m, rest))));
    } else {
        parts.push((0, saved.base, None));
    }
    parts.extend(saved.frozen.into_iter().map(|(id, ids, g)| (id, ids, Some(Arc::new(g)))));
    let mut claimed = vec![false; m.len()];
    for (id, ids, graph) in parts {
        let none = HashSet::new();
        let listed = listed.get(&id).unwrap_or(&none);
        let mut rows = VectorMatrix { dim: m.dim, ..VectorMatrix::default() };
        let mut dead = HashSet::new();
        for (r, chunk) in ids.into_iter().enumerate() {
            let at = m.ids.binary_search(&chunk).ok();
            let live = at.filter(|&at| !listed.contains(&chunk) && !claimed[at]);
            rows.ids.push(chunk);
            if let Some(at) = live {
                claimed[at] = true;
                rows.docs.push(m.docs[at]);
                rows.data.extend_from_slice(m.row(at));
                continue;
            }
            // A tombstone: the row walks with the vector it was built with, when known (not
            // when the store keeps no removed vectors, or forgot them: a zero vector, never
            // near a query).
            dead.insert(r as u32);
            match (saved.gone.get(&chunk), at) {
                (Some((doc, v)), _) => {
                    rows.docs.push(*doc);
                    rows.data.extend_from_slice(v);
                }
                (None, Some(at)) => {
                    rows.docs.push(m.docs[at]);
                    rows.data.extend_from_slice(m.row(at));
                }
                (None, None) => {
                    rows.docs.push(DocKey(0));
                    rows.data.extend(std::iter::repeat_n(0.0, m.dim));
                }
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
    index.tail = super::segmented::Rows::retain(&m, |r| !claimed[r]);
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
        let rows = [(ChunkId(5), DocKey(2), &[0.5f32, -0.5][..])];
        let blob = gone_blob(2, &rows);
        assert_eq!(gone_rows(&blob, 2), Some(vec![(ChunkId(5), DocKey(2), vec![0.5, -0.5])]));
        assert_eq!(gone_rows(&blob, 3), None, "another dimension");
        assert_eq!(gone_rows(&blob[..blob.len() - 1], 2), None);
    }
}
