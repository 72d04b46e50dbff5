//! Text generation: document summaries, synthetic queries, answers.
//!
//! # Brief overview
//! - [`Generator`]: a prompt in, text out, with token counts and time; streamed through a
//!   [`Sink`] (which can cancel), or many independent prompts at once.
//! - [`LlamaGguf`]: a GGUF model run in-process on the CPU by llama.cpp, its kernels chosen for
//!   the CPU at run time (the Qwen2.5 0.5B instruct model installs from `PyPI`; see
//!   `ckeep model pull`).
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
//!     one_line: false,
//! };
//! let first = model.generate(&prompt).unwrap();
//! assert!(first.text.contains("Paris") && !first.cached);
//! let again = model.generate(&prompt).unwrap();
//! assert!(again.cached && again.text == first.text);
//! ```

#[cfg(feature = "local")]
mod backends;
mod cache;
mod chat;
#[cfg(feature = "local")]
mod llama;

use std::path::Path;

#[cfg(feature = "local")]
pub use backends::modules_dir as llama_modules_dir;
pub use cache::{CachedGenerator, default_path as default_cache_path};
pub use chat::ChatClient;
#[cfg(feature = "local")]
pub use llama::{LlamaGguf, Speed};

/// Generation failures.
#[derive(Debug, Clone, thiserror::Error)]
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
    /// The prompt and the answer asked for do not fit in what the model reads (user error).
    #[error(
        "the prompt is {prompt} tokens and {answer} more are asked for, but {model} reads at most \
         {limit}: give it less text"
    )]
    TooLong {
        /// The model.
        model: String,
        /// Tokens in the prompt.
        prompt: usize,
        /// Tokens asked for.
        answer: usize,
        /// The model's context length.
        limit: usize,
    },
    /// The caller stopped the generation (its [`Sink`] said so).
    #[error("generation cancelled")]
    Cancelled,
    /// The local runtime is not installed with the binary (llama.cpp's CPU modules).
    #[error("{0}")]
    Setup(String),
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
        matches!(
            self,
            Self::ModelFile { .. } | Self::NotFound(_) | Self::TooLong { .. } | Self::Setup(_)
        )
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
    /// Stop at the end of the first non-empty line (a query, a title): what follows is not read.
    pub one_line: bool,
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

/// Where a generation's text goes as it is written, and whether to stop early.
pub trait Sink {
    /// The next piece of the answer (whole UTF-8 characters).
    fn text(&mut self, piece: &str);
    /// Asked between tokens: `true` ends the generation with [`Error::Cancelled`].
    fn cancelled(&self) -> bool {
        false
    }
}

/// A closure that takes the pieces and never cancels.
impl<F: FnMut(&str)> Sink for F {
    fn text(&mut self, piece: &str) {
        self(piece);
    }
}

/// Where the first non-blank line of `text` ends (its newline), for [`Prompt::one_line`]: the
/// one rule the local model and chat servers both apply, on bytes because the local model's text
/// arrives token by token.
pub(crate) fn line_end(text: &[u8]) -> Option<usize> {
    let start = text.iter().position(|b| !b.is_ascii_whitespace())?;
    text[start..].iter().position(|&b| b == b'\n').map(|n| start + n)
}

/// The sink of a caller who wants only the finished answer.
#[derive(Debug, Clone, Copy, Default)]
pub struct Silent;

impl Sink for Silent {
    fn text(&mut self, _: &str) {}
}

/// A text generator.
pub trait Generator: Send + Sync + std::fmt::Debug {
    /// The model's name.
    fn name(&self) -> &str;
    /// Answers one prompt, passing the text to `sink` as it is written (greedy decoding: the
    /// same prompt gives the same answer).
    fn stream(&self, prompt: &Prompt, sink: &mut dyn Sink) -> Result<Generation>;
    /// Answers one prompt.
    fn generate(&self, prompt: &Prompt) -> Result<Generation> {
        self.stream(prompt, &mut Silent)
    }
    /// Answers independent prompts, in order. A model that can runs them side by side (the
    /// local model decodes them as parallel sequences that share their common prefix); the
    /// answers are the ones [`Generator::generate`] gives.
    fn generate_many(&self, prompts: &[Prompt]) -> Vec<Result<Generation>> {
        prompts.iter().map(|p| self.generate(p)).collect()
    }
    /// How many prompts [`Generator::generate_many`] answers at once: 1 when it answers them
    /// one by one, so that asking ahead gains nothing.
    fn side_by_side(&self) -> usize {
        1
    }
    /// The tokens `text` comes to: the model's own count where it has its tokenizer here (the
    /// local model), else [`estimate_tokens`] (a server's tokenizer is not at hand).
    fn count_tokens(&self, text: &str) -> usize {
        estimate_tokens(text)
    }
}

/// An estimate of the tokens `text` comes to for a model whose tokenizer is not at hand: a
/// token per Chinese, Japanese or Korean character (their tokenizers rarely merge more), and
/// one per four bytes of everything else (the usual figure for English and code).
pub fn estimate_tokens(text: &str) -> usize {
    let (cjk, cjk_bytes) = text
        .chars()
        .filter(|&c| ckeep_core::script::is_cjk(c))
        .fold((0, 0), |(n, bytes), c| (n + 1, bytes + c.len_utf8()));
    cjk + (text.len() - cjk_bytes).div_ceil(4)
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
    load_gguf(&gguf_path(spec)?)
}

/// The GGUF file `spec` names: a path, or a known name installed in [`models_dir`].
pub fn gguf_path(spec: &str) -> Result<std::path::PathBuf> {
    let path = Path::new(spec);
    if path.is_file() {
        return Ok(path.to_path_buf());
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
    Ok(path)
}

#[cfg(feature = "local")]
fn load_gguf(path: &Path) -> Result<Box<dyn Generator>> {
    Ok(Box::new(LlamaGguf::load(path)?))
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
