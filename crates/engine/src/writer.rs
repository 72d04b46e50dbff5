//! The writer: every change an engine makes to its store — ingest, sync, derivations, further
//! models, quantisation, saved graphs, the default strategy — on one type, so what reads the
//! store (a [`crate::Searcher`], a [`crate::VectorIndex`]) never writes.
//!
//! Its methods live beside the work they do (`ingest`, `sync`, `derive`, `adopt`,
//! `more_models`, …); this file holds the type and the writes that are one store call each.

use ckeep_index::Quantization;
use ckeep_store::StoreWrite;
use serde::Serialize;

use crate::engine::Writer;
use crate::error::{Error, Result};
use crate::vectors::VectorIndexBuild;

/// Most ids one removal may name: a request (HTTP, MCP, Python) names its documents, and a
/// longer list is a mistake or an attack, not a removal.
pub const MAX_REMOVE_IDS: usize = 10_000;

/// Documents to remove, by id: all or none (every front end's `rm`, `DELETE /documents/ID`,
/// `Store.remove`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoveRequest {
    ids: Vec<String>,
}

impl RemoveRequest {
    /// The removal of `ids` (repeats are one); refuses no id, an empty id, or more than
    /// [`MAX_REMOVE_IDS`].
    pub fn new(ids: impl IntoIterator<Item = impl Into<String>>) -> Result<Self> {
        let mut unique: Vec<String> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for id in ids {
            let id = id.into();
            if id.is_empty() {
                return Err(Error::Invalid("a document id is empty".into()));
            }
            if seen.contains(&id) {
                continue;
            }
            if unique.len() == MAX_REMOVE_IDS {
                return Err(Error::Invalid(format!(
                    "at most {MAX_REMOVE_IDS} documents can be removed at once"
                )));
            }
            seen.insert(id.clone());
            unique.push(id);
        }
        if unique.is_empty() {
            return Err(Error::Invalid("name at least one document to remove".into()));
        }
        Ok(Self { ids: unique })
    }

    /// The ids, each once, in the order given.
    pub fn ids(&self) -> &[String] {
        &self.ids
    }
}

/// What a removal did (the JSON every front end prints).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Removed {
    /// How many documents were removed: all that were named.
    pub removed: usize,
    /// Their ids.
    pub ids: Vec<String>,
}

impl<S: StoreWrite> Writer<'_, S> {
    /// Removes the documents `request` names and everything derived from them; when one of
    /// them is not stored, removes none and names the missing ones ([`Error::NotRemoved`],
    /// `not_found`).
    pub fn remove(&mut self, request: &RemoveRequest) -> Result<Removed> {
        let store = &mut self.engine.store;
        let mut missing = Vec::new();
        for id in &request.ids {
            if store.document_hash(id)?.is_none() {
                missing.push(id.clone());
            }
        }
        if !missing.is_empty() {
            return Err(Error::NotRemoved(missing));
        }
        let removed = store.remove(&request.ids)?;
        Ok(Removed { removed, ids: request.ids.clone() })
    }

    /// Holds stored representation `repr` (`None`: every one the store has) as `kind` in
    /// memory for dense search, recorded in the manifest so every reader does the same.
    /// Summary representations are document-level and few, so they stay float32.
    pub fn set_quantization(&mut self, repr: Option<&str>, kind: Quantization) -> Result<()> {
        crate::vectors::set_quantization(&mut self.engine.store, repr, kind)
    }

    /// Persists graphs and segments from [`crate::VectorIndex::build`], each build in one
    /// transaction.
    pub fn save_vector_index(&mut self, builds: Vec<VectorIndexBuild>) -> Result<()> {
        crate::vectors::save(&mut self.engine.store, builds)
    }

    /// Brings the HNSW graph of each stored chunk-level representation up to date (see
    /// [`crate::VectorIndex::build`]) and persists the graphs it built; returns whether it
    /// built one. (Derived representations get theirs in memory on their first query.)
    pub fn refresh_vector_index(&mut self) -> Result<bool> {
        let builds = self.engine.vectors().build()?;
        let built = !builds.is_empty();
        self.save_vector_index(builds)?;
        Ok(built)
    }
}
