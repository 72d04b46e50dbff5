//! A model for a store built without one (`ckeep add --model NAME` with no inputs): every stored
//! leaf chunk is embedded as an ingest would have embedded it, through the embedding cache, a
//! batch of documents per transaction.
//!
//! The manifest takes the model only once every document has its vectors, so until then the
//! store is a BM25 store to every reader, never a dense one missing documents. An interrupted
//! run resumes with the documents still lacking vectors; the model being adopted is recorded,
//! so a rerun with another model is refused instead of mixing two models' vectors.

use std::time::Instant;

use ckeep_embed::ModelInfo;
use ckeep_store::{Manifest, StoreWrite};

use crate::error::{Error, Result};
use crate::represent::PLAIN_REPR;
use crate::stage::{DeriveProgress, StageReport};
use crate::writer::Writer;

/// Where the model being adopted is recorded until the manifest takes it.
const ADOPTING: &str = "adopting_model";

/// Records `info` as the model of `manifest`, with its plain vectors first among the
/// representations, as a store built with the model from the start has them.
pub(crate) fn record_model(manifest: &mut Manifest, info: &ModelInfo) {
    manifest.model = Some(info.name.clone());
    manifest.model_fingerprint = Some(info.fingerprint.clone());
    manifest.model_source = Some(info.source.clone());
    if !manifest.representations.iter().any(|r| r == PLAIN_REPR) {
        manifest.representations.insert(0, PLAIN_REPR.to_string());
    }
}

impl<S: StoreWrite> Writer<'_, S> {
    /// Embeds the stored chunks of a store built without a model with this engine's model,
    /// then records the model and builds the vectors of the representations and summaries the
    /// store keeps. Nothing to do when the store already has this model; a store with another
    /// model is refused.
    pub fn adopt_model(&mut self, progress: DeriveProgress<'_>) -> Result<StageReport> {
        let embedder = self.engine.embedder.clone().ok_or_else(|| {
            Error::ModelRequired("embedding the stored chunks needs --model".into())
        })?;
        let info = embedder.info().clone();
        let mut manifest = self.engine.store.manifest()?;
        let stage = format!("embedding stored chunks with {}", info.name);
        let mut report = StageReport { stage, ..StageReport::default() };
        if manifest.model.is_some() {
            crate::vectors::check_model(&manifest, embedder.as_ref())?;
            return Ok(report);
        }
        let claim = format!("{}\n{}", info.fingerprint, info.name);
        match self.engine.store.aux(ADOPTING)? {
            Some(bytes) if !bytes.is_empty() && bytes != claim.as_bytes() => {
                let text = String::from_utf8_lossy(&bytes);
                let stored = text.split_once('\n').map_or(&*text, |(_, name)| name).to_string();
                return Err(Error::ModelMismatch { stored, requested: info.name });
            }
            Some(bytes) if !bytes.is_empty() => {}
            _ => self.engine.store.set_aux(ADOPTING, claim.as_bytes())?,
        }
        let started = Instant::now();
        self.embed_lacking_vectors(PLAIN_REPR, embedder.as_ref(), &mut report, progress)?;
        record_model(&mut manifest, &info);
        self.engine.store.set_manifest(&manifest)?;
        // Documents another writer added without a model meanwhile.
        self.embed_lacking_vectors(PLAIN_REPR, embedder.as_ref(), &mut report, progress)?;
        self.engine.store.set_aux(ADOPTING, b"")?;
        self.require(&[], &[])?;
        self.derive(progress)?;
        if !self.engine.background_index {
            self.refresh_vector_index()?;
        }
        report.seconds = started.elapsed().as_secs_f64();
        Ok(report)
    }
}
