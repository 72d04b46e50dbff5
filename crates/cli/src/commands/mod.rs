//! One module per sub-command.

pub mod add;
pub mod admin;
pub mod dedup;
pub mod embed;
pub mod eval;
pub mod model;
pub mod pairs;
pub mod search;
#[cfg(feature = "server")]
pub mod serve;
pub mod show;
pub mod similar;

use std::path::Path;
use std::sync::Arc;

use ckeep_embed::{CachedEmbedder, Embedder, EmbeddingCache};
use ckeep_engine::Engine;
use ckeep_store::{DynStore, Manifest};

/// Opens an existing store (a directory or a `postgres://` URL) as an engine.
pub fn open(store: &str) -> anyhow::Result<Engine<DynStore>> {
    Ok(Engine::new(ckeep_store::open(store)?))
}

/// Loads a model (name, directory or URL) behind the embedding cache, unless `no_cache`.
pub fn load_model(spec: &str, no_cache: bool) -> anyhow::Result<Arc<dyn Embedder>> {
    let model = ckeep_embed::load(spec)?;
    let cache = if no_cache {
        None
    } else {
        Some(Arc::new(EmbeddingCache::open(&EmbeddingCache::default_path())?))
    };
    Ok(Arc::new(CachedEmbedder::new(model, cache)))
}

/// The model a store was built with, as a `--model` value: where it was loaded from when that
/// still exists (a directory or a URL), else its name.
pub fn stored_model(manifest: &Manifest) -> Option<String> {
    let source = manifest
        .model_source
        .as_deref()
        .filter(|s| s.starts_with("http://") || s.starts_with("https://") || Path::new(s).is_dir());
    source.map(str::to_string).or_else(|| manifest.model.clone())
}
