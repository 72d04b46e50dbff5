//! A quantised representation as dense search holds it: compact codes only, row by row with
//! each row's chunk and document, and the graph they walk once read.

use std::sync::{Arc, OnceLock};

use ckeep_core::{ChunkId, DocKey};
use ckeep_index::{Codes, Hnsw};

/// A representation's vectors as compact codes, with the chunk and document of each row.
#[derive(Debug)]
pub(crate) struct CodeMatrix {
    pub ids: Vec<ChunkId>,
    pub docs: Vec<DocKey>,
    pub codes: Codes,
    /// The store's HNSW graph over these rows, read when a search first needs it; `None`
    /// when the collection is small, the codes binary, or the stored graph is not current.
    pub graph: OnceLock<Option<Arc<Hnsw>>>,
}
