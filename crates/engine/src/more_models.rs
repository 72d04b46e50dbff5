//! A store that holds vectors of several embedding models, for strategies that fuse a dense
//! list per model with BM25's (`models=A+B`): two encoders trained on different data err on
//! different queries, the cheapest ensemble there is.
//!
//! The store's own model (the manifest's `model`) is searched as before. Each further model
//! (`Manifest::extra_models`) has, for every stored chunk representation `R` with text of its
//! own (plain, contextual), its vectors of the same texts under `R|NAME`. A model is added like
//! [`Writer::adopt_model`] adopts one: every document is embedded first, then the manifest
//! lists the model, so no reader ever searches it with documents missing; ingests after that
//! embed new documents with it in [`Writer::derive`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use ckeep_embed::{Embedder, InputKind};
use ckeep_store::{Manifest, ModelRecord};

use crate::error::{Error, Result};
use crate::manifest::{ManifestExt, is_summary_repr};
use crate::represent::{Representation, Resolved, Source};
use crate::strategy::Strategy;

/// Separates a representation's name from the further model whose vectors it holds.
const MODEL_SEPARATOR: char = '|';

/// Name of representation `repr`'s vectors by further model `model`.
pub(crate) fn model_repr(repr: &str, model: &str) -> String {
    format!("{repr}{MODEL_SEPARATOR}{model}")
}

/// The representation and further model of a stored name (`None`: the store's own model's).
pub(crate) fn split_model_repr(name: &str) -> (&str, Option<&str>) {
    name.split_once(MODEL_SEPARATOR).map_or((name, None), |(r, m)| (r, Some(m)))
}

/// Whether model spec `spec` (a name, directory or URL) names the model recorded as `name`
/// loaded from `source`: equal to either, or the same last path component.
fn names_model(spec: &str, name: &str, source: &str) -> bool {
    let base = |s: &str| {
        let s = s.trim_end_matches('/');
        s.rsplit('/').next().unwrap_or(s).to_string()
    };
    spec == name || spec == source || base(spec) == name || base(spec) == base(source)
}

/// Whether model spec `spec` names the loaded model `embedder`.
pub(crate) fn answers_to(embedder: &dyn Embedder, spec: &str) -> bool {
    let info = embedder.info();
    names_model(spec, &info.name, &info.source)
}

/// Whether model spec `spec` names the store's own model.
pub(crate) fn is_own_model(manifest: &Manifest, spec: &str) -> bool {
    let source = manifest.model_source.as_deref();
    manifest.model.as_deref().is_some_and(|n| names_model(spec, n, source.unwrap_or(n)))
}

/// The further model of the store that model spec `spec` names (not its own).
fn further_model<'m>(manifest: &'m Manifest, spec: &str) -> Option<&'m ModelRecord> {
    if is_own_model(manifest, spec) {
        return None;
    }
    manifest.extra_models.iter().find(|r| names_model(spec, &r.name, &r.source))
}

/// Whether model spec `spec` names one of the store's further models (and not its own).
pub(crate) fn is_further_model(manifest: &Manifest, spec: &str) -> bool {
    further_model(manifest, spec).is_some()
}

/// The representations a further model's vectors are kept for: each chunk representation of
/// its own text (not summaries, late chunking's token pooling or another further model's).
pub(crate) fn text_reprs(manifest: &Manifest) -> Vec<String> {
    manifest
        .representations
        .iter()
        .filter(|r| !is_summary_repr(r) && split_model_repr(r).1.is_none())
        .filter(|r| {
            let base = r.split_once('@').map_or(r.as_str(), |(b, _)| b);
            matches!(base.parse(), Ok(Representation::Plain | Representation::Contextual(_)))
        })
        .cloned()
        .collect()
}

/// One dense list of a search: the store's own model (`None`) or a further one.
#[derive(Debug, Clone)]
pub(crate) struct DenseModel(pub Option<ModelRecord>);

impl DenseModel {
    /// `repr` as this model's vectors hold it (quantised as `manifest` says).
    pub fn resolve(&self, repr: &Resolved, manifest: &Manifest) -> Result<Resolved> {
        let Some(record) = &self.0 else { return Ok(repr.clone()) };
        match &repr.source {
            Source::Stored(name) => {
                let key = model_repr(name, &record.name);
                Ok(Resolved {
                    quantize: manifest.quantization(&key)?,
                    key: key.clone(),
                    source: Source::Stored(key),
                    field: repr.field.clone(),
                })
            }
            Source::SummaryAvg { .. } | Source::WindowAvg(_) => Err(Error::Invalid(format!(
                "`{}` is derived from the store's own model's vectors; a further model ({}) has plain and contextual vectors only",
                repr.key, record.name
            ))),
        }
    }
}

/// The dense lists `strategy` searches on a store with `manifest`: its `model` first (the
/// store's own when it names none), then its `extra_models`, each the store's own or a further
/// model. A single model the store does not hold is left to the model check (a conflict, as
/// ever); among several it is refused here, naming the command that adds it.
pub(crate) fn dense_models(strategy: &Strategy, manifest: &Manifest) -> Result<Vec<DenseModel>> {
    let several = !strategy.extra_models.is_empty();
    let one = |spec: &String| match further_model(manifest, spec) {
        Some(record) => Ok(DenseModel(Some(record.clone()))),
        None if !several || is_own_model(manifest, spec) => Ok(DenseModel(None)),
        None => Err(Error::Invalid(format!(
            "the store holds vectors of {}, not of `{spec}`; add them with `ckeep add --model {spec}` (no inputs)",
            held_models(manifest)
        ))),
    };
    let first = strategy.model.as_ref().map_or(Ok(DenseModel(None)), one)?;
    std::iter::once(Ok(first)).chain(strategy.extra_models.iter().map(one)).collect()
}

