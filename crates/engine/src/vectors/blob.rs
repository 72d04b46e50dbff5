//! A representation's HNSW graph as the store keeps it: one named blob holding the stamp of the
//! rows it was built over, their chunk ids, then the graph. The stamp tells a current graph from
//! a stale one without reading the graph; the ids let a later process carry it over to rows that
//! changed since.

use ckeep_core::ChunkId;
use ckeep_index::Hnsw;
use ckeep_store::{StoreWrite, VectorMatrix};

use crate::error::Result;

/// Marks the chunk ids a stored graph was built over, between its stamp and the graph (older
/// blobs go straight on to the graph, whose own magic differs).
const IDS_MAGIC: u32 = 0x3153_4449; // "IDS1"

/// The name under which the store keeps the graph of one representation, among its derived
/// blobs: the one place that spells it, so readers and writers cannot disagree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct GraphBlobName<'a>(pub &'a str);

impl std::fmt::Display for GraphBlobName<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "hnsw:{}", self.0)
    }
}

impl GraphBlobName<'_> {
    /// The blob of frozen segment `id` ([`super::saved`]).
    pub fn segment(&self, id: u64) -> String {
        format!("{self}#{id}")
    }

    /// The blob that lists the saved segments.
    pub fn list(&self) -> String {
        format!("{self}#segments")
    }

    /// Blob `n` of tombstoned rows' vectors.
    pub fn gone(&self, n: u64) -> String {
        format!("{self}#gone{n}")
    }
}

/// What the persisted graph was built over: the vectors' chunk ids and dimension. A graph with
/// another stamp is stale.
pub(crate) fn stamp(m: &VectorMatrix) -> [u8; 32] {
    stamp_of(m.dim, &m.ids)
}

/// The stamp of rows with these chunk ids, in this order, of dimension `dim`: the same for a
/// matrix and for the codes of it, so int8 codes can walk the graph built over the floats.
pub(crate) fn stamp_of(dim: usize, ids: &[ChunkId]) -> [u8; 32] {
    let mut h = blake3::Hasher::new();
    h.update(&(dim as u64).to_le_bytes());
    for id in ids {
        h.update(&id.0.to_le_bytes());
    }
    *h.finalize().as_bytes()
}

/// Whether a stored graph blob (stamp, then graph) was built over vectors with this stamp.
pub(crate) fn is_current(blob: &[u8], stamp: &[u8; 32]) -> bool {
    blob.len() > 32 && blob[..32] == *stamp
}

/// The blob of `graph`, built over rows of dimension `dim` with these chunk ids: their stamp,
/// the ids, then the graph.
pub(crate) fn graph_blob(dim: usize, ids: &[ChunkId], graph: &Hnsw) -> Vec<u8> {
    let mut blob = stamp_of(dim, ids).to_vec();
    blob.reserve(12 + 8 * ids.len());
    blob.extend(IDS_MAGIC.to_le_bytes());
    blob.extend((ids.len() as u64).to_le_bytes());
    for id in ids {
        blob.extend(id.0.to_le_bytes());
    }
    blob.extend(graph.to_bytes());
    blob
}

/// A stored graph blob's parts after the stamp: the chunk ids it was built over (absent in
/// blobs written before they were kept) and the graph's bytes; `None` if malformed.
pub(crate) fn blob_parts(blob: &[u8]) -> Option<(Option<Vec<ChunkId>>, &[u8])> {
    let rest = blob.get(32..)?;
    if rest.get(..4)? != IDS_MAGIC.to_le_bytes() {
        return Some((None, rest));
    }
    let count = usize::try_from(u64::from_le_bytes(rest.get(4..12)?.try_into().ok()?)).ok()?;
    let ids = rest.get(12..12 + count.checked_mul(8)?)?;
    let ids = ids
        .chunks_exact(8)
        .map(|b| ChunkId(i64::from_le_bytes(b.try_into().unwrap_or_default())))
        .collect();
    Some((Some(ids), &rest[12 + 8 * count..]))
}

