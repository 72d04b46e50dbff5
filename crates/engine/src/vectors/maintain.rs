//! Keeping each representation's HNSW graphs current: one built (and persisted) for a
//! collection read whole; after writes, segments with graphs of their own for the rows written
//! since ([`super::segments`]), saved as they are made ([`super::saved`]), so an update and a
//! save cost the size of the change; one graph over all rows again (the stored one carried
//! over) only once the segments outgrow the first or its removed rows pass [`REBUILD_SHARE`]
//! of it. The writer's side of the vectors: searches only read what this installs.

use std::sync::Arc;

use ckeep_core::ChunkId;
use ckeep_index::{Hnsw, HnswParams, Quantization};
use ckeep_store::{ReadSnapshot, StoreRead, VectorMatrix};

use super::ANN_MIN_VECTORS;
use super::VectorIndex;
use super::blob::{
    GraphBlobName, VectorIndexBuild, blob_parts, graph_blob, is_current, stamp, stamp_of,
};
use super::cache::GraphEntry;
use super::live::{DenseIndex, REBUILD_SHARE};
use super::segmented::{Rows, Segmented};
use crate::error::Result;
use crate::manifest::ManifestExt;
use crate::represent::{Resolved, Source};

/// Whether the segments of `index` have outgrown its first: removed rows past
/// [`REBUILD_SHARE`] of it (walks pass through them), or more rows elsewhere than in it (a
/// merge would soon rebuild as many). Then one graph over all rows is cheaper.
pub(crate) fn outgrown<R: Rows>(index: &Segmented<R>) -> bool {
    let first = index.first().rows.len();
    let dead = index.removed.get(&index.first().id).map_or(0, std::collections::HashSet::len);
    let elsewhere = index.len() - (first - dead);
    dead as f64 > REBUILD_SHARE * first as f64 || elsewhere > first
}

