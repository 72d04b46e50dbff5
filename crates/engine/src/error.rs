//! The engine's one error type and its result.

/// Engine failures. Variants say whether the user or the system is at fault.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The store failed (see the store error for whose fault).
    #[error(transparent)]
    Store(#[from] ckeep_store::Error),
    /// Input could not be loaded (user error).
    #[error(transparent)]
    Load(#[from] ckeep_text::Error),
    /// The store was built with another chunker (user error).
    #[error(
        "the store was chunked with `{stored}`, not `{requested}`; use another --store, or omit --chunker"
    )]
    ChunkerMismatch {
        /// In the manifest.
        stored: String,
        /// Asked for.
        requested: String,
    },
    /// The store was indexed with another analyzer (user error).
    #[error(
        "the store's lexical index uses analyzer `{stored}`, not `{requested}`; use another --store, or omit --analyzer"
    )]
    AnalyzerMismatch {
        /// In the manifest.
        stored: String,
        /// Asked for.
        requested: String,
    },
    /// The store was indexed with an analyzer this build does not know (a store from another
    /// ckeep version; user error).
    #[error(
        "the store's lexical index uses analyzer `{stored}`, which this ckeep does not know; re-create the store"
    )]
    AnalyzerUnknown {
        /// In the manifest.
        stored: String,
    },
    /// A strategy spec is invalid or asks for something unavailable (user error).
    #[error("invalid strategy `{spec}`: {message}")]
    Strategy {
        /// The spec.
        spec: String,
        /// What is wrong.
        message: String,
    },
    /// A request parameter is invalid (user error).
    #[error("{0}")]
    Invalid(String),
    /// The store's vectors come from another model (user error).
    #[error(
        "the store's vectors were made with model `{stored}`, not `{requested}`; use --model {stored}, or another --store"
    )]
    ModelMismatch {
        /// In the manifest.
        stored: String,
        /// Asked for.
        requested: String,
    },
    /// The operation needs an embedding model and none was given (user error).
    #[error("{0}")]
    ModelRequired(String),
    /// Embedding failed (see the embedding error for whose fault).
    #[error(transparent)]
    Embed(#[from] ckeep_embed::Error),
    /// A language model (summaries) failed (see its error for whose fault).
    #[error(transparent)]
    Llm(#[from] ckeep_llm::Error),
    /// A server the search called (a reranker) failed or answered what it should not.
    #[error("{0}")]
    Server(String),
    /// Files could not be watched for changes (a path vanished, or the system's limit on
    /// watches was reached).
    #[error("cannot watch {}: {message}", path.display())]
    Watch {
        /// The path.
        path: std::path::PathBuf,
        /// Why.
        message: String,
    },
}

impl Error {
    /// Whether the caller is at fault (what was asked, or the input given) rather than the
    /// store, a model server or our code. The one rule behind the CLI's exit code 2 and the
    /// server's 4xx answers.
    pub fn is_user_error(&self) -> bool {
        match self {
            Self::Store(e) => e.is_user_error(),
            Self::Load(e) => e.is_user_error(),
            Self::Embed(e) => e.is_user_error(),
            Self::Llm(e) => e.is_user_error(),
            Self::ChunkerMismatch { .. }
            | Self::AnalyzerMismatch { .. }
            | Self::AnalyzerUnknown { .. }
            | Self::Strategy { .. }
            | Self::Invalid(_)
            | Self::ModelMismatch { .. }
            | Self::ModelRequired(_) => true,
            Self::Watch { .. } | Self::Server(_) => false,
        }
    }

    /// Whether the request conflicts with how the store was built (chunker, analyzer, model):
    /// a user error of its own kind (HTTP 409).
    pub fn is_conflict(&self) -> bool {
        matches!(
            self,
            Self::ChunkerMismatch { .. }
                | Self::ModelMismatch { .. }
                | Self::AnalyzerMismatch { .. }
                | Self::AnalyzerUnknown { .. }
        )
    }
}

/// Engine results.
pub type Result<T, E = Error> = std::result::Result<T, E>;
