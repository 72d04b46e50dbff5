//! The strategy a store searches with when the caller names none: the built-in default, or the
//! one an evaluation chose for this store's documents (`ckeep eval recommend --apply`), kept in
//! its manifest. Every front end starts from [`Engine::default_strategy`] and lays the caller's
//! parts over it, so an explicit flag or field always wins.

use ckeep_store::{Manifest, StoreRead, StoreWrite};
use serde::Serialize;

use crate::{Engine, Error, Result, Strategy};

/// The strategy in force when a caller names none, and where it came from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DefaultStrategy {
    /// The strategy, as a spec.
    pub strategy: String,
    /// `built-in`, or what chose it (as `eval recommend --apply` recorded).
    pub from: String,
}

impl<S: StoreRead> Engine<S> {
    /// The strategy searches start from: the store's recorded default, else the built-in one.
    pub fn default_strategy(&self) -> Result<Strategy> {
        Ok(match self.store().manifest()?.default_strategy {
            Some(spec) => spec.parse()?,
            None => Strategy::default(),
        })
    }

    /// Which default is in force and where it came from (`stats`, `--explain`).
    pub fn default_strategy_source(&self) -> Result<DefaultStrategy> {
        Ok(DefaultStrategy::of(&self.store().manifest()?))
    }
}

impl DefaultStrategy {
    /// The default a manifest puts in force.
    pub fn of(manifest: &Manifest) -> Self {
        match &manifest.default_strategy {
            Some(spec) => DefaultStrategy {
                strategy: spec.clone(),
                from: manifest.default_strategy_from.clone().unwrap_or_else(|| "unknown".into()),
            },
            None => DefaultStrategy {
                strategy: Strategy::default().to_string(),
                from: "built-in".into(),
            },
        }
    }
}

impl<S: StoreWrite> Engine<S> {
    /// Records `strategy` as the store's default, with where it came from, in one manifest
    /// write (`None`: back to the built-in default). A strategy the store cannot run as it is
    /// (another chunker or analyzer, a dense mode without the store's model) is refused and
    /// nothing changes.
    pub fn set_default_strategy(&mut self, strategy: Option<&Strategy>, from: &str) -> Result<()> {
        let mut manifest = self.store().manifest()?;
        if let Some(s) = strategy {
            let s = s.clone().validate()?;
            crate::search::built_as(&s, &manifest)?;
            if s.mode.needs_model() && s.model.is_none() && manifest.model.is_none() {
                return Err(Error::Invalid(format!(
                    "`{s}` needs the store's embedding model, and the store has none"
                )));
            }
        }
        manifest.default_strategy = strategy.map(ToString::to_string);
        manifest.default_strategy_from = strategy.map(|_| from.to_string());
        self.store_mut().set_manifest(&manifest)?;
        Ok(())
    }
}
