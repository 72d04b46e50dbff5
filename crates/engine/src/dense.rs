//! Dense retrieval: the query's embedding against every chunk vector of the store (exact cosine),
//! and the checks that the model asked for is the one the store's vectors came from.

use std::sync::Arc;

use std::collections::{HashMap, HashSet};

use ckeep_core::{ChunkHit, ChunkId, DocKey};
use ckeep_embed::{Embedder, InputKind};
use ckeep_index::{Hnsw, dot_all, top_k};
use ckeep_store::{Manifest, ReadSnapshot, StoreRead, VectorMatrix};
use rayon::prelude::*;

use crate::live::DenseIndex;
use crate::represent::{Representation, Resolved, Source};
use crate::{Caches, Engine, Error, Loaded, PLAIN_REPR, Result};

/// Collections with at least this many vectors are searched through the HNSW graph (unless the
/// strategy says `exact`); below it an exact scan is fast enough and always right.
pub const ANN_MIN_VECTORS: usize = 20_000;

/// Beam width of HNSW searches (at least the number of candidates asked for).
pub(crate) const ANN_EF: usize = 128;

/// Changes applied to loaded vectors rather than reading them all again: up to a quarter of
/// the rows plus this many (so a small collection still follows its writes by the log).
pub(crate) const MIN_CHANGES_READ_ALL: usize = 1_024;

/// Extra neighbours asked of a store that searches its own vectors (see
/// [`Engine::store_hits`]).
const NEAREST_MARGIN: usize = 16;

