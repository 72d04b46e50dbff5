//! The read snapshot: one search's (or one report's) view of the store, with the manifest read
//! once, and the one place a front end's request is resolved against the store — the spec or
//! the store's default strategy, the parts laid over it, the engine's limits, the store's own
//! model found and loaded when the strategy needs it.

use std::sync::Arc;

use ckeep_embed::Embedder;
use ckeep_store::{Manifest, StoreRead, StoredDocument};

use crate::engine::Searcher;
use crate::error::{Error, Result};
use crate::more_models::{answers_to, is_further_model};
use crate::represent::Representation;
use crate::request::{SearchRequest, SearchResponse};
use crate::strategy::Strategy;

impl<'e, S: StoreRead> Searcher<'e, S> {
    /// The store, read in this snapshot.
    pub fn store(&self) -> &'e S {
        &self.engine.store
    }

    /// The stored document `id`; the caller's mistake (`not_found`) when there is none.
    pub fn document(&self, id: &str) -> Result<StoredDocument> {
        self.store().document(id)?.ok_or_else(|| Error::DocumentNotFound(id.to_string()))
    }

    /// The manifest the search reads.
    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// Runs a search in this snapshot, rerank stage included (the snapshot is held during the
    /// reranker's call; [`crate::Engine::search`] lets it go first).
    pub fn search(&self, req: &SearchRequest) -> Result<SearchResponse> {
        crate::rerank::staged(
            req,
            || Ok((self.resolve(req)?, self)),
            |s, strategy| s.ranked(req, strategy),
        )
    }

    /// The strategy `req` runs in this store: its spec, else the store's default strategy, with
    /// its parts laid over; validated, and checked against the engine's limits and against how
    /// the store was built. A representation the request leaves to the store stays unnamed
    /// (`repr` empty; the search takes the store's default representation).
    pub fn resolve(&self, req: &SearchRequest) -> Result<Strategy> {
        let mut strategy = match &req.strategy {
            Some(s) => s.clone(),
            None => self.default_strategy()?,
        };
        req.parts.clone().apply(&mut strategy);
        let strategy = strategy.validate()?;
        self.engine.limits.check(&req.query, &strategy)?;
        self.admit(&strategy)?;
        built_as(&strategy, &self.manifest)?;
        Ok(strategy)
    }

    /// Refuses what this engine's callers may not name in `strategy` (a server's clients:
    /// rerankers, models and summarizers beyond the store's; [`crate::SearchLimits::admit`]).
    /// Every strategy a remote request runs passes here, searched or evaluated.
    pub fn admit(&self, strategy: &Strategy) -> Result<()> {
        self.engine.limits.admit(strategy, &self.manifest)
    }

    /// `strategy` with the store's default representation when it names none.
    pub(crate) fn with_default_repr(&self, mut strategy: Strategy) -> Result<Strategy> {
        if strategy.repr.is_empty() {
            strategy.repr = match &self.manifest.default_repr {
                Some(spec) => crate::represent::parse_list(spec).map_err(Error::Invalid)?,
                None => vec![Representation::Plain],
            };
        }
        Ok(strategy)
    }

    /// The store's own model for `strategy`'s dense lists: the engine's, when it was given
    /// one and the strategy names no other; else the one the strategy names (or the store's,
    /// [`Searcher::model_for`]), loaded once and shared with the engine's readers — unless the
    /// requests are remote ([`SearchLimits::remote`](crate::SearchLimits)), which cannot make
    /// the engine load a model. The one rule of every front end.
    pub(crate) fn own_model(&self, strategy: &Strategy) -> Result<Arc<dyn Embedder>> {
        let manifest = &self.manifest;
        let asked = strategy.model.as_deref().filter(|m| !is_further_model(manifest, m));
        if let Some(e) = &self.engine.embedder
            && asked.is_none_or(|m| answers_to(e.as_ref(), m))
        {
            return Ok(Arc::clone(e));
        }
        if let (Some(m), true) = (asked, self.engine.limits.remote) {
            return Err(Error::Invalid(format!(
                "`model={m}`: this server answers with the model it was started with; a request cannot name another"
            )));
        }
        // A model named is loaded first: one that is not there is a model's error, whatever
        // the store holds.
        let loaded = self.model_for(asked).map(|spec| self.engine.more_models.load(&spec));
        match (&manifest.model, loaded) {
            (_, Some(Err(e))) => Err(e),
            (Some(_), Some(Ok(model))) => Ok(model),
            _ => Err(Error::ModelRequired(
                "the store has no vectors: it was built without a model; embed its chunks with `ckeep add --model NAME` (no inputs)".into(),
            )),
        }
    }
}

/// Refuses a strategy that names another chunker or analyzer than the store was built with: its
/// index is not this one.
pub(crate) fn built_as(strategy: &Strategy, manifest: &Manifest) -> Result<()> {
    if let Some(wanted) = &strategy.chunker {
        let stored = manifest.chunker.clone().unwrap_or_default();
        if stored != wanted.to_string() {
            return Err(Error::ChunkerMismatch {
                stored,
                requested: wanted.to_string(),
                asked: crate::error::ChunkerAsked::Strategy,
            });
        }
    }
    if let Some(wanted) = strategy.analyzer {
        let stored = crate::analysis::of_store(manifest)?;
        if stored != wanted {
            return Err(Error::AnalyzerMismatch {
                stored: stored.name().into(),
                requested: wanted.name().into(),
            });
        }
    }
    Ok(())
}
