//! Query adapters (`ckeep adapt`): a linear map, learned from the store's own documents, that
//! a model's query vectors go through before they are searched. Only queries change, so the
//! stored chunk vectors stay valid and nothing is re-embedded; removing the adapter gives back
//! the original search exactly.

mod train;

pub use train::{Example, TrainOptions, Trained, mean_loss, train};

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use ckeep_embed::Embedder;
use ckeep_store::{AdapterRecord, Manifest, StoreRead, StoreWrite};
use safetensors::{Dtype, SafeTensors, tensor::TensorView};

use crate::engine::{Searcher, Writer};
use crate::error::{Error, Result};
use crate::more_models::model_repr;
use crate::represent::PLAIN_REPR;
use crate::strategy::Strategy;

/// The safetensors tensor holding the map (`dim × dim`, row-major, float32).
const WEIGHT: &str = "weight";

/// Where adapters' weights are kept among a store's auxiliary blobs.
const BLOB_PREFIX: &str = "adapter/";

/// A linear map of query vectors: `q ↦ W q / ‖W q‖`. The identity map changes nothing.
#[derive(Debug, Clone, PartialEq)]
pub struct QueryAdapter {
    dim: usize,
    /// `dim × dim`, row-major.
    weight: Vec<f32>,
}

impl QueryAdapter {
    /// The map that leaves every vector as it is (where training starts).
    pub fn identity(dim: usize) -> Self {
        let mut weight = vec![0.0; dim * dim];
        for i in 0..dim {
            weight[i * dim + i] = 1.0;
        }
        Self { dim, weight }
    }

    /// The map of `weight` (`dim × dim`, row-major).
    pub fn new(dim: usize, weight: Vec<f32>) -> Result<Self> {
        if dim == 0 || weight.len() != dim * dim || weight.iter().any(|w| !w.is_finite()) {
            return Err(Error::Invalid(format!(
                "a query adapter needs {dim} × {dim} finite weights, not {}",
                weight.len()
            )));
        }
        Ok(Self { dim, weight })
    }

    /// The vectors' length it maps.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// The weights, `dim × dim` row-major.
    pub fn weight(&self) -> &[f32] {
        &self.weight
    }

    /// Mutable weights, for training.
    pub fn weight_mut(&mut self) -> &mut [f32] {
        &mut self.weight
    }

    /// `W q` before normalisation.
    pub fn map(&self, q: &[f32]) -> Vec<f32> {
        self.weight.chunks_exact(self.dim).map(|row| ckeep_index::dot(row, q)).collect()
    }

    /// `q` mapped and normalised, as searches use it.
    pub fn apply(&self, q: &[f32]) -> Vec<f32> {
        let mut out = self.map(q);
        ckeep_embed::normalize(&mut out);
        out
    }

    /// The safetensors file of the map, with `metadata` in its header.
    pub fn to_safetensors(&self, metadata: HashMap<String, String>) -> Result<Vec<u8>> {
        let bytes: Vec<u8> = self.weight.iter().flat_map(|w| w.to_le_bytes()).collect();
        let view = TensorView::new(Dtype::F32, vec![self.dim, self.dim], &bytes)
            .map_err(|e| Error::Invalid(format!("query adapter: {e}")))?;
        safetensors::serialize([(WEIGHT, view)], Some(metadata))
            .map_err(|e| Error::Invalid(format!("query adapter: {e}")))
    }

    /// The fingerprint of the model a safetensors file's map was trained for, if it says.
    pub fn fingerprint_in(bytes: &[u8]) -> Option<String> {
        let (_, metadata) = SafeTensors::read_metadata(bytes).ok()?;
        metadata.metadata().as_ref()?.get("fingerprint").cloned()
    }

    /// The map in a safetensors file written by [`QueryAdapter::to_safetensors`].
    pub fn from_safetensors(bytes: &[u8]) -> Result<Self> {
        let bad = |e: String| Error::Invalid(format!("the query adapter is unreadable: {e}"));
        let tensors = SafeTensors::deserialize(bytes).map_err(|e| bad(e.to_string()))?;
        let t = tensors.tensor(WEIGHT).map_err(|e| bad(e.to_string()))?;
        let [rows, cols] = t.shape() else { return Err(bad("the weight is not a matrix".into())) };
        if t.dtype() != Dtype::F32 || rows != cols {
            return Err(bad(format!("the weight is {:?} {rows} × {cols}", t.dtype())));
        }
        let weight = t
            .data()
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        Self::new(*rows, weight)
    }
}

