//! A model for a store built without one (`ckeep add --model NAME` with no inputs), or a
//! further model beside its own (`ckeep add --model A --model B`): every stored leaf chunk is
//! embedded as an ingest would have embedded it, through the embedding cache, a batch of
//! documents per transaction.
//!
//! The manifest takes the model only once every document has its vectors, so until then the
//! store is a BM25 store to every reader, never a dense one missing documents. An interrupted
//! run resumes with the documents still lacking vectors; the model being adopted is recorded,
//! so a rerun with another model is refused instead of mixing two models' vectors.

use std::sync::Arc;
use std::time::Instant;

use ckeep_embed::{Embedder, InputKind, ModelInfo};
use ckeep_store::{DerivedWrite, Lacking, Manifest, ModelRecord, StoreWrite, VectorEntry};

use crate::engine::Writer;
use crate::error::{Error, Result};
use crate::more_models::{model_repr, split_model_repr, text_reprs};
use crate::represent::{PLAIN_REPR, Representation, context_prefix};
use crate::stage::{DeriveProgress, StageReport};

/// Documents per transaction when a model embeds the stored chunks: a few seconds each.
const BATCH_DOCS: usize = 64;

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

impl<S: StoreWrite> Writer<'_, S> {
    /// Adds `embedder` as a further model of a store that has a model of its own: every
    /// stored chunk's text (plain and contextual representations) is embedded with it through
    /// the embedding cache, a batch of documents per transaction, and then the manifest lists
    /// it. An interrupted run resumes with the documents still lacking its vectors. Nothing to
    /// do for the store's own model or one it already holds.
    pub fn add_model(
        &mut self,
        embedder: Arc<dyn Embedder>,
        progress: DeriveProgress<'_>,
    ) -> Result<StageReport> {
        let info = embedder.info().clone();
        let stage = format!("embedding stored chunks with {}", info.name);
        let mut report = StageReport { stage, ..StageReport::default() };
        let manifest = self.engine.store.manifest()?;
        if manifest.model_fingerprint.is_none() {
            return Err(Error::ModelRequired(
                "the store has no model of its own yet: add it first (`ckeep add --model NAME`, no inputs), then further ones".into(),
            ));
        }
        if manifest.model_fingerprint.as_deref() == Some(info.fingerprint.as_str())
            || manifest.extra_models.iter().any(|r| r.fingerprint == info.fingerprint)
        {
            return Ok(report);
        }
        if let Some(clash) = manifest.extra_models.iter().find(|r| r.name == info.name) {
            return Err(Error::ModelMismatch {
                stored: format!("{} ({})", clash.name, clash.source),
                requested: format!("{} ({})", info.name, info.source),
            });
        }
        if manifest.model.as_deref() == Some(info.name.as_str()) {
            return Err(Error::Invalid(format!(
                "the store's own model is also named `{}` but gives other vectors; load the further model from a directory of another name",
                info.name
            )));
        }
        if manifest.extra_models.len() + 1 >= ckeep_index::MAX_DENSE_LISTS {
            return Err(Error::Invalid(format!(
                "the store holds {} models; a strategy fuses at most {}",
                manifest.extra_models.len() + 1,
                ckeep_index::MAX_DENSE_LISTS
            )));
        }
        let started = Instant::now();
        let names: Vec<String> =
            text_reprs(&manifest).iter().map(|r| model_repr(r, &info.name)).collect();
        for name in &names {
            self.embed_lacking_vectors(name, embedder.as_ref(), &mut report, progress)?;
        }
        let mut manifest = self.engine.store.manifest()?;
        manifest.extra_models.push(ModelRecord {
            name: info.name.clone(),
            fingerprint: info.fingerprint.clone(),
            source: info.source.clone(),
        });
        for name in &names {
            if !manifest.representations.contains(name) {
                manifest.representations.push(name.clone());
            }
        }
        self.engine.store.set_manifest(&manifest)?;
        // Documents another writer added meanwhile.
        for name in &names {
            self.embed_lacking_vectors(name, embedder.as_ref(), &mut report, progress)?;
        }
        self.engine.more_models.insert(embedder);
        if !self.engine.background_index {
            self.refresh_vector_index()?;
        }
        report.seconds = started.elapsed().as_secs_f64();
        Ok(report)
    }

    /// Embeds, with `embedder`, the texts of stored representation `name` (plain or
    /// contextual, or either by a further model as `R|MODEL`) for every document that lacks
    /// its vectors, a batch per transaction: how a model is adopted or added.
    pub(crate) fn embed_lacking_vectors(
        &mut self,
        name: &str,
        embedder: &dyn Embedder,
        report: &mut StageReport,
        progress: DeriveProgress<'_>,
    ) -> Result<()> {
        let lacking = self.engine.store.documents_lacking(Lacking::Vectors(name))?;
        if lacking.is_empty() {
            return Ok(());
        }
        let (repr_name, _) = split_model_repr(name);
        let (base, summarizer) =
            repr_name.split_once('@').map_or((repr_name, None), |(r, s)| (r, Some(s)));
        let repr: Representation = base.parse().map_err(Error::Invalid)?;
        let total = report.documents + lacking.len() as u64;
        progress(&report.stage, report.documents, total);
        for ids in lacking.chunks(BATCH_DOCS) {
            let docs = self.documents_with_leaves(ids)?;
            let texts = self.leaf_texts(repr, summarizer, &docs)?;
            let flat: Vec<&str> = texts.iter().flatten().map(String::as_str).collect();
            let (vectors, _) = embedder.embed(&flat, InputKind::Document)?;
            let mut vectors = vectors.into_iter();
            let writes: Vec<DerivedWrite> = docs
                .iter()
                .map(|(d, leaves)| DerivedWrite {
                    doc_id: d.document.id.clone(),
                    hash: d.hash.clone(),
                    vectors: leaves
                        .iter()
                        .map(|c| VectorEntry {
                            repr: name.to_string(),
                            ordinal: c.ordinal,
                            vector: vectors.next().unwrap_or_default(),
                        })
                        .collect(),
                    ..DerivedWrite::default()
                })
                .collect();
            report.vectors += writes.iter().map(|w| w.vectors.len() as u64).sum::<u64>();
            self.engine.store.write_derived(writes)?;
            report.documents += ids.len() as u64;
            progress(&report.stage, report.documents, total);
        }
        Ok(())
    }

    /// The texts representation `repr` embeds for each leaf of `docs`: the leaf's own
    /// (plain), or with its context in front.
    pub(crate) fn leaf_texts(
        &self,
        repr: Representation,
        summarizer: Option<&str>,
        docs: &[(ckeep_store::StoredDocument, Vec<ckeep_core::Chunk>)],
    ) -> Result<Vec<Vec<String>>> {
        let mut texts = Vec::with_capacity(docs.len());
        for (doc, leaves) in docs {
            let text = &doc.document.text;
            texts.push(match repr {
                Representation::Contextual(parts) => {
                    let summary = match summarizer {
                        Some(s) if parts.summary => self
                            .engine
                            .store
                            .summaries(&doc.document.id)?
                            .into_iter()
                            .find(|(n, _)| n == s)
                            .map(|(_, t)| t)
                            .unwrap_or_default(),
                        _ => String::new(),
                    };
                    leaves
                        .iter()
                        .map(|c| {
                            let prefix = context_prefix(
                                parts,
                                &doc.document.title,
                                &c.heading_path(),
                                &summary,
                            );
                            format!("{prefix}{}", c.span.slice(text))
                        })
                        .collect()
                }
                Representation::Plain
                | Representation::Late
                | Representation::Summary
                | Representation::SummaryAvg(_)
                | Representation::WindowAvg(_) => {
                    leaves.iter().map(|c| c.span.slice(text).to_string()).collect()
                }
            });
        }
        Ok(texts)
    }
}