impl<S: StoreRead> VectorIndex<'_, S> {
    /// Brings the HNSW graph of each stored chunk-level representation whose collection is
    /// large enough up to date with its vectors, and returns what to save of them. Reads only,
    /// so a server does it while its writer keeps ingesting;
    /// [`crate::Writer::save_vector_index`] persists what it returns.
    ///
    /// A collection read whole gets its graph built (unless the store has it). After writes,
    /// the rows written since are frozen into segments with graphs of their own, which merge
    /// by size; what is new of them is returned for saving (see the module's account).
    pub fn build(&self) -> Result<Vec<VectorIndexBuild>> {
        self.update_vector_index(false)
    }

    /// [`VectorIndex::build`], with the rows written since the last segment frozen
    /// into one however few they are: what a server does before it stops, so the next
    /// process finds every row in a saved graph.
    pub fn compact(&self) -> Result<Vec<VectorIndexBuild>> {
        self.update_vector_index(true)
    }

    /// Brings the graphs up to date; `last`: the tail is frozen whatever its size.
    fn update_vector_index(&self, last: bool) -> Result<Vec<VectorIndexBuild>> {
        let manifest = self.store.manifest()?;
        let mut builds = Vec::new();
        if self.store.vector_search().is_some() {
            return Ok(builds);
        }
        for name in manifest.chunk_representations() {
            let repr = Resolved {
                key: name.clone(),
                source: Source::Stored(name.clone()),
                field: None,
                quantize: Quantization::None,
            };
            match manifest.quantization(name)? {
                Quantization::None => {}
                // Binary codes are scanned: their estimates are too coarse to walk a graph.
                Quantization::Binary => continue,
                // A server's int8 codes follow its writes in segments, each with a graph of
                // its own: only the rows written since are read and indexed, and saved.
                Quantization::Int8 if self.background => {
                    builds.extend(self.refresh_code_segments(name, last)?);
                    continue;
                }
                Quantization::Int8 => {
                    builds.extend(self.build_codes_graph(&repr)?);
                    continue;
                }
            }
            let (index, generation, _) = self.dense_index(&repr)?;
            if index.len() < ANN_MIN_VECTORS {
                continue;
            }
            let base = &index.first().rows;
            let stored = self.stored_first_graph(name, &index)?;
            if index.is_pure() {
                if stored {
                    continue;
                }
                // A server's indexer starts from the graph a query may have loaded.
                let graph = if self.background {
                    self.graph(name, base, index.read_at)
                } else {
                    self.cached_graph(name, index.read_at)
                };
                let graph = graph.unwrap_or_else(|| Arc::new(self.graph_for(name, base)));
                builds.push(self.whole_build(name, base, &graph)?);
                self.cache.set_graph(name, index.read_at, Some(Arc::clone(&graph)));
                self.cache.update(name, |current: &DenseIndex, _| {
                    Ok(current.with_first_graph(&index, graph))
                })?;
                continue;
            }
            // The rows written since the stored graph go into segments, saved as they are
            // made, until they outgrow it.
            if stored && !outgrown(&index) {
                self.refresh_segments((name, name), &index, generation, last, |m| m)?;
                let (now, at, _) = self.dense_index(&repr)?;
                builds.extend(self.segment_save(name, &now, at)?);
                continue;
            }
            let m = index.sorted_matrix();
            let graph = Arc::new(self.graph_for(name, &m));
            builds.push(self.whole_build(name, &m, &graph)?);
            let whole = DenseIndex::whole(m, generation);
            let _ = whole.first().graph.set(Some(graph));
            self.install(&repr, whole, generation)?;
        }
        Ok(builds)
    }

    /// The save of `graph`, built over the rows of `m`, as the whole graph of representation
    /// `name` (see [`graph_blob`]): the segments saved beside the one it replaces end.
    pub(crate) fn whole_build(
        &self,
        name: &str,
        m: &VectorMatrix,
        graph: &Hnsw,
    ) -> Result<VectorIndexBuild> {
        let mut build = VectorIndexBuild::default();
        self.segments_ended(name, &mut build)?;
        build.put(GraphBlobName(name).to_string(), graph_blob(m.dim, &m.ids, graph));
        build.forget_removed(name, u64::MAX);
        Ok(build)
    }

    /// The graph an int8 representation's codes walk, built over its float32 vectors (read
    /// for the build, then let go) unless the store has a current one. The codes are rows in
    /// the same order, so the graph is the one the float32 search would use, and stored under
    /// the same name: switching quantisation on or off keeps it.
    fn build_codes_graph(&self, repr: &Resolved) -> Result<Option<VectorIndexBuild>> {
        let m = self.load_matrix(repr)?;
        let stamp = stamp(&m);
        if m.len() < ANN_MIN_VECTORS || self.has_current_graph(&repr.key, &stamp)? {
            return Ok(None);
        }
        let graph = self.graph_for(&repr.key, &m);
        Ok(Some(self.whole_build(&repr.key, &m, &graph)?))
    }

    /// A graph over the rows of `m` (representation `name`'s, as a whole read gives them):
    /// the stored one carried over to them when it was built over nearly the same rows
    /// (changes up to [`REBUILD_SHARE`] of it), else a new build.
    pub(crate) fn graph_for(&self, name: &str, m: &VectorMatrix) -> Hnsw {
        self.carried_graph(name, m)
            .unwrap_or_else(|| Hnsw::build(&m.data, m.dim, HnswParams::default()))
    }

    /// The stored graph of `name` carried over to the rows of `m`, if it keeps the ids it was
    /// built over and they differ from `m`'s in few rows.
    fn carried_graph(&self, name: &str, m: &VectorMatrix) -> Option<Hnsw> {
        let blob = self.store.aux(&GraphBlobName(name).to_string()).ok().flatten()?;
        let (ids, graph) = blob_parts(&blob)?;
        let ids = ids?;
        if !is_current(&blob, &stamp_of(m.dim, &ids)) {
            return None; // built at another dimension
        }
        let graph = Hnsw::from_bytes(graph).filter(|g| g.len() == ids.len())?;
        let now: std::collections::HashSet<ChunkId> = m.ids.iter().copied().collect();
        let kept = ids.iter().filter(|id| now.contains(id)).count();
        let changes = (ids.len() - kept) + (m.len() - kept);
        if changes as f64 > REBUILD_SHARE * ids.len() as f64 {
            return None;
        }
        Some(graph.carried_over(&ids, &m.ids, &m.data))
    }

    /// Whether the store keeps the graph of `index`'s first segment (the rows of `name` read
    /// whole). A server's indexer reads it into the segment when it does (its queries walk it),
    /// so later passes need not read the blob again: the whole graph is most of a million-row
    /// pass's time otherwise. (Elsewhere a segment's graph may be one built and not saved.)
    fn stored_first_graph(&self, name: &str, index: &DenseIndex) -> Result<bool> {
        let first = index.first();
        if self.background && first.graph().is_some() {
            return Ok(true);
        }
        let stored = self.has_current_graph(name, &stamp(&first.rows))?;
        if stored && self.background {
            first.graph.get_or_init(|| self.graph(name, &first.rows, index.read_at));
        }
        Ok(stored)
    }

    /// Whether the store keeps a graph for `name` built over rows with this stamp.
    fn has_current_graph(&self, name: &str, stamp: &[u8; 32]) -> Result<bool> {
        Ok(self.store.aux(&GraphBlobName(name).to_string())?.is_some_and(|b| is_current(&b, stamp)))
    }

    /// The graph cached for the vectors of representation `key` read at `generation`.
    fn cached_graph(&self, key: &str, generation: u64) -> Option<Arc<Hnsw>> {
        match self.cache.graph(key, generation) {
            GraphEntry::Known(graph) => graph,
            GraphEntry::Unknown => None,
        }
    }

    /// Makes `index` (the vectors of `repr` as of `generation`, its first segment's graph set)
    /// the one queries search, first bringing it up to the store's generation now: readers
    /// may have applied later writes to the one it replaces while it was being built.
    fn install(&self, repr: &Resolved, mut index: DenseIndex, mut generation: u64) -> Result<()> {
        let _loading = self.cache.loading();
        let _snapshot = ReadSnapshot::begin(self.store)?;
        let current = self.store.generation()?;
        if current > generation
            && let Source::Stored(name) = &repr.source
            && let Some(changed) = self.store.vector_changes(name, generation)?
            && let Some(caught_up) = self.apply_changes(&index, name, &changed)?
        {
            (index, generation) = (caught_up, current);
        }
        // Not installed when readers are past what the log could bring this to; the next
        // build starts there.
        self.cache.install_dense(&repr.key, index, generation);
        Ok(())
    }
}