/// The blob name of an adapter of the model with `fingerprint` whose file is `bytes`: it
/// changes with the weights, so readers' caches never hold a replaced adapter.
fn blob_name(fingerprint: &str, bytes: &[u8]) -> String {
    let hash = blake3::hash(bytes).to_hex();
    format!("{BLOB_PREFIX}{fingerprint}/{}", &hash[..16])
}

/// Adapters read from stores, by blob name, shared by an engine and its readers.
#[derive(Debug, Clone, Default)]
pub(crate) struct AdapterCache {
    loaded: Arc<Mutex<HashMap<String, Arc<QueryAdapter>>>>,
}

impl AdapterCache {
    /// The adapter of `record`, read from `store` on first use.
    pub(crate) fn get<S: StoreRead>(
        &self,
        store: &S,
        record: &AdapterRecord,
    ) -> Result<Arc<QueryAdapter>> {
        let mut loaded = self.loaded.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(a) = loaded.get(&record.blob) {
            return Ok(Arc::clone(a));
        }
        let Some(bytes) = store.aux(&record.blob)? else {
            return Err(Error::Invalid(format!(
                "the store's query adapter for {} is missing its weights; remove it with `ckeep adapt --undo`",
                record.model
            )));
        };
        let adapter = Arc::new(QueryAdapter::from_safetensors(&bytes)?);
        loaded.insert(record.blob.clone(), Arc::clone(&adapter));
        Ok(adapter)
    }
}

/// A model of the store whose query vectors can be adapted, with the stored vectors its
/// searches score against by default.
#[derive(Debug, Clone)]
pub struct AdaptableModel {
    /// Its name.
    pub name: String,
    /// Its fingerprint.
    pub fingerprint: String,
    /// The model, to embed training queries and passages.
    pub embedder: Arc<dyn Embedder>,
    /// The stored representation trained against, of this model's vectors: `contextual:title`
    /// when the store holds it, else `plain`.
    pub repr: String,
    /// Whether that representation embeds each chunk with its document's title in front.
    pub title_in_front: bool,
}

impl<S: StoreRead> Searcher<'_, S> {
    /// The store's models whose queries an adapter could map: its own, then its further ones.
    /// A store without vectors has none.
    pub fn adaptable_models(&self) -> Result<Vec<AdaptableModel>> {
        let manifest = self.manifest();
        let (Some(name), Some(fingerprint)) = (&manifest.model, &manifest.model_fingerprint) else {
            return Ok(Vec::new());
        };
        // Chunks with their titles in front when the store holds them (`--fields title,text`,
        // and the indexes `eval run` builds for BEIR sets): what title-aware searches score.
        let title_in_front = manifest.default_repr.as_deref() == Some(TITLE_REPR)
            || manifest.representations.iter().any(|r| r == TITLE_REPR);
        let base = if title_in_front { TITLE_REPR } else { PLAIN_REPR };
        let mut models = vec![AdaptableModel {
            name: name.clone(),
            fingerprint: fingerprint.clone(),
            embedder: self.own_model(&Strategy::default())?,
            repr: base.to_string(),
            title_in_front,
        }];
        for record in &manifest.extra_models {
            models.push(AdaptableModel {
                name: record.name.clone(),
                fingerprint: record.fingerprint.clone(),
                embedder: self.engine.more_models.get(record)?,
                repr: model_repr(base, &record.name),
                title_in_front,
            });
        }
        Ok(models)
    }
}

/// The representation of stores added with `--fields title,text`.
const TITLE_REPR: &str = "contextual:title";

