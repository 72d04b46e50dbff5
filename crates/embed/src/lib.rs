//! Embedders: text to vectors, in Rust.
//!
//! # Brief overview
//! - [`SentenceTransformer`]: a BERT-family sentence-transformers model directory
//!   (`config.json`, `tokenizer.json`, `model.safetensors`, `1_Pooling/config.json`,
//!   `sentence_bert_config.json`, `modules.json`) run with candle on the CPU. Pooling (mean or CLS)
//!   and L2 normalisation follow the directory's configuration, and sequence length follows
//!   `sentence_bert_config.json` — not the truncation baked into `tokenizer.json`, which for
//!   all-MiniLM-L6-v2 is 128 where sentence-transformers uses 256.
//!
//! Inputs are sorted by length and batched so little padding is computed; results come back in
//! input order.

mod sentence_transformer;

pub use sentence_transformer::{EmbedStats, Pooling, SentenceTransformer};

/// Embedding failures.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A model file is missing or unreadable (user error: wrong directory, incomplete download).
    #[error("{path}: {message}")]
    ModelFile {
        /// The file.
        path: String,
        /// What was expected.
        message: String,
    },
    /// The model's architecture is not supported (user error).
    #[error("{path}: unsupported model: {message}")]
    Unsupported {
        /// The model directory.
        path: String,
        /// Why.
        message: String,
    },
    /// Tokenisation failed (ours).
    #[error("tokenizer: {0}")]
    Tokenizer(String),
    /// The tensor computation failed (ours).
    #[error("model: {0}")]
    Candle(#[from] candle_core::Error),
}
