//! What the engine reads out of a store's manifest beyond its plain fields, and how it names
//! what it records there, decided once.

use ckeep_index::Quantization;
use ckeep_store::Manifest;

use crate::error::{Error, Result};

/// Stored summary vectors are named by this prefix and their summarizer's spec.
const SUMMARY_PREFIX: &str = "summary:";

/// Name of the stored summary vectors of `summarizer`.
pub(crate) fn summary_repr(summarizer: &str) -> String {
    format!("{SUMMARY_PREFIX}{summarizer}")
}

/// Whether stored representation `name` holds document summaries' vectors (one per document)
/// rather than chunks' (no graph, no quantisation).
pub(crate) fn is_summary_repr(name: &str) -> bool {
    name.starts_with(SUMMARY_PREFIX)
}

/// Reads of a [`Manifest`] that need the engine's types.
pub(crate) trait ManifestExt {
    /// How stored representation `name` is held in memory for search (float32 unless the
    /// manifest says `int8` or `binary`).
    fn quantization(&self, name: &str) -> Result<Quantization>;
    /// The stored representations of chunks (not of document summaries), in manifest order.
    fn chunk_representations(&self) -> impl Iterator<Item = &String>;
}

impl ManifestExt for Manifest {
    fn quantization(&self, name: &str) -> Result<Quantization> {
        self.quantize.get(name).map_or(Ok(Quantization::None), |q| {
            q.parse().map_err(|e: ckeep_index::Error| {
                Error::Invalid(format!("the store's manifest quantizes `{name}` oddly: {e}"))
            })
        })
    }

    fn chunk_representations(&self) -> impl Iterator<Item = &String> {
        self.representations.iter().filter(|r| !is_summary_repr(r))
    }
}