/// Blobs to write to the store (graphs, segments, their list) and to remove, in one
/// transaction ([`StoreWrite::write_aux`]).
#[derive(Debug, Default)]
pub struct VectorIndexBuild {
    puts: Vec<(String, Vec<u8>)>,
    removes: Vec<String>,
    /// A representation whose removed vectors the store may forget once this is written,
    /// those removed before a generation ([`StoreWrite::forget_removed_vectors`]).
    forget: Option<(String, u64)>,
}

impl VectorIndexBuild {
    pub(crate) fn put(&mut self, name: String, blob: Vec<u8>) {
        self.puts.push((name, blob));
    }

    pub(crate) fn remove(&mut self, name: String) {
        self.removes.push(name);
    }

    /// Once written, the store may forget the vectors removed under `repr` before
    /// `generation`: this holds those its segments still walk through.
    pub(crate) fn forget_removed(&mut self, repr: &str, generation: u64) {
        self.forget = Some((repr.to_string(), generation));
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.puts.is_empty() && self.removes.is_empty()
    }

    /// Bytes written.
    pub fn bytes(&self) -> usize {
        self.puts.iter().map(|(_, b)| b.len()).sum()
    }
}

/// Persists graphs and segments from [`super::VectorIndex::build`] into `store`, each build in one
/// transaction. Each graph carries the stamp of the vectors it was built from: if they changed
/// meanwhile, a process that reads them whole ignores it until the next build.
pub(crate) fn save<S: StoreWrite>(store: &mut S, builds: Vec<VectorIndexBuild>) -> Result<()> {
    for b in builds {
        let puts: Vec<(&str, &[u8])> =
            b.puts.iter().map(|(n, d)| (n.as_str(), d.as_slice())).collect();
        let removes: Vec<&str> = b.removes.iter().map(String::as_str).collect();
        store.write_aux(&puts, &removes)?;
        // A separate transaction: a process stopped before it leaves vectors the next save
        // forgets.
        if let Some((repr, before)) = &b.forget {
            store.forget_removed_vectors(repr, *before)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ckeep_index::HnswParams;

    #[test]
    fn a_stored_graph_keeps_its_ids_and_older_blobs_still_read() {
        let dim = 4;
        let data: Vec<f32> = (0..40).map(|i| ((i * 7919) % 13) as f32 - 6.0).collect();
        let graph = Hnsw::build(&data, dim, HnswParams::default());
        let ids: Vec<ChunkId> = (0..10).map(|i| ChunkId(i * 3 - 5)).collect();
        let m = VectorMatrix { ids: ids.clone(), docs: vec![ckeep_core::DocKey(1); 10], dim, data };
        let built = graph_blob(m.dim, &m.ids, &graph);
        assert!(is_current(&built, &stamp(&m)));
        let (kept, bytes) = blob_parts(&built).unwrap();
        assert_eq!(kept, Some(ids));
        assert_eq!(bytes, graph.to_bytes());
        // Written before the ids were kept: stamp, then the graph.
        let mut older = stamp(&m).to_vec();
        older.extend(graph.to_bytes());
        let (kept, bytes) = blob_parts(&older).unwrap();
        assert_eq!((kept, bytes), (None, &graph.to_bytes()[..]));
        // Cut short or garbage: nothing, not a panic.
        for cut in [0, 20, 34, 40, 60] {
            let part = &built[..cut];
            assert!(
                blob_parts(part)
                    .is_none_or(|(ids, g)| ids.is_none() || Hnsw::from_bytes(g).is_none()),
                "{cut}"
            );
        }
    }

    #[test]
    fn the_graph_blob_name_is_the_one_stores_already_hold() {
        // Stores written by earlier versions keep their graphs under this name.
        assert_eq!(GraphBlobName("plain").to_string(), "hnsw:plain");
    }
}
