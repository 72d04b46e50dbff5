//! `ckeep check` for the vector indexes: each stored HNSW graph and its saved segments read
//! back and compared with the store's vectors. A graph or segment that cannot be read is a
//! problem (the store was damaged; the next build replaces it); a stale one is not — a process
//! scans the rows it lacks and freezes them into segments, or rebuilds — but the report says
//! how far behind it is, so a crash's cost is visible before a restart pays it.

use std::collections::HashSet;

use ckeep_core::ChunkId;
use ckeep_index::{Hnsw, Quantization};
use ckeep_store::{StoreRead, VectorMatrix};
use serde::Serialize;

use super::VectorIndex;
use super::blob::{GraphBlobName, blob_parts, is_current, stamp_of};
use super::codes::CodeRows;
use super::saved::SegmentList;
use crate::error::Result;
use crate::manifest::ManifestExt;

/// What `check` found of one representation's stored graph.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct GraphCheck {
    /// The stored representation (`plain`, ...).
    pub representation: String,
    /// Rows the graph and its saved segments were built over.
    pub rows: usize,
    /// Frozen segments saved beside the whole graph.
    pub segments: usize,
    /// Whether the graph and its segments hold exactly the vectors the store holds now.
    pub current: bool,
    /// Vectors the store holds that neither the graph nor a segment has (`None` for graphs
    /// stored before their chunk ids were kept).
    pub missing: Option<usize>,
    /// Rows held whose chunk the store no longer has, not yet saved as removed (`None`
    /// likewise).
    pub removed: Option<usize>,
    /// Why the graph cannot be used, when it cannot (a damaged blob).
    pub problem: Option<String>,
}

impl<S: StoreRead> VectorIndex<'_, S> {
    /// Each stored graph read back and compared with the store's vectors (streamed, never
    /// held whole), in representation order.
    pub fn check(&self) -> Result<Vec<GraphCheck>> {
        let manifest = self.store.manifest()?;
        let mut checks = Vec::new();
        for name in manifest.chunk_representations() {
            let Some(blob) = self.store.aux(&GraphBlobName(name).to_string())? else { continue };
            let (mut dim, mut ids) = (0, Vec::new());
            self.store.each_vector(name, None, &mut |chunk, _, v| {
                dim = v.len();
                ids.push(chunk);
            })?;
            let mut check = check_graph(name, &blob, dim, &ids);
            if check.problem.is_none() {
                self.check_segments(&mut check, &blob, dim, &ids)?;
            }
            checks.push(check);
        }
        Ok(checks)
    }

    /// `check` (of the whole graph `blob`, sound) completed with the segments saved beside it,
    /// if any: their blobs read back, and the rows of all of them compared with the store's
    /// vectors `ids` of dimension `dim`.
    fn check_segments(
        &self,
        check: &mut GraphCheck,
        blob: &[u8],
        dim: usize,
        ids: &[ChunkId],
    ) -> Result<()> {
        let name = check.representation.clone();
        let Some(bytes) = self.store.aux(&GraphBlobName(&name).list())? else { return Ok(()) };
        let Some(list) = SegmentList::from_bytes(&bytes) else {
            check.problem = Some("the segment list cannot be read".into());
            return Ok(());
        };
        if !is_current(blob, &list.base) {
            return Ok(()); // it extends an older whole graph: ignored, and ended by the next save
        }
        // int8 codes save their tombstones as codes, float32 vectors as vectors.
        let saved = if self.store.manifest()?.quantization(&name)? == Quantization::Int8 {
            let like = CodeRows::empty(Quantization::Int8, dim);
            self.saved_segments(&name, &like)?.map(|s| (s.list, s.base, s.frozen))
        } else {
            let like = VectorMatrix { dim, ..VectorMatrix::default() };
            self.saved_segments(&name, &like)?.map(|s| (s.list, s.base, s.frozen))
        };
        let Some((list, base, frozen)) = saved else {
            check.problem = Some("a saved segment is missing or damaged".into());
            return Ok(());
        };
        let dead: HashSet<(u64, ChunkId)> =
            list.removed.iter().flat_map(|(s, c)| c.iter().map(|c| (*s, *c))).collect();
        let parts = std::iter::once((0, &base)).chain(frozen.iter().map(|f| (f.0, &f.1)));
        let mut held = HashSet::new();
        for (segment, rows) in parts {
            held.extend(rows.iter().filter(|&&c| !dead.contains(&(segment, c))).copied());
        }
        let now: HashSet<ChunkId> = ids.iter().copied().collect();
        let (missing, removed) = (now.difference(&held).count(), held.difference(&now).count());
        check.rows = base.len() + frozen.iter().map(|f| f.1.len()).sum::<usize>();
        check.segments = frozen.len();
        check.current = missing == 0 && removed == 0;
        (check.missing, check.removed) = (Some(missing), Some(removed));
        Ok(())
    }
}