impl AdapterCache {
    /// Maps each of `vectors` (a query's, by `models` in order) through the store's adapter
    /// of its model, where it has one.
    pub(crate) fn map_queries<S: StoreRead>(
        &self,
        store: &S,
        manifest: &Manifest,
        models: &[crate::more_models::DenseModel],
        vectors: &mut [Vec<f32>],
    ) -> Result<()> {
        for (m, q) in models.iter().zip(vectors) {
            let fingerprint = match &m.0 {
                Some(record) => Some(record.fingerprint.as_str()),
                None => manifest.model_fingerprint.as_deref(),
            };
            let Some(record) = fingerprint.and_then(|f| manifest.adapter_for(f)) else { continue };
            let adapter = self.get(store, record)?;
            if adapter.dim() != q.len() {
                return Err(Error::Invalid(format!(
                    "the store's query adapter for {} maps {} values and the model gives {}; remove it with `ckeep adapt --undo`",
                    record.model,
                    adapter.dim(),
                    q.len()
                )));
            }
            *q = adapter.apply(q);
        }
        Ok(())
    }
}

impl<S: StoreWrite> Writer<'_, S> {
    /// Makes `adapter` the one the store applies to queries of the model `model` (name and
    /// fingerprint), replacing any earlier one: the weights are written first and the manifest
    /// last, so a failure between leaves the store searching as before.
    pub fn set_adapter(
        &mut self,
        model: &str,
        fingerprint: &str,
        adapter: &QueryAdapter,
        from: &str,
    ) -> Result<AdapterRecord> {
        let store = &mut self.engine.store;
        let mut manifest = store.manifest()?;
        let known = manifest.model_fingerprint.as_deref() == Some(fingerprint)
            || manifest.extra_models.iter().any(|m| m.fingerprint == fingerprint);
        if !known {
            return Err(Error::Invalid(format!("the store holds no vectors of model `{model}`")));
        }
        let metadata = HashMap::from([
            ("model".to_string(), model.to_string()),
            ("fingerprint".to_string(), fingerprint.to_string()),
            ("from".to_string(), from.to_string()),
        ]);
        let bytes = adapter.to_safetensors(metadata)?;
        let record = AdapterRecord {
            model: model.to_string(),
            fingerprint: fingerprint.to_string(),
            blob: blob_name(fingerprint, &bytes),
            from: from.to_string(),
        };
        let replaced: Vec<String> = manifest
            .adapters
            .iter()
            .filter(|a| a.fingerprint == fingerprint && a.blob != record.blob)
            .map(|a| a.blob.clone())
            .collect();
        store.set_aux(&record.blob, &bytes)?;
        manifest.adapters.retain(|a| a.fingerprint != fingerprint);
        manifest.adapters.push(record.clone());
        store.set_manifest(&manifest)?;
        let replaced: Vec<&str> = replaced.iter().map(String::as_str).collect();
        store.write_aux(&[], &replaced)?;
        Ok(record)
    }

    /// Removes every query adapter (`ckeep adapt --undo`): searches are again exactly as they
    /// were before adapting. The adapters removed.
    pub fn remove_adapters(&mut self) -> Result<Vec<AdapterRecord>> {
        let store = &mut self.engine.store;
        let mut manifest = store.manifest()?;
        let removed = std::mem::take(&mut manifest.adapters);
        if removed.is_empty() {
            return Ok(removed);
        }
        store.set_manifest(&manifest)?;
        let blobs: Vec<&str> = removed.iter().map(|a| a.blob.as_str()).collect();
        store.write_aux(&[], &blobs)?;
        Ok(removed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_identity_changes_nothing_and_the_file_round_trips() {
        let q = [0.6f32, 0.8, 0.0];
        assert_eq!(QueryAdapter::identity(3).apply(&q), q.to_vec());
        let a = QueryAdapter::new(2, vec![0.0, 2.0, 1.0, 0.0]).unwrap();
        assert_eq!(a.apply(&[1.0, 0.0]), vec![0.0, 1.0]);
        let bytes = a.to_safetensors(HashMap::new()).unwrap();
        assert_eq!(QueryAdapter::from_safetensors(&bytes).unwrap(), a);
        assert!(QueryAdapter::from_safetensors(b"not a file").is_err());
        assert!(QueryAdapter::new(2, vec![1.0, f32::NAN, 0.0, 1.0]).is_err());
        assert_ne!(blob_name("f", &bytes), blob_name("f", b"other"));
    }
}
