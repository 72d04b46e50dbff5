//! Dense retrieval: the query's embedding against every chunk vector of the store (exact cosine),
//! and the checks that the model asked for is the one the store's vectors came from.

use std::sync::Arc;

use ckeep_core::ChunkHit;
use ckeep_embed::{Embedder, InputKind};
use ckeep_store::{Manifest, StoreRead, VectorMatrix};
use rayon::prelude::*;

use crate::{Engine, Error, PLAIN_REPR, Result};

/// Rows scored per parallel task.
const ROWS_PER_TASK: usize = 4096;

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

    /// Every chunk with a vector, scored by cosine similarity to the query.
    pub(crate) fn dense_hits(&self, query: &str) -> Result<Vec<ChunkHit>> {
        let embedder = self.query_embedder()?;
        let (mut vectors, _) = embedder.embed(&[query], InputKind::Query)?;
        let mut q = vectors.pop().unwrap_or_default();
        ckeep_embed::normalize(&mut q);
        let m = self.matrix()?;
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
        let scores: Vec<f32> = m
            .data
            .par_chunks(ROWS_PER_TASK * m.dim)
            .flat_map_iter(|block| block.chunks_exact(m.dim).map(|row| dot(row, &q)))
            .collect();
        Ok(scores
            .into_iter()
            .enumerate()
            .map(|(i, score)| ChunkHit { chunk: m.ids[i], doc: m.docs[i], score })
            .collect())
    }

    /// The store's plain vectors, L2-normalised, loaded once.
    fn matrix(&self) -> Result<Arc<VectorMatrix>> {
        if let Some(m) =
            self.dense.read().unwrap_or_else(std::sync::PoisonError::into_inner).as_ref()
        {
            return Ok(Arc::clone(m));
        }
        let mut m = self.store.vectors(PLAIN_REPR)?;
        if m.dim > 0 {
            m.data.par_chunks_mut(m.dim).for_each(ckeep_embed::normalize);
        }
        let m = Arc::new(m);
        *self.dense.write().unwrap_or_else(std::sync::PoisonError::into_inner) =
            Some(Arc::clone(&m));
        Ok(m)
    }
}

/// Dot product with eight independent accumulators, so the compiler vectorises it.
pub(crate) fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0f32; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = ca.remainder().iter().zip(cb.remainder()).map(|(x, y)| x * y).sum();
    for (x, y) in ca.zip(cb) {
        for i in 0..8 {
            acc[i] += x[i] * y[i];
        }
    }
    acc.iter().sum::<f32>() + tail
}

#[cfg(test)]
mod tests {
    #[test]
    fn dot_matches_the_plain_sum() {
        let a: Vec<f32> = (0..389).map(|i| (i as f32 * 0.37).sin()).collect();
        let b: Vec<f32> = (0..389).map(|i| (i as f32 * 0.11).cos()).collect();
        let plain: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
        assert!((super::dot(&a, &b) - plain).abs() < 1e-4);
    }
}
