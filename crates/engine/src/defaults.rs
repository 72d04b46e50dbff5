//! The defaults and bounds every front end shares, each set once here: the CLI's flags, the
//! server's fields, Python's keyword arguments and the strategy spec all take them from this
//! module (a store's own defaults — its strategy, chunker and model — are read from its
//! manifest instead, by [`crate::Searcher`]).

/// Most results a search returns, and most of anything a request counts (`k`, `rerank_k`,
/// chunk pairs averaged).
pub const MAX_K: usize = 10_000;

/// Longest query accepted by default, in bytes (a server may set a lower bound).
pub const MAX_QUERY_BYTES: usize = 16 * 1024;

/// Results a rerank stage scores by default.
pub const DEFAULT_RERANK_K: usize = 50;

/// Window pairs averaged by default when two texts are compared (the chunk-pair experiment's
/// k).
pub const DEFAULT_TOP_K: usize = 3;

/// Default duplicate threshold of two texts' chunk-pair score (the chunk-pair experiment's).
pub const DEFAULT_THRESHOLD: f64 = 0.7;

/// The chunker two compared texts are cut with by default: word windows sized to each text,
/// `clamp(words / 4, 18, 150)` (the chunk-pair experiment's).
pub const PAIR_CHUNKER: &str = "words:dynamic";

/// The embedding model offered when the user names none (`embed`, `similar`, `eval run`).
pub const DEFAULT_MODEL: &str = "all-MiniLM-L6-v2";

/// The language models `ask` writes with when the user names none: the first of them that is
/// installed (none: the sources' best sentences, with a note on how to install one). The 1.5B
/// answered better than the 0.5B on SQuAD v1.1 (first 20 questions by id, BM25, 1,500 context
/// tokens, 2-core AMD EPYC with AVX-512, 2026-12-07, `ckeep eval answers`: token F1 40.2
/// against 21.2, gold answer contained 40 % against 25 %; issue 83), at about 3x the time a
/// token.
pub const DEFAULT_LLMS: &[&str] = &["qwen2.5-coder-1.5b-instruct", "qwen2.5-coder-0.5b-instruct"];

/// The model `ckeep model pull` is told to install when none is: the better of
/// [`DEFAULT_LLMS`].
pub const DEFAULT_LLM: &str = DEFAULT_LLMS[0];

/// Tokens of context an answer is written from by default: about six SQuAD paragraphs, read by
/// the local model in about 6 seconds on 2 cores.
pub const DEFAULT_CONTEXT_TOKENS: usize = 1500;

/// Longest generated answer, in tokens (one or two sentences with their quotes).
pub const ANSWER_TOKENS: usize = 256;

/// Largest context budget an answer takes, in tokens (beyond any local model's window).
pub const MAX_CONTEXT_TOKENS: usize = 1_000_000;

/// Longest answer asked for, in tokens.
pub const MAX_ANSWER_TOKENS: usize = 8192;