/// The models a store holds vectors of, for messages.
fn held_models(manifest: &Manifest) -> String {
    let names: Vec<&str> = manifest
        .model
        .iter()
        .map(String::as_str)
        .chain(manifest.extra_models.iter().map(|r| r.name.as_str()))
        .collect();
    if names.is_empty() { "no model".into() } else { names.join(" and ") }
}

/// Further models loaded for queries and ingests, by fingerprint, shared by an engine and its
/// readers.
#[derive(Debug, Clone, Default)]
pub(crate) struct MoreModels {
    loaded: Arc<Mutex<HashMap<String, Arc<dyn Embedder>>>>,
    /// Models loaded by spec for the store's own dense lists (see [`MoreModels::load`]).
    by_spec: Arc<Mutex<HashMap<String, Arc<dyn Embedder>>>>,
    /// Whether models loaded here use the embedding cache.
    pub cache: bool,
}

impl MoreModels {
    /// Makes `embedder` the one used for its fingerprint.
    pub fn insert(&self, embedder: Arc<dyn Embedder>) {
        let fingerprint = embedder.info().fingerprint.clone();
        self.loaded.lock().unwrap_or_else(PoisonError::into_inner).insert(fingerprint, embedder);
    }

    /// The model `record` describes: given before, else loaded from where it was recorded.
    pub fn get(&self, record: &ModelRecord) -> Result<Arc<dyn Embedder>> {
        let mut loaded = self.loaded.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(e) = loaded.get(&record.fingerprint) {
            return Ok(Arc::clone(e));
        }
        let e = crate::models::load_model(&record.source, self.cache)?;
        if e.info().fingerprint != record.fingerprint {
            return Err(Error::ModelMismatch {
                stored: record.name.clone(),
                requested: format!(
                    "{} (loaded from {}, changed since)",
                    e.info().name,
                    record.source
                ),
            });
        }
        loaded.insert(record.fingerprint.clone(), Arc::clone(&e));
        Ok(e)
    }
}

impl MoreModels {
    /// The model `spec` (a name, directory or URL), loaded on first use and shared with the
    /// engine's readers: a store's own model when the engine was given none.
    pub fn load(&self, spec: &str) -> Result<Arc<dyn Embedder>> {
        let mut by_spec = self.by_spec.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(e) = by_spec.get(spec) {
            return Ok(Arc::clone(e));
        }
        let e = crate::models::load_model(spec, self.cache)?;
        by_spec.insert(spec.to_string(), Arc::clone(&e));
        Ok(e)
    }

    /// The model `spec` for scoring pairs beside the store's own (a learned pair model's
    /// further models): the store's further model of that name if it has one, else loaded by
    /// name, behind the embedding cache as the engine's further models are.
    pub fn pair_embedder(&self, manifest: &Manifest, spec: &str) -> Result<Arc<dyn Embedder>> {
        match further_model(manifest, spec) {
            Some(record) => self.get(record),
            None => Ok(crate::models::load_model(spec, self.cache)?),
        }
    }

    /// The query's normalised embedding by each of `models`: the store's own model (`own`,
    /// checked against `manifest`) or a further one.
    pub fn query_vectors(
        &self,
        own: Option<&Arc<dyn Embedder>>,
        manifest: &Manifest,
        models: &[DenseModel],
        query: &str,
    ) -> Result<Vec<Vec<f32>>> {
        models
            .iter()
            .map(|m| {
                let embedder = match &m.0 {
                    None => own_model(own, manifest)?,
                    Some(record) => self.get(record)?,
                };
                let (mut vectors, _) = embedder.embed(&[query], InputKind::Query)?;
                let mut q = vectors.pop().unwrap_or_default();
                ckeep_embed::normalize(&mut q);
                Ok(q)
            })
            .collect()
    }
}

/// The store's own model for a query: `own`, checked against the one `manifest` records.
fn own_model(own: Option<&Arc<dyn Embedder>>, manifest: &Manifest) -> Result<Arc<dyn Embedder>> {
    let Some(model) = manifest.model.as_deref() else {
        return Err(Error::ModelRequired(
            "the store has no vectors: it was built without a model; embed its chunks with `ckeep add --model NAME` (no inputs)".into(),
        ));
    };
    let embedder = own.ok_or_else(|| {
        Error::ModelRequired(format!("dense search needs the store's model; pass --model {model}"))
    })?;
    crate::vectors::check_model(manifest, embedder.as_ref())?;
    Ok(Arc::clone(embedder))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::represent::PLAIN_REPR;

    #[test]
    fn names_split_and_match() {
        assert_eq!(split_model_repr("contextual:title|e5"), ("contextual:title", Some("e5")));
        assert_eq!(split_model_repr(PLAIN_REPR), (PLAIN_REPR, None));
        assert!(names_model("/models/multilingual-e5-small/", "multilingual-e5-small", "/x"));
        assert!(names_model("e5", "other", "e5"));
        assert!(!names_model("minilm", "e5", "/m/e5"));
    }
}
