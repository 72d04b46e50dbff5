//! Retrieval math, free of storage and pipeline types ("compute-only").
//!
//! # Brief overview
//! - [`Analyzer`]: text to index terms (Unicode words, lower-cased, English stop words removed,
//!   Snowball-stemmed), the same for chunks and queries.
//! - [`Bm25`]: scores posting lists into ranked [`ChunkHit`]s, with a per-term explanation.
//! - [`Aggregation`]: chunk scores to document scores (`max`, `mean:K`, `sum`).
//!
//! ```
//! use ckeep_index::Analyzer;
//! assert_eq!(Analyzer::default().terms("The Running dogs!"), ["run", "dog"]);
//! ```
//!
//! [`ChunkHit`]: ckeep_core::ChunkHit

mod aggregate;
mod analyzer;
mod bm25;
mod fusion;
mod hnsw;
mod quant;
mod vector;

pub use aggregate::{Aggregation, DocHit};
pub use analyzer::Analyzer;
pub use bm25::{Bm25, TermExplanation, TitleField};
pub use fusion::{DenseWeights, FusedParts, Fusion, ListPart, MAX_DENSE_LISTS, RRF_K};
pub use hnsw::{Hnsw, HnswParams};
pub use quant::{Codes, Quantization};
pub use vector::{avx512_allowed, dot, dot_all, dot_rows, simd};

/// Invalid retrieval parameters (always the user's error).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A numeric parameter is out of range or not a number.
    #[error("{name} = {value} is invalid: expected {expected}")]
    Parameter {
        /// The parameter.
        name: &'static str,
        /// The value given.
        value: String,
        /// What is allowed.
        expected: &'static str,
    },
    /// Parameters that do not fit each other (weights for another number of lists).
    #[error("{0}")]
    Invalid(String),
}

/// Keeps the `k` best hits, best first, ties broken by chunk id; O(n) selection, then a sort of
/// only the `k` kept.
pub fn top_k(mut hits: Vec<ckeep_core::ChunkHit>, k: usize) -> Vec<ckeep_core::ChunkHit> {
    if k == 0 {
        return Vec::new();
    }
    if hits.len() > k {
        hits.select_nth_unstable_by(k - 1, ckeep_core::rank_order);
        hits.truncate(k);
    }
    hits.sort_unstable_by(ckeep_core::rank_order);
    hits
}
