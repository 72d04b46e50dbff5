//! Keeping each representation's HNSW graph current: built (and persisted) for a collection
//! read whole, updated in place for the rows written and removed since (a server's indexer),
//! rebuilt when removals pass [`crate::live::REBUILD_SHARE`] of it.

use std::sync::Arc;

use ckeep_index::{Hnsw, HnswParams, Quantization};
use ckeep_store::{ReadSnapshot, StoreRead, StoreWrite};

use crate::dense::{ANN_MIN_VECTORS, ann_blob, is_current, stamp};
use crate::live::DenseIndex;
use crate::represent::{Resolved, Source};
use crate::{Engine, Loaded, Result};

/// An HNSW graph built for the vectors of one representation, ready to persist.
#[derive(Debug)]
pub struct VectorIndexBuild {
    name: String,
    blob: Vec<u8>,
}

impl VectorIndexBuild {
    /// `graph` of representation `name`, behind the stamp of the rows it was built over.
    fn new(name: &str, stamp: [u8; 32], graph: &Hnsw) -> Self {
        let mut blob = stamp.to_vec();
        blob.extend(graph.to_bytes());
        Self { name: name.to_string(), blob }
    }
}

impl<S: StoreRead> Engine<S> {
    /// Brings the HNSW graph of each stored chunk-level representation whose collection is
    /// large enough up to date with its vectors. Reads only, so a server does it while its
    /// writer keeps ingesting; [`Engine::save_vector_index`] persists what it returns.
    ///
    /// A graph for vectors read whole is built and returned (unless the store has it). With a
    /// background index (a server), rows written or removed since the graph are inserted
    /// into it or tombstoned, in memory; the graph is rebuilt (and returned) only when removed
    /// rows pass a fifth of it. Without one, a changed collection is rebuilt, so the stored
    /// graph stays current for the next process.
    pub fn build_vector_index(&self) -> Result<Vec<VectorIndexBuild>> {
        let manifest = self.store.manifest()?;
        let mut builds = Vec::new();
        if self.store.searches_vectors() {
            return Ok(builds);
        }
        for name in manifest.representations.iter().filter(|r| !r.starts_with("summary:")) {
            let repr = Resolved {
                key: name.clone(),
                source: Source::Stored(name.clone()),
                field: None,
                quantize: Quantization::None,
            };
            match crate::quantized::quantization_of(&manifest, name)? {
                Quantization::None => {}
                // Binary codes are scanned: their estimates are too coarse to walk a graph.
                Quantization::Binary => continue,
                // A server's int8 codes are scanned while writes come in: they are not
                // updated in place, and a rebuild reads every float32 vector.
                Quantization::Int8 if self.background_index => continue,
                Quantization::Int8 => {
                    builds.extend(self.build_codes_graph(&repr)?);
                    continue;
                }
            }
            let (index, generation, _) = self.dense_index(&repr)?;
            if index.len() < ANN_MIN_VECTORS {
                continue;
            }
            let graph = self.cached_graph(name, index.base_generation);
            if index.is_pure() {
                let stamp = stamp(&index.base);
                if self.has_current_graph(name, &stamp)? {
                    continue;
                }
                let graph = graph.unwrap_or_else(|| {
                    Arc::new(Hnsw::build(&index.base.data, index.base.dim, HnswParams::default()))
                });
                builds.push(VectorIndexBuild::new(name, stamp, &graph));
                self.install_graph(name, index.base_generation, graph);
                continue;
            }
            match graph {
                Some(graph) if self.background_index && !index.needs_rebuild() => {
                    let (updated, graph) = index.absorbed(&graph, generation);
                    self.install(&repr, updated, generation, Arc::new(graph))?;
                }
                _ => {
                    let m = index.sorted_matrix();
                    let graph = Arc::new(Hnsw::build(&m.data, m.dim, HnswParams::default()));
                    builds.push(VectorIndexBuild::new(name, stamp(&m), &graph));
                    self.install(&repr, DenseIndex::full(m, generation), generation, graph)?;
                }
            }
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
        let graph = Hnsw::build(&m.data, m.dim, HnswParams::default());
        Ok(Some(VectorIndexBuild::new(&repr.key, stamp, &graph)))
    }

    /// Whether the store keeps a graph for `name` built over rows with this stamp.
    fn has_current_graph(&self, name: &str, stamp: &[u8; 32]) -> Result<bool> {
        Ok(self.store.aux(&ann_blob(name))?.is_some_and(|b| is_current(&b, stamp)))
    }

    /// The graph cached for the vectors of representation `key` read at `generation`.
    fn cached_graph(&self, key: &str, generation: u64) -> Option<Arc<Hnsw>> {
        let caches = self.caches.read().unwrap_or_else(std::sync::PoisonError::into_inner);
        caches.ann.get(key).filter(|(g, _)| *g == generation).and_then(|(_, g)| g.clone())
    }

    /// Caches `graph` as the one of `key`'s vectors read at `generation`, unless a newer one
    /// is.
    fn install_graph(&self, key: &str, generation: u64, graph: Arc<Hnsw>) {
        let mut caches = self.caches.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        if caches.ann.get(key).is_none_or(|(g, _)| *g <= generation) {
            caches.ann.insert(key.to_string(), (generation, Some(graph)));
        }
    }

    /// Makes `index` (the vectors of `repr` as of `generation`, with `graph` over its base)
    /// the one queries search, first bringing it up to the store's generation now: readers
    /// may have applied later writes to the one it replaces while it was being built.
    fn install(
        &self,
        repr: &Resolved,
        mut index: DenseIndex,
        mut generation: u64,
        graph: Arc<Hnsw>,
    ) -> Result<()> {
        let _loading = self.loading.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let _snapshot = ReadSnapshot::begin(&self.store)?;
        let current = self.store.generation()?;
        if current > generation
            && let Source::Stored(name) = &repr.source
            && let Some(changed) = self.store.vector_changes(name, generation)?
            && let Some(caught_up) = self.apply_changes(&index, name, &changed)?
        {
            (index, generation) = (caught_up, current);
        }
        let mut caches = self.caches.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        if caches.dense.get(&repr.key).is_some_and(|l| l.generation > generation) {
            // Readers are past what the log could bring this to; the next build starts there.
            return Ok(());
        }
        caches.ann.insert(repr.key.clone(), (index.base_generation, Some(graph)));
        let loaded = Loaded { value: Arc::new(index), generation, at: std::time::Instant::now() };
        caches.dense.insert(repr.key.clone(), loaded);
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
            self.store.set_aux(&ann_blob(&b.name), &b.blob)?;
        }
        Ok(())
    }
}
