//! Dense retrieval: the query's embedding against every chunk vector of the store (exact cosine),
//! and the checks that the model asked for is the one the store's vectors came from.

use std::sync::Arc;

use ckeep_core::ChunkHit;
use ckeep_embed::{Embedder, InputKind};
use ckeep_index::{Hnsw, HnswParams, dot_all};
use ckeep_store::{Manifest, StoreRead, StoreWrite, VectorMatrix};
use rayon::prelude::*;

use crate::represent::{Representation, Resolved, Source};
use crate::{Engine, Error, PLAIN_REPR, Result};

/// Collections with at least this many vectors are searched through the HNSW graph (unless the
/// strategy says `exact`); below it an exact scan is fast enough and always right.
pub const ANN_MIN_VECTORS: usize = 20_000;

/// Beam width of HNSW searches (at least the number of candidates asked for).
const ANN_EF: usize = 128;

/// Name of a representation's persisted graph among the store's derived blobs.
fn ann_blob(key: &str) -> String {
    format!("hnsw:{key}")
}

/// What the persisted graph was built over: the vectors' chunk ids and dimension. A graph with
/// another stamp is stale.
fn stamp(m: &VectorMatrix) -> [u8; 32] {
    let mut h = blake3::Hasher::new();
    h.update(&(m.dim as u64).to_le_bytes());
    for id in &m.ids {
        h.update(&id.0.to_le_bytes());
    }
    *h.finalize().as_bytes()
}

/// Whether a stored graph blob (stamp, then graph) was built over vectors with this stamp.
fn is_current(blob: &[u8], stamp: &[u8; 32]) -> bool {
    blob.len() > 32 && blob[..32] == *stamp
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
                "the store has no vectors: it was built without a model; add documents with `ckeep add --model NAME` to a new store".into(),
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
    /// chunk (exact scan), or, for large collections unless `exact`, the best `candidates` found
    /// through the HNSW graph.
    pub(crate) fn dense_hits(
        &self,
        q: &[f32],
        repr: &Resolved,
        candidates: usize,
        exact: bool,
    ) -> Result<Vec<ChunkHit>> {
        let m = self.matrix(repr)?;
        if m.is_empty() {
            return Ok(Vec::new());
        }
        if m.dim != q.len() {
            return Err(Error::Invalid(format!(
                "the store's vectors have {} dimensions, the query's {}",
                m.dim,
                q.len()
            )));
        }
        if !exact && m.len() >= ANN_MIN_VECTORS {
            let graph = self.graph(&repr.key, &m);
            return Ok(graph
                .search(&m.data, q, candidates, ANN_EF.max(candidates))
                .into_iter()
                .map(|(row, score)| ChunkHit {
                    chunk: m.ids[row as usize],
                    doc: m.docs[row as usize],
                    score,
                })
                .collect());
        }
        Ok(dot_all(&m.data, m.dim, q)
            .into_iter()
            .enumerate()
            .map(|(i, score)| ChunkHit { chunk: m.ids[i], doc: m.docs[i], score })
            .collect())
    }

    /// The HNSW graph of `m` (the vectors of representation `key`): cached, else the persisted
    /// one if its stamp matches, else built now (and persisted at the next ingest).
    pub(crate) fn graph(&self, key: &str, m: &VectorMatrix) -> Arc<Hnsw> {
        if let Some(g) = self.ann.read().unwrap_or_else(std::sync::PoisonError::into_inner).get(key)
        {
            return Arc::clone(g);
        }
        let stamp = stamp(m);
        let stored = self.store.aux(&ann_blob(key)).ok().flatten().and_then(|bytes| {
            is_current(&bytes, &stamp).then(|| Hnsw::from_bytes(&bytes[32..])).flatten()
        });
        let g =
            Arc::new(stored.unwrap_or_else(|| Hnsw::build(&m.data, m.dim, HnswParams::default())));
        self.ann
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(key.to_string(), Arc::clone(&g));
        g
    }

    /// The plain representation, resolved.
    pub(crate) fn plain(&self) -> Result<Resolved> {
        Representation::Plain.resolve(None, &self.store.manifest()?, true)
    }

    /// A representation's vectors, L2-normalised, loaded (or derived) once.
    pub(crate) fn matrix(&self, repr: &Resolved) -> Result<Arc<VectorMatrix>> {
        if let Some(m) =
            self.dense.read().unwrap_or_else(std::sync::PoisonError::into_inner).get(&repr.key)
        {
            return Ok(Arc::clone(m));
        }
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
        let m = Arc::new(m);
        self.dense
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(repr.key.clone(), Arc::clone(&m));
        Ok(m)
    }
}

impl<S: StoreWrite> Engine<S> {
    /// Builds and persists the HNSW graph of each stored chunk-level representation when the
    /// collection is large enough and the stored graph is missing or stale; returns whether it
    /// built one. (Derived representations get theirs in memory on their first query.)
    pub fn refresh_vector_index(&mut self) -> Result<bool> {
        self.forget_vectors();
        let manifest = self.store.manifest()?;
        let mut built = false;
        for name in manifest.representations.iter().filter(|r| !r.starts_with("summary:")) {
            let repr =
                Resolved { key: name.clone(), source: Source::Stored(name.clone()), field: None };
            let m = self.matrix(&repr)?;
            if m.len() < ANN_MIN_VECTORS {
                continue;
            }
            let stamp = stamp(&m);
            let blob_name = ann_blob(name);
            if self.store.aux(&blob_name)?.is_some_and(|b| is_current(&b, &stamp)) {
                continue;
            }
            let graph = Hnsw::build(&m.data, m.dim, HnswParams::default());
            let mut blob = stamp.to_vec();
            blob.extend(graph.to_bytes());
            self.store.set_aux(&blob_name, &blob)?;
            self.ann
                .get_mut()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .insert(name.clone(), Arc::new(graph));
            built = true;
        }
        Ok(built)
    }
}
