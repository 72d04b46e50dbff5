//! The engine's one error type and its result; how front ends answer each is in `fault`.

use crate::fault::ErrorCode;

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
    #[error("the store was chunked with `{stored}`, not `{requested}`")]
    ChunkerMismatch {
        /// In the manifest.
        stored: String,
        /// Asked for.
        requested: String,
    },
    /// The store was indexed with another analyzer (user error).
    #[error("the store's lexical index uses analyzer `{stored}`, not `{requested}`")]
    AnalyzerMismatch {
        /// In the manifest.
        stored: String,
        /// Asked for.
        requested: String,
    },
    /// The store was indexed with an analyzer this build does not know (a store from another
    /// ckeep version; user error).
    #[error("the store's lexical index uses analyzer `{stored}`, which this ckeep does not know")]
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
    /// No document of that id is stored (user error).
    #[error("no document `{0}` in the store")]
    DocumentNotFound(String),
    /// A request parameter is invalid (user error).
    #[error("{0}")]
    Invalid(String),
    /// The store's vectors come from another model (user error).
    #[error("the store's vectors were made with model `{stored}`, not `{requested}`")]
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
    /// The stable code every front end answers this error with (see [`ErrorCode`]).
    pub fn code(&self) -> ErrorCode {
        match self {
            Self::Store(e) => Self::store_code(e),
            Self::Load(e) => Self::load_code(e),
            Self::Embed(e) => ErrorCode::of_model(e.is_user_error()),
            Self::Llm(e) => ErrorCode::of_model(e.is_user_error()),
            Self::ChunkerMismatch { .. }
            | Self::AnalyzerMismatch { .. }
            | Self::AnalyzerUnknown { .. }
            | Self::ModelMismatch { .. } => ErrorCode::Conflict,
            Self::DocumentNotFound(_) => ErrorCode::NotFound,
            Self::Strategy { .. } | Self::Invalid(_) | Self::ModelRequired(_) => {
                ErrorCode::InvalidParameter
            }
            Self::Watch { .. } | Self::Server(_) => ErrorCode::Internal,
        }
    }

    /// What the caller can do about it, when there is one thing to do.
    pub fn hint(&self) -> Option<String> {
        match self {
            Self::ChunkerMismatch { .. } => {
                Some("use another --store, or leave the chunker out of the strategy".into())
            }
            Self::AnalyzerMismatch { .. } => {
                Some("use another --store, or leave the analyzer out".into())
            }
            Self::AnalyzerUnknown { .. } => Some("re-create the store with this ckeep".into()),
            Self::ModelMismatch { stored, .. } => {
                Some(format!("use --model {stored}, or another --store"))
            }
            Self::DocumentNotFound(_) => Some("search the store to see the ids it holds".into()),
            Self::Store(_)
            | Self::Load(_)
            | Self::Strategy { .. }
            | Self::Invalid(_)
            | Self::ModelRequired(_)
            | Self::Embed(_)
            | Self::Llm(_)
            | Self::Server(_)
            | Self::Watch { .. } => None,
        }
    }

    /// A store error's code.
    pub(crate) fn store_code(e: &ckeep_store::Error) -> ErrorCode {
        if let ckeep_store::Error::NotFound { .. } = e {
            ErrorCode::NotFound
        } else if e.is_user_error() {
            ErrorCode::InvalidParameter
        } else {
            ErrorCode::Internal
        }
    }

    /// A loader's error's code: a path that is not there, bad input, or the machine's fault.
    pub(crate) fn load_code(e: &ckeep_text::Error) -> ErrorCode {
        if let ckeep_text::Error::Io { source, .. } = e
            && ckeep_text::is_missing_path(source)
        {
            ErrorCode::NotFound
        } else if e.is_user_error() {
            ErrorCode::InvalidParameter
        } else {
            ErrorCode::Internal
        }
    }

    /// Whether the caller is at fault (what was asked, or the input given) rather than the
    /// store, a model server or our code: by its code, the one rule behind the CLI's exit
    /// codes, the server's 4xx answers and Python's exception classes.
    pub fn is_user_error(&self) -> bool {
        self.code().is_user()
    }
}

/// Engine results.
pub type Result<T, E = Error> = std::result::Result<T, E>;
