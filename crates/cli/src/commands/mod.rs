//! One module per sub-command.

pub mod add;
pub mod admin;
pub mod eval;
pub mod search;
pub mod show;

use std::path::Path;

use ckeep_engine::Engine;
use ckeep_store::SqliteStore;

/// Opens an existing store as an engine.
pub fn open(store: &Path) -> anyhow::Result<Engine<SqliteStore>> {
    Ok(Engine::new(SqliteStore::open(store)?))
}