/// Name of a representation's persisted graph among the store's derived blobs.
pub(crate) fn ann_blob(key: &str) -> String {
    format!("hnsw:{key}")
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

/// Vectors of another dimension than the query's cannot be compared with it.
fn same_dimension(dim: usize, q: &[f32]) -> Result<()> {
    if dim == q.len() {
        return Ok(());
    }
    Err(Error::Invalid(format!(
        "the store's vectors have {dim} dimensions, the query's {}",
        q.len()
    )))
}

/// Every row of `m` scored against `q`: how the rows a store found are scored.
fn scan(m: &VectorMatrix, q: &[f32]) -> Vec<ChunkHit> {
    dot_all(&m.data, m.dim, q)
        .into_iter()
        .enumerate()
        .map(|(i, score)| ChunkHit { chunk: m.ids[i], doc: m.docs[i], score })
        .collect()
}

/// What [`Engine::load_cached`] keeps per representation: its map among the caches.
pub(crate) trait Cached: Sized {
    fn slot(caches: &Caches) -> &HashMap<String, Loaded<Self>>;
    fn slot_mut(caches: &mut Caches) -> &mut HashMap<String, Loaded<Self>>;
}

impl Cached for DenseIndex {
    fn slot(caches: &Caches) -> &HashMap<String, Loaded<Self>> {
        &caches.dense
    }
    fn slot_mut(caches: &mut Caches) -> &mut HashMap<String, Loaded<Self>> {
        &mut caches.dense
    }
}

/// Checks `embedder` against the model recorded in `manifest` (if any).
pub(crate) fn check_model(manifest: &Manifest, embedder: &dyn Embedder) -> Result<()> {
    match &manifest.model_fingerprint {
        Some(fp) if *fp != embedder.info().fingerprint => Err(Error::ModelMismatch {
            stored: manifest.model.clone().unwrap_or_default(),
            requested: embedder.info().name.clone(),
        }),
        _ => Ok(()),
    }
}

impl<S: StoreRead> Engine<S> {
    /// The embedder, checked against the store's manifest.
    fn query_embedder(&self) -> Result<&Arc<dyn Embedder>> {
        let manifest = self.store.manifest()?;
        let Some(model) = manifest.model.as_deref() else {
            return Err(Error::ModelRequired(
                "the store has no vectors: it was built without a model; embed its chunks with `ckeep add --model NAME` (no inputs)".into(),
            ));
        };
        let embedder = self.embedder.as_ref().ok_or_else(|| {
            Error::ModelRequired(format!(
                "dense search needs the store's model; pass --model {model}"
            ))
        })?;
        check_model(&manifest, embedder.as_ref())?;
        Ok(embedder)
    }

    /// The query's embedding, normalised.
    pub(crate) fn query_vector(&self, query: &str) -> Result<Vec<f32>> {
        let embedder = self.query_embedder()?;
        let (mut vectors, _) = embedder.embed(&[query], InputKind::Query)?;
        let mut q = vectors.pop().unwrap_or_default();
        ckeep_embed::normalize(&mut q);
        Ok(q)
    }

    /// Chunks scored by cosine similarity to the query vector `q` under a representation: every
    /// chunk (exact scan), or, unless the strategy says `exact`, the best `candidates` found
    /// through the HNSW graph (large collections, no filter) or through the compact codes of a
    /// quantised representation (rescored); only chunks of `allowed` documents when given.
    pub(crate) fn dense_hits(
        &self,
        q: &[f32],
        repr: &Resolved,
        candidates: usize,
        strategy: &crate::Strategy,
        allowed: Option<&HashSet<DocKey>>,
    ) -> Result<Vec<ChunkHit>> {
        let exact = strategy.exact || allowed.is_some();
        if let Source::Stored(name) = &repr.source {
            // Quantised: our own scan of the codes, whatever the store (a PostgreSQL store
            // then serves the candidates' float32 vectors for rescoring).
            let kind = strategy.quantize.unwrap_or(repr.quantize);
            if kind != ckeep_index::Quantization::None && !strategy.exact {
                let rescoring = crate::quantized::Rescoring {
                    oversample: strategy.oversample,
                    rescore: strategy.rescore,
                };
                return self.quantized_hits(q, name, kind, candidates, rescoring, allowed);
            }
            if self.store.searches_vectors()
                && let Some(hits) = self.store_hits(q, name, candidates, exact, allowed)?
            {
                return Ok(hits);
            }
        }
        let (index, _, stale) = self.dense_index(repr)?;
        if index.len() == 0 {
            return Ok(Vec::new());
        }
        same_dimension(index.dim(), q)?;
        let graph = (!exact && index.base.len() >= ANN_MIN_VECTORS)
            .then(|| self.graph(&repr.key, &index.base, index.base_generation))
            .flatten();
        let mut hits = index.search(q, graph.as_deref(), candidates, ANN_EF);
        if let Some(allowed) = allowed {
            hits.retain(|h| allowed.contains(&h.doc));
        }
        if stale { self.live_hits(hits, candidates) } else { Ok(hits) }
    }

    /// Chunks found by the store's own vector search (PostgreSQL + pgvector), scored here
    /// exactly as [`Engine::dense_hits`] scores its own scan: the store ranks, the engine
    /// scores. A few more than `candidates` are asked for, so a near tie at the cut, ordered
    /// differently by the database's arithmetic, cannot change which chunks are kept. `None` when
    /// the store declined to search after all: the caller then scans as for any other store.
    fn store_hits(
        &self,
        q: &[f32],
        repr: &str,
        candidates: usize,
        exact: bool,
        allowed: Option<&HashSet<DocKey>>,
    ) -> Result<Option<Vec<ChunkHit>>> {
        let docs: Option<Vec<DocKey>> = allowed.map(|a| {
            let mut keys: Vec<DocKey> = a.iter().copied().collect();
            keys.sort_unstable();
            keys
        });
        let asked = candidates + NEAREST_MARGIN;
        let Some(mut m) = self.store.nearest(repr, q, asked, exact, docs.as_deref())? else {
            return Ok(None);
        };
        if m.is_empty() {
            return Ok(Some(Vec::new()));
        }
        same_dimension(m.dim, q)?;
        m.data.chunks_mut(m.dim).for_each(ckeep_embed::normalize);
        Ok(Some(top_k(scan(&m, q), candidates)))
    }

    /// The HNSW graph of `m` (the vectors of representation `key`, read at store generation
    /// `generation`): cached, else the persisted one if its stamp matches, else built now (and
    /// persisted at the next ingest) — or, with a background index, `None` until it is rebuilt.
    pub(crate) fn graph(&self, key: &str, m: &VectorMatrix, generation: u64) -> Option<Arc<Hnsw>> {
        let cached = || {
            let caches = self.caches.read().unwrap_or_else(std::sync::PoisonError::into_inner);
            caches.ann.get(key).filter(|(g, _)| *g == generation).map(|(_, graph)| graph.clone())
        };
        if let Some(g) = cached() {
            return g;
        }
        let _loading = self.loading.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(g) = cached() {
            return g;
        }
        let g = match self.stored_graph(key, &stamp(m)) {
            Some(g) => Some(Arc::new(g)),
            None if self.background_index => None,
            None => Some(Arc::new(self.graph_for(key, m))),
        };
        let mut caches = self.caches.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        let newer = caches.ann.get(key).is_some_and(|(g, _)| *g > generation);
        if !newer {
            caches.ann.insert(key.to_string(), (generation, g.clone()));
        }
        g
    }

    /// The graph the store keeps for representation `key`, if it was built over rows with
    /// this stamp (a missing, stale or unreadable one is `None`).
    pub(crate) fn stored_graph(&self, key: &str, stamp: &[u8; 32]) -> Option<Hnsw> {
        let bytes = self.store.aux(&ann_blob(key)).ok().flatten()?;
        let (_, graph) = crate::vector_index::blob_parts(&bytes)?;
        is_current(&bytes, stamp).then(|| Hnsw::from_bytes(graph)).flatten()
    }

    /// The plain representation, resolved.
    pub(crate) fn plain(&self) -> Result<Resolved> {
        Representation::Plain.resolve(None, &self.store.manifest()?, true)
    }

    /// A representation's vectors, L2-normalised, loaded (or derived) once per store
    /// generation — or, with a refresh interval, at most once per interval — with the
    /// generation they were read at and whether that is not the store's now (then hits must be
    /// checked against the store, see [`Engine::live_hits`]). After writes, the vectors of a
    /// stored representation are brought up to date from the store's change log.
    pub(crate) fn dense_index(&self, repr: &Resolved) -> Result<(Arc<DenseIndex>, u64, bool)> {
        self.load_cached(&repr.key, |previous, generation| {
            self.load_dense(repr, previous, generation)
        })
    }

    /// The representation's live vectors as one matrix, with the generation of their graph
    /// (see [`Engine::graph`]) when they are all the graph holds (no rows written or removed
    /// since it).
    pub(crate) fn matrix(&self, repr: &Resolved) -> Result<(Arc<VectorMatrix>, Option<u64>)> {
        let (index, _, _) = self.dense_index(repr)?;
        Ok(if index.is_pure() {
            (Arc::clone(&index.base), Some(index.base_generation))
        } else {
            (Arc::new(index.sorted_matrix()), None)
        })
    }

    /// The value of type `T` (vectors, codes) cached under `key`, loaded by `load` (given
    /// the value it replaces and the store's generation) once per store generation — or, with a refresh interval, at most once per interval —
    /// with the generation it was read at and whether that is not the store's now.
    pub(crate) fn load_cached<T: Cached>(
        &self,
        key: &str,
        load: impl FnOnce(Option<&Loaded<T>>, u64) -> Result<T>,
    ) -> Result<(Arc<T>, u64, bool)> {
        // The generation and the value from one snapshot.
        let _snapshot = ReadSnapshot::begin(&self.store)?;
        let current = self.store.generation()?;
        let cached = || {
            let caches = self.caches.read().unwrap_or_else(std::sync::PoisonError::into_inner);
            T::slot(&caches).get(key).cloned()
        };
        // Reuse: current; or newer than this (old) snapshot; or read less than half the
        // refresh interval ago, or while another query reloads. Half: a write that lands just
        // after a read is then picked up by a reload that starts half an interval later and
        // finishes (reading only the changed vectors) well within the interval it was promised.
        let reusable = |l: &Loaded<T>| {
            l.generation >= current
                || self
                    .refresh_interval
                    .is_some_and(|i| l.at.elapsed() < i / 2 || self.loading.try_lock().is_err())
        };
        if let Some(l) = cached().filter(reusable) {
            return Ok((l.value, l.generation, l.generation != current));
        }
        let _loading = self.loading.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let previous = cached();
        if let Some(l) = previous.as_ref().filter(|l| l.generation >= current) {
            return Ok((Arc::clone(&l.value), l.generation, l.generation != current));
        }
        // Aged from when the store was read, not from when the load finished.
        let started = std::time::Instant::now();
        let value = Arc::new(load(previous.as_ref(), current)?);
        let loaded = Loaded { value: Arc::clone(&value), generation: current, at: started };
        let mut caches = self.caches.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        T::slot_mut(&mut caches).insert(key.to_string(), loaded);
        Ok((value, current, false))
    }

    /// A representation's vectors as of the store's generation now, `generation`: `previous`
    /// with the changes since applied when the store logs them and they are few, else all read
    /// (or derived) again.
    fn load_dense(
        &self,
        repr: &Resolved,
        previous: Option<&Loaded<DenseIndex>>,
        generation: u64,
    ) -> Result<DenseIndex> {
        if let (Source::Stored(name), Some(previous)) = (&repr.source, previous)
            && let Some(changed) = self.store.vector_changes(name, previous.generation)?
            && changed.len() <= previous.value.len() / 4 + MIN_CHANGES_READ_ALL
            && let Some(index) = self.apply_changes(&previous.value, name, &changed)?
        {
            return Ok(index);
        }
        Ok(DenseIndex::full(self.load_matrix(repr)?, generation))
    }

    /// `index` with the vectors of the chunks `changed` (under stored representation `name`)
    /// read again: `None` when they no longer fit it (another dimension).
    pub(crate) fn apply_changes(
        &self,
        index: &DenseIndex,
        name: &str,
        changed: &[ChunkId],
    ) -> Result<Option<DenseIndex>> {
        let mut fresh = VectorMatrix { dim: index.dim(), ..VectorMatrix::default() };
        self.store.each_vector(name, Some(changed), &mut |chunk, doc, v| {
            fresh.dim = v.len();
            fresh.ids.push(chunk);
            fresh.docs.push(doc);
            fresh.data.extend_from_slice(v);
            let at = fresh.data.len() - v.len();
            ckeep_embed::normalize(&mut fresh.data[at..]);
        })?;
        Ok(index.with_changes(changed, &fresh))
    }

    /// A representation's vectors read (or derived) from the store, normalised.
    pub(crate) fn load_matrix(&self, repr: &Resolved) -> Result<VectorMatrix> {
        let m = match &repr.source {
            Source::Stored(name) => self.store.vectors(name)?,
            Source::SummaryAvg { alpha, summary } => {
                let mut plain = self.store.vectors(PLAIN_REPR)?;
                let summaries = self.store.vectors(summary)?;
                crate::represent::average_with_summaries(&mut plain, &summaries, *alpha);
                plain
            }
            Source::WindowAvg(w) => {
                let plain = self.store.vectors(PLAIN_REPR)?;
                crate::represent::window_average(&plain, *w)
            }
        };
        let mut m = m;
        if m.dim > 0 {
            m.data.par_chunks_mut(m.dim).for_each(ckeep_embed::normalize);
        }
        Ok(m)
    }

    /// Of hits from vectors read at another generation than the snapshot's, the best `keep`
    /// whose chunks the snapshot still has (chunk ids are never reused, so a chunk that exists
    /// is the one the vector was made from).
    pub(crate) fn live_hits(&self, mut hits: Vec<ChunkHit>, keep: usize) -> Result<Vec<ChunkHit>> {
        hits = top_k(hits, keep);
        let ids: Vec<ChunkId> = hits.iter().map(|h| h.chunk).collect();
        let live: HashSet<ChunkId> = self.store.live_chunks(&ids)?.into_iter().collect();
        hits.retain(|h| live.contains(&h.chunk));
        Ok(hits)
    }
}
