//! The writer: every change an engine makes to its store — ingest, sync, derivations, further
//! models, quantisation, saved graphs, the default strategy — on one type, so what reads the
//! store (a [`crate::Searcher`], a [`crate::VectorIndex`]) never writes.
//!
//! Its methods live beside the work they do (`ingest`, `sync`, `derive`, `adopt`,
//! `more_models`, …); this file holds the type and the writes that are one store call each.

use ckeep_index::Quantization;
use ckeep_store::StoreWrite;

use crate::engine::Writer;
use crate::error::Result;
use crate::vectors::VectorIndexBuild;

impl<S: StoreWrite> Writer<'_, S> {
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
