//! Keeping each representation's HNSW graphs current: one built (and persisted) for a
//! collection read whole; under a server's writes, segments with graphs of their own for the
//! rows written since ([`super::segments`]), until those changes pass [`COMPACT_SHARE`] of the
//! collection: then one graph over all rows is made (the stored one carried over) and
//! persisted. The writer's side of the vectors: searches only read what this installs.

use std::sync::Arc;

use ckeep_core::ChunkId;
use ckeep_index::{Hnsw, HnswParams, Quantization};
use ckeep_store::{ReadSnapshot, StoreRead, StoreWrite, VectorMatrix};

use super::ANN_MIN_VECTORS;
use super::blob::{GraphBlobName, blob_parts, graph_blob, is_current, stamp, stamp_of};
use super::cache::GraphEntry;
use super::live::{DenseIndex, REBUILD_SHARE};
use crate::manifest::ManifestExt;
use crate::represent::{Resolved, Source};
use crate::{Engine, Result};

/// A server makes and persists one graph over all rows once the rows written or removed since
/// the stored one pass this share of them: often enough that a restart (or a crash) rarely
/// finds the stored graph stale, seldom enough that persisting (the whole graph, ~160 B a row)
/// stays a small part of the writes.
const COMPACT_SHARE: f64 = 0.1;

/// An HNSW graph built for the vectors of one representation, ready to persist.
#[derive(Debug)]
pub struct VectorIndexBuild {
    name: String,
    blob: Vec<u8>,
}

impl VectorIndexBuild {
    /// `graph` of representation `name`, built over the rows of `m` (see [`graph_blob`]).
    fn new(name: &str, m: &VectorMatrix, graph: &Hnsw) -> Self {
        Self { name: name.to_string(), blob: graph_blob(m, graph) }
    }
}

impl<S: StoreRead> Engine<S> {
    /// Brings the HNSW graph of each stored chunk-level representation whose collection is
    /// large enough up to date with its vectors. Reads only, so a server does it while its
    /// writer keeps ingesting; [`Engine::save_vector_index`] persists what it returns.
    ///
    /// A graph for vectors read whole is built and returned (unless the store has it). With a
    /// background index (a server), rows written or removed since the graph are inserted
    /// into it or tombstoned, in memory; once they are a tenth of it, the graph is compacted
    /// over the live rows (tombstones dropped) and returned, and it is rebuilt only when
    /// removed rows pass a fifth of it. Without one, a changed collection gets its graph
    /// anew (the stored one carried over to it, or a build), so the stored graph stays
    /// current for the next process.
    pub fn build_vector_index(&self) -> Result<Vec<VectorIndexBuild>> {
        self.update_vector_index(COMPACT_SHARE)
    }

    /// [`Engine::build_vector_index`], with every graph updated in place since it was stored
    /// compacted and returned for persisting, however few its changes: what a server does
    /// before it stops, so the next process finds a current graph instead of building one.
    pub fn compact_vector_index(&self) -> Result<Vec<VectorIndexBuild>> {
        self.update_vector_index(0.0)
    }

    /// Brings the graphs up to date; a graph updated in place is compacted (and returned for
    /// persisting) once its inserts and tombstones are more than `compact_at` of its rows.
    fn update_vector_index(&self, compact_at: f64) -> Result<Vec<VectorIndexBuild>> {
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
                // its own: only the rows written since are read and indexed.
                Quantization::Int8 if self.background_index => {
                    self.refresh_code_segments(name)?;
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
            // A server's indexer starts from the stored graph when it is the first segment's
            // (no query may have loaded it yet); elsewhere a changed collection gets a new one.
            let graph = if self.background_index {
                self.graph(name, base, index.read_at)
            } else {
                self.cached_graph(name, index.read_at)
            };
            if index.is_pure() {
                if self.has_current_graph(name, &stamp(base))? {
                    continue;
                }
                let graph = graph.unwrap_or_else(|| Arc::new(self.graph_for(name, base)));
                builds.push(VectorIndexBuild::new(name, base, &graph));
                self.vectors.set_graph(name, index.read_at, Some(Arc::clone(&graph)));
                self.vectors.update(name, |current: &DenseIndex, _| {
                    Ok(current.with_first_graph(&index, graph))
                })?;
                continue;
            }
            // A server freezes and merges the rows written since into segments with graphs of
            // their own, until they are a tenth of the collection (or it stops): then one graph
            // over all of them is made and saved, for the next process.
            let changes = index.changes() as f64;
            if self.background_index
                && (graph.is_some() || base.len() < ANN_MIN_VECTORS)
                && changes <= compact_at * index.len() as f64
            {
                self.refresh_segments((name, name), &index, generation, |m| m)?;
                continue;
            }
            let m = index.sorted_matrix();
            let graph = Arc::new(self.graph_for(name, &m));
            builds.push(VectorIndexBuild::new(name, &m, &graph));
            let whole = DenseIndex::whole(m, generation);
            let _ = whole.first().graph.set(Some(graph));
            self.install(&repr, whole, generation)?;
        }
        Ok(builds)
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
        Ok(Some(VectorIndexBuild::new(&repr.key, &m, &graph)))
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

    /// Whether the store keeps a graph for `name` built over rows with this stamp.
    fn has_current_graph(&self, name: &str, stamp: &[u8; 32]) -> Result<bool> {
        Ok(self.store.aux(&GraphBlobName(name).to_string())?.is_some_and(|b| is_current(&b, stamp)))
    }

    /// The graph cached for the vectors of representation `key` read at `generation`.
    fn cached_graph(&self, key: &str, generation: u64) -> Option<Arc<Hnsw>> {
        match self.vectors.graph(key, generation) {
            GraphEntry::Known(graph) => graph,
            GraphEntry::Unknown => None,
        }
    }

    /// Makes `index` (the vectors of `repr` as of `generation`, its first segment's graph set)
    /// the one queries search, first bringing it up to the store's generation now: readers
    /// may have applied later writes to the one it replaces while it was being built.
    fn install(&self, repr: &Resolved, mut index: DenseIndex, mut generation: u64) -> Result<()> {
        let _loading = self.vectors.loading();
        let _snapshot = ReadSnapshot::begin(&self.store)?;
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
        self.vectors.install_dense(&repr.key, index, generation);
        Ok(())
    }
}

impl<S: StoreWrite> Engine<S> {
    /// Brings the HNSW graph of each stored chunk-level representation up to date (see
    /// [`Engine::build_vector_index`]) and persists the graphs it built; returns whether it
    /// built one. (Derived representations get theirs in memory on their first query.)
    pub fn refresh_vector_index(&mut self) -> Result<bool> {
        let builds = self.build_vector_index()?;
        let built = !builds.is_empty();
        self.save_vector_index(builds)?;
        Ok(built)
    }

    /// Persists graphs from [`Engine::build_vector_index`]. Each carries the stamp of the
    /// vectors it was built from: if they changed meanwhile, a process that reads them whole
    /// ignores it until the next build.
    pub fn save_vector_index(&mut self, builds: Vec<VectorIndexBuild>) -> Result<()> {
        for b in builds {
            self.store.set_aux(&GraphBlobName(&b.name).to_string(), &b.blob)?;
        }
        Ok(())
    }
}