/// The check of graph blob `blob` of representation `name` against the store's vectors: `ids`
/// (in chunk order) of dimension `dim`.
fn check_graph(name: &str, blob: &[u8], dim: usize, ids: &[ChunkId]) -> GraphCheck {
    let mut check = GraphCheck {
        representation: name.to_string(),
        rows: 0,
        segments: 0,
        current: false,
        missing: None,
        removed: None,
        problem: None,
    };
    let Some((built_over, graph)) = blob_parts(blob) else {
        check.problem = Some("the stored graph is truncated".into());
        return check;
    };
    let Some(graph) = Hnsw::from_bytes(graph) else {
        check.problem = Some("the stored graph cannot be read".into());
        return check;
    };
    check.rows = graph.len();
    check.current = is_current(blob, &stamp_of(dim, ids));
    if check.current && graph.len() != ids.len() {
        check.problem =
            Some(format!("the graph has {} rows for {} vectors", graph.len(), ids.len()));
    }
    if let Some(built_over) = built_over {
        if built_over.len() != graph.len() {
            check.problem = Some(format!(
                "the graph has {} rows but lists {} chunk ids",
                graph.len(),
                built_over.len()
            ));
        }
        let now: HashSet<ChunkId> = ids.iter().copied().collect();
        let then: HashSet<ChunkId> = built_over.iter().copied().collect();
        check.missing = Some(now.difference(&then).count());
        check.removed = Some(then.difference(&now).count());
    }
    check
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vectors::blob::graph_blob;
    use crate::vectors::live::tests::matrix;
    use ckeep_index::HnswParams;

    #[test]
    fn a_graph_is_current_stale_or_damaged() {
        let m = matrix(&(1..=50).collect::<Vec<_>>(), 8, 1);
        let blob = graph_blob(m.dim, &m.ids, &Hnsw::build(&m.data, 8, HnswParams::default()));
        let ok = check_graph("plain", &blob, 8, &m.ids);
        assert!(ok.current && ok.problem.is_none(), "{ok:?}");
        assert_eq!((ok.rows, ok.missing, ok.removed), (50, Some(0), Some(0)));
        // Two vectors written and one removed since: stale by that much, not a problem.
        let now: Vec<ChunkId> = (2..=52).map(ChunkId).collect();
        let stale = check_graph("plain", &blob, 8, &now);
        assert!(!stale.current && stale.problem.is_none());
        assert_eq!((stale.missing, stale.removed), (Some(2), Some(1)));
        // Another dimension: stale.
        assert!(!check_graph("plain", &blob, 4, &m.ids).current);
        // Cut short, or the graph's bytes damaged: a problem.
        let cut = check_graph("plain", &blob[..blob.len() / 2], 8, &m.ids);
        assert!(cut.problem.is_some(), "{cut:?}");
        assert!(check_graph("plain", &blob[..20], 8, &m.ids).problem.is_some());
    }
}
