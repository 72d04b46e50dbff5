//! What one stage of derived work (summaries, a representation's vectors, a model's vectors of
//! the stored chunks) did, and how its progress is reported: shared by derivations, model
//! adoption and further models, and returned by every front end.

use serde::Serialize;

/// Progress reports: `(stage, done, total)`.
pub type DeriveProgress<'a> = &'a mut dyn FnMut(&str, u64, u64);

/// What a derivation did, per summarizer or representation.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct DeriveReport {
    /// One entry per stage that had work.
    pub stages: Vec<StageReport>,
}

/// One summarizer's or representation's work.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct StageReport {
    /// `summary lead:128`, `repr late`, …
    pub stage: String,
    /// Documents processed.
    pub documents: u64,
    /// Vectors written.
    pub vectors: u64,
    /// Tokens a language model generated (summaries by `llm:` or `http:`).
    pub generated_tokens: u64,
    /// Wall time.
    pub seconds: f64,
}
