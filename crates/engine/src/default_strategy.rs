//! The strategy a store searches with when the caller names none: the built-in default, or the
//! one an evaluation chose for this store's documents (`ckeep eval recommend --apply`), kept in
//! its manifest — and the other defaults a store decides (its chunker, its model). Every
//! front end starts from [`Searcher::default_strategy`] and lays the caller's parts over it,
//! so an explicit flag or field always wins.

use ckeep_index::Analyzer;
use ckeep_store::{StoreRead, StoreWrite};
use ckeep_text::ChunkerSpec;
use ckeep_text::chunk::SizeUnit;

use crate::engine::{Searcher, Writer};
use crate::error::{Error, Result};
use crate::strategy::{DefaultStrategy, Strategy};

impl<S: StoreRead> Searcher<'_, S> {
    /// The analyzer the store records (`None` before its first document).
    pub fn analyzer(&self) -> Result<Option<Analyzer>> {
        crate::analysis::recorded(self.manifest())
    }

    /// The strategy searches start from: the store's recorded default, else the built-in one.
    pub fn default_strategy(&self) -> Result<Strategy> {
        Ok(match &self.manifest().default_strategy {
            Some(spec) => spec.parse()?,
            None => Strategy::default(),
        })
    }

    /// Which default is in force and where it came from (`stats`, `--explain`).
    pub fn default_strategy_source(&self) -> DefaultStrategy {
        DefaultStrategy::of(self.manifest())
    }

    /// The chunker recorded in the store, if any document was ever added.
    pub fn stored_chunker(&self) -> Result<Option<ChunkerSpec>> {
        let chunker = self.manifest().chunker.as_deref();
        chunker.map(|c| c.parse().map_err(Error::from)).transpose()
    }

    /// The chunker an ingest uses: the one asked for, else the store's, else the default;
    /// its sizes counted in `unit` when one is given. The one rule of every front end.
    pub fn chunker_for(
        &self,
        asked: Option<&ChunkerSpec>,
        unit: Option<SizeUnit>,
    ) -> Result<ChunkerSpec> {
        let chunker = match asked {
            Some(c) => c.clone(),
            None => self.stored_chunker()?.unwrap_or_default(),
        };
        Ok(match unit {
            Some(unit) => chunker.with_unit(unit)?,
            None => chunker,
        })
    }

    /// The embedding model spec to use: the one asked for, else the store's (see
    /// [`crate::stored_model`]); `None` for a store built without one. A further model of the
    /// store (see [`crate::Writer::add_model`]) is loaded by the search that fuses it, so
    /// asking for one gives the store's own. The one rule of every front end.
    pub fn model_for(&self, asked: Option<&str>) -> Option<String> {
        let manifest = self.manifest();
        match asked {
            Some(m) if !crate::more_models::is_further_model(manifest, m) => Some(m.to_string()),
            _ => crate::models::stored_model(manifest),
        }
    }
}

impl<S: StoreWrite> Writer<'_, S> {
    /// Records `strategy` as the store's default, with where it came from, in one manifest
    /// write (`None`: back to the built-in default). A strategy the store cannot run as it is
    /// (another chunker or analyzer, a dense mode without the store's model) is refused and
    /// nothing changes.
    pub fn set_default_strategy(&mut self, strategy: Option<&Strategy>, from: &str) -> Result<()> {
        let mut manifest = self.engine.store.manifest()?;
        if let Some(s) = strategy {
            let s = s.clone().validate()?;
            crate::searcher::built_as(&s, &manifest)?;
            if s.mode.needs_model() && s.model.is_none() && manifest.model.is_none() {
                return Err(Error::Invalid(format!(
                    "`{s}` needs the store's embedding model, and the store has none"
                )));
            }
        }
        manifest.default_strategy = strategy.map(ToString::to_string);
        manifest.default_strategy_from = strategy.map(|_| from.to_string());
        self.engine.store.set_manifest(&manifest)?;
        Ok(())
    }
}
