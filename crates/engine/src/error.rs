//! The engine's one error type and its result; how front ends answer each is in `fault`.

use std::error::Error as StdError;

use ckeep_text::is_missing_path;

use crate::fault::{ErrorBody, ErrorCode, UsageError};

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
        /// Where it was asked for, which decides what to do about it.
        asked: ChunkerAsked,
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
    /// Inputs that do not load, each named: the whole operation is refused (the input's fault
    /// when every failure is).
    #[error("{} input(s) cannot be loaded; nothing was {verb}:\n{}", failures.len(), failures.join("\n"))]
    Unloadable {
        /// Each failure, naming its file.
        failures: Vec<String>,
        /// What was refused (`added`, `synced`).
        verb: String,
        /// Whether every failure is the input's fault.
        user: bool,
    },
    /// No document of that id is stored (user error).
    #[error("no document `{0}` in the store")]
    DocumentNotFound(String),
    /// Documents a removal named that are not stored; none was removed (user error).
    #[error("no such document(s): {}; nothing was removed", .0.join(", "))]
    NotRemoved(Vec<String>),
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

/// Where a chunker other than the store's was asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChunkerAsked {
    /// A strategy's `chunker=` (search, ask, eval against a store).
    Strategy,
    /// Adding documents (`add --chunker`, `sync`, `watch`).
    Add,
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
            Self::DocumentNotFound(_) | Self::NotRemoved(_) => ErrorCode::NotFound,
            Self::Strategy { .. }
            | Self::Invalid(_)
            | Self::ModelRequired(_)
            | Self::Unloadable { user: true, .. } => ErrorCode::InvalidParameter,
            Self::Watch { .. } | Self::Server(_) | Self::Unloadable { user: false, .. } => {
                ErrorCode::Internal
            }
        }
    }

    /// What the caller can do about it, when there is one thing to do.
    pub fn hint(&self) -> Option<String> {
        match self {
            Self::ChunkerMismatch { asked: ChunkerAsked::Strategy, .. } => Some(
                "leave `chunker=` out of the strategy to search the store as it is chunked; to \
                 re-chunk the store, `ckeep eval recommend --strategy SPEC --apply --rechunk` \
                 (when SPEC wins), or add the documents to a new --store"
                    .into(),
            ),
            Self::ChunkerMismatch { asked: ChunkerAsked::Add, .. } => Some(
                "a store keeps its chunker: leave --chunker out, add to a new --store, or \
                 re-chunk this one with `ckeep eval recommend --apply --rechunk`"
                    .into(),
            ),
            Self::AnalyzerMismatch { .. } => {
                Some("use another --store, or leave the analyzer out".into())
            }
            Self::AnalyzerUnknown { .. } => Some("re-create the store with this ckeep".into()),
            Self::ModelMismatch { stored, .. } => {
                Some(format!("use --model {stored}, or another --store"))
            }
            Self::DocumentNotFound(_) | Self::NotRemoved(_) => {
                Some("search the store to see the ids it holds".into())
            }
            Self::Unloadable { .. } => {
                Some("fix or leave out those inputs, or skip them with --keep-going".into())
            }
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

/// How each error is classified: the typed error nearest the top of a chain decides.
impl ErrorCode {
    /// The code of one error, when its type is one of ours (or an I/O error).
    pub fn of_error(e: &(dyn StdError + 'static)) -> Option<Self> {
        let user = |yes: bool| if yes { Self::InvalidParameter } else { Self::Internal };
        if e.downcast_ref::<UsageError>().is_some() {
            Some(Self::InvalidParameter)
        } else if let Some(e) = e.downcast_ref::<Error>() {
            Some(e.code())
        } else if let Some(e) = e.downcast_ref::<ckeep_text::Error>() {
            Some(Error::load_code(e))
        } else if let Some(e) = e.downcast_ref::<ckeep_store::Error>() {
            Some(Error::store_code(e))
        } else if let Some(e) = e.downcast_ref::<ckeep_embed::Error>() {
            Some(Self::of_model(e.is_user_error()))
        } else if let Some(e) = e.downcast_ref::<ckeep_llm::Error>() {
            Some(Self::of_model(e.is_user_error()))
        } else {
            e.downcast_ref::<std::io::Error>()
                .map(|e| if is_missing_path(e) { Self::NotFound } else { user(false) })
        }
    }

    /// The code of an error and its causes: the typed error nearest the top decides, found by
    /// [`ErrorCode::of_error`] or, for error types above the engine, by `also`; `Internal`
    /// when none is typed.
    pub fn of_chain(
        err: &(dyn StdError + 'static),
        also: impl Fn(&(dyn StdError + 'static)) -> Option<Self>,
    ) -> Self {
        std::iter::successors(Some(err), |&e| e.source())
            .find_map(|e| Self::of_error(e).or_else(|| also(e)))
            .unwrap_or(Self::Internal)
    }
}

impl ErrorBody {
    /// The body of `err` and its causes: the code as [`ErrorCode::of_chain`] finds it (with
    /// `also` for error types above the engine), the hint of the engine error in the chain,
    /// and `message`, which the front end words (the CLI joins the causes).
    pub fn of(
        err: &(dyn StdError + 'static),
        message: String,
        also: impl Fn(&(dyn StdError + 'static)) -> Option<ErrorCode>,
    ) -> Self {
        let hint = std::iter::successors(Some(err), |&e| e.source())
            .find_map(|e| e.downcast_ref::<Error>().and_then(Error::hint));
        Self { code: ErrorCode::of_chain(err, also), message, hint }
    }
}

/// Engine results.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    /// Each engine error variant, and the errors of the crates below it, has its code.
    #[test]
    fn every_error_variant_has_its_code() {
        let io = std::io::Error::from;
        let unloadable =
            |user| Error::Unloadable { failures: vec!["a".into()], verb: "added".into(), user };
        let both = |stored: &str| (stored.to_string(), "b".to_string());
        let (stored, requested) = both("a");
        let cases: Vec<(Box<dyn StdError>, ErrorCode)> = vec![
            (Box::new(Error::Invalid("k".into())), ErrorCode::InvalidParameter),
            (
                Box::new(Error::Strategy { spec: "x".into(), message: "y".into() }),
                ErrorCode::InvalidParameter,
            ),
            (Box::new(Error::ModelRequired("m".into())), ErrorCode::InvalidParameter),
            (Box::new(Error::DocumentNotFound("d".into())), ErrorCode::NotFound),
            (Box::new(Error::NotRemoved(vec!["d".into()])), ErrorCode::NotFound),
            (Box::new(unloadable(true)), ErrorCode::InvalidParameter),
            (Box::new(unloadable(false)), ErrorCode::Internal),
            (
                Box::new(Error::ChunkerMismatch {
                    stored: stored.clone(),
                    requested: requested.clone(),
                    asked: ChunkerAsked::Add,
                }),
                ErrorCode::Conflict,
            ),
            (
                Box::new(Error::AnalyzerMismatch {
                    stored: stored.clone(),
                    requested: requested.clone(),
                }),
                ErrorCode::Conflict,
            ),
            (Box::new(Error::AnalyzerUnknown { stored: stored.clone() }), ErrorCode::Conflict),
            (Box::new(Error::ModelMismatch { stored, requested }), ErrorCode::Conflict),
            (
                Box::new(Error::Load(ckeep_text::Error::Empty { origin: "x".into() })),
                ErrorCode::InvalidParameter,
            ),
            (
                Box::new(Error::Store(ckeep_store::Error::NotFound { path: "s".into() })),
                ErrorCode::NotFound,
            ),
            (
                Box::new(Error::Store(ckeep_store::Error::Unsupported("u".into()))),
                ErrorCode::InvalidParameter,
            ),
            (
                Box::new(Error::Embed(ckeep_embed::Error::NotFound("m".into()))),
                ErrorCode::ModelUnavailable,
            ),
            (
                Box::new(Error::Llm(ckeep_llm::Error::NotFound("m".into()))),
                ErrorCode::ModelUnavailable,
            ),
            (
                Box::new(Error::Embed(ckeep_embed::Error::Tokenizer("t".into()))),
                ErrorCode::ModelFailed,
            ),
            (Box::new(Error::Server("down".into())), ErrorCode::Internal),
            (Box::new(Error::Watch { path: "p".into(), message: "m".into() }), ErrorCode::Internal),
            (Box::new(UsageError("bad".into())), ErrorCode::InvalidParameter),
            (Box::new(io(std::io::ErrorKind::NotFound)), ErrorCode::NotFound),
            (Box::new(io(std::io::ErrorKind::PermissionDenied)), ErrorCode::Internal),
            (Box::new(std::fmt::Error), ErrorCode::Internal),
        ];
        for (err, code) in cases {
            assert_eq!(ErrorCode::of_chain(err.as_ref(), |_| None), code, "{err}");
            if let Some(e) = err.downcast_ref::<Error>() {
                assert_eq!(e.is_user_error(), code.is_user(), "{e}");
            }
        }
        // Unknown to the engine: internal, unless the caller's extra rule knows it.
        let other = std::fmt::Error;
        assert_eq!(ErrorCode::of_chain(&other, |_| Some(ErrorCode::NotFound)), ErrorCode::NotFound);
    }

    #[test]
    fn the_body_carries_the_hint_of_the_engine_error_in_the_chain() {
        /// An error of a front end's, caused by an engine error.
        #[derive(Debug)]
        struct Searching(Error);
        impl std::fmt::Display for Searching {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "searching: {}", self.0)
            }
        }
        impl StdError for Searching {
            fn source(&self) -> Option<&(dyn StdError + 'static)> {
                Some(&self.0)
            }
        }
        let err = Searching(Error::ChunkerMismatch {
            stored: "sentences".into(),
            requested: "words:50".into(),
            asked: ChunkerAsked::Strategy,
        });
        let body = ErrorBody::of(&err, err.to_string(), |_| None);
        assert_eq!(body.code, ErrorCode::Conflict);
        assert!(body.hint.as_deref().is_some_and(|h| h.contains("--store")), "{body:?}");
        let json = body.to_json();
        assert_eq!(json["error"]["code"], "conflict");
        assert!(json["error"]["message"].as_str().unwrap().contains("`sentences`"));
    }
}
