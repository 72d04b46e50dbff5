//! One module per sub-command.

pub mod adapt;
pub mod add;
pub mod admin;
pub mod ask;
pub mod dedup;
pub mod embed;
pub mod eval;
pub mod extract;
mod ingest;
#[cfg(feature = "server")]
pub mod mcp;
pub mod model;
pub mod pairs;
pub mod search;
#[cfg(feature = "server")]
pub mod serve;
#[cfg(feature = "server")]
mod serving;
pub mod show;
pub mod similar;
pub mod sync;
#[cfg(feature = "watch")]
pub mod watch;

use std::sync::Arc;
#[cfg(any(feature = "server", feature = "watch"))]
use std::time::Duration;

use ckeep_embed::Embedder;
use ckeep_engine::{Engine, PairScorer};
use ckeep_store::DynStore;

use crate::UsageError;
use crate::flags::PairScoring;

/// Opens an existing store (a directory or a `postgres://` URL) as an engine.
pub fn open(store: &str) -> anyhow::Result<Engine<DynStore>> {
    Ok(Engine::new(ckeep_store::open(store)?))
}

/// Loads a model (name, directory or URL) behind the embedding cache, unless `no_cache`.
pub fn load_model(spec: &str, no_cache: bool) -> anyhow::Result<Arc<dyn Embedder>> {
    Ok(ckeep_engine::load_model(spec, !no_cache)?)
}

/// `s` seconds as a duration, for the option `--NAME`: a usage error unless positive.
#[cfg(any(feature = "server", feature = "watch"))]
pub fn seconds(name: &str, s: f64) -> anyhow::Result<Duration> {
    Duration::try_from_secs_f64(s).ok().filter(|d| !d.is_zero()).ok_or_else(|| {
        anyhow::Error::new(UsageError(format!("--{name} must be a positive number of seconds")))
    })
}

/// A scorer for `scoring`'s models, chunker and k.
pub fn scorer(scoring: &PairScoring, no_cache: bool) -> anyhow::Result<PairScorer> {
    let mut models = scoring
        .model
        .iter()
        .map(|m| load_model(&scoring.precision.apply(m), no_cache))
        .collect::<anyhow::Result<Vec<_>>>()?
        .into_iter();
    let first = models.next().ok_or_else(|| UsageError("--model names no model".into()))?;
    Ok(PairScorer::new(first, scoring.chunker.clone(), scoring.top_k)?
        .with_further_models(models.collect())?)
}
