//! Which embedding model a store is searched with, and loading it behind the embedding cache:
//! one rule for every front end (the CLI, the server, the Python bindings).

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use ckeep_embed::{CachedEmbedder, Embedder, EmbeddingCache};
use ckeep_store::Manifest;

/// Loads a model (name, directory or URL) behind the user's embedding cache (see
/// [`EmbeddingCache::default_path`]), or uncached when `cache` is false.
pub fn load_model(spec: &str, cache: bool) -> ckeep_embed::Result<Arc<dyn Embedder>> {
    let model = ckeep_embed::load(spec)?;
    let cache = if cache {
        Some(Arc::new(EmbeddingCache::open(&EmbeddingCache::default_path())?))
    } else {
        None
    };
    Ok(Arc::new(CachedEmbedder::new(model, cache)))
}

/// Models loaded once each, by spec, and shared: an evaluation or a Python store names the same
/// model in many places.
#[derive(Debug)]
pub struct ModelSet {
    cache: bool,
    loaded: Mutex<HashMap<String, Arc<dyn Embedder>>>,
}

impl ModelSet {
    /// An empty set whose models use the embedding cache if `cache`.
    pub fn new(cache: bool) -> Self {
        Self { cache, loaded: Mutex::new(HashMap::new()) }
    }

    /// The model `spec`, loaded on first use.
    pub fn get(&self, spec: &str) -> ckeep_embed::Result<Arc<dyn Embedder>> {
        // A panic while loading leaves the map as it was: nothing half-inserted.
        let mut loaded = self.loaded.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(m) = loaded.get(spec) {
            return Ok(Arc::clone(m));
        }
        let m = load_model(spec, self.cache)?;
        loaded.insert(spec.to_string(), Arc::clone(&m));
        Ok(m)
    }
}

/// The model a store was built with, as a model spec: where it was loaded from when that
/// still exists (a directory or a URL), else its name.
pub fn stored_model(manifest: &Manifest) -> Option<String> {
    // A directory loaded in int8 is recorded as `DIR@int8`.
    let source = manifest.model_source.as_deref().filter(|s| {
        s.starts_with("http://")
            || s.starts_with("https://")
            || Path::new(ckeep_embed::Precision::split(s).0).is_dir()
    });
    source.map(str::to_string).or_else(|| manifest.model.clone())
}
