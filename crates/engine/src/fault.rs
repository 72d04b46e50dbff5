//! Whose fault an error is, decided once for every error type at or below the engine, so the
//! front ends agree: the caller's (the CLI's exit code 2, Python's `UsageError`), a model's
//! (Python's `ModelError`), or the store's, the machine's or ours (exit code 1, `StoreError`).
//! The server answers 4xx against 5xx by the same rule ([`Error::is_user_error`]).

use std::error::Error as StdError;

use ckeep_text::is_missing_path;

use crate::error::Error;

/// Whose fault an error is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// What was asked for or given is wrong: a bad argument, malformed input, a path that is
    /// not there, a store built otherwise.
    User,
    /// An embedding or language model could not be found, loaded or run; `user` when the
    /// caller named one that is not there or not usable.
    Model {
        /// Whether the caller is at fault.
        user: bool,
    },
    /// The store, the machine, a server or our code failed.
    Runtime,
}

/// A caller's mistake that a front end finds itself (a bad option value): [`Fault::User`].
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

impl Fault {
    /// Whether the caller is at fault.
    pub fn is_user(self) -> bool {
        matches!(self, Self::User | Self::Model { user: true })
    }

    /// The process exit code for it: 2 for the caller's fault, 1 otherwise.
    pub fn exit_code(self) -> u8 {
        if self.is_user() { 2 } else { 1 }
    }

    /// `"usage"` or `"runtime"`, as `--json` errors name their kind.
    pub fn kind(self) -> &'static str {
        if self.is_user() { "usage" } else { "runtime" }
    }

    /// The fault of one error, when its type is one of ours (or an I/O error).
    pub fn of_error(e: &(dyn StdError + 'static)) -> Option<Self> {
        let user = |yes: bool| if yes { Self::User } else { Self::Runtime };
        if e.downcast_ref::<UsageError>().is_some() {
            Some(Self::User)
        } else if let Some(e) = e.downcast_ref::<Error>() {
            Some(user(e.is_user_error()))
        } else if let Some(e) = e.downcast_ref::<ckeep_text::Error>() {
            Some(user(e.is_user_error()))
        } else if let Some(e) = e.downcast_ref::<ckeep_store::Error>() {
            Some(user(e.is_user_error()))
        } else if let Some(e) = e.downcast_ref::<ckeep_embed::Error>() {
            Some(Self::Model { user: e.is_user_error() })
        } else if let Some(e) = e.downcast_ref::<ckeep_llm::Error>() {
            Some(Self::Model { user: e.is_user_error() })
        } else {
            e.downcast_ref::<std::io::Error>().map(|e| user(is_missing_path(e)))
        }
    }

    /// The fault of an error and its causes: the typed error nearest the top decides, found
    /// by [`Fault::of_error`] or, for error types above the engine, by `also`; `Runtime` when
    /// none is typed.
    pub fn of_chain(
        err: &(dyn StdError + 'static),
        also: impl Fn(&(dyn StdError + 'static)) -> Option<Self>,
    ) -> Self {
        std::iter::successors(Some(err), |&e| e.source())
            .find_map(|e| Self::of_error(e).or_else(|| also(e)))
            .unwrap_or(Self::Runtime)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_typed_error_nearest_the_top_decides() {
        let missing = std::io::Error::from(std::io::ErrorKind::NotFound);
        assert_eq!(Fault::of_chain(&missing, |_| None), Fault::User);
        let denied = std::io::Error::from(std::io::ErrorKind::PermissionDenied);
        assert_eq!(Fault::of_chain(&denied, |_| None), Fault::Runtime);
        let load = Error::Load(ckeep_text::Error::Empty { origin: "x".into() });
        assert_eq!(Fault::of_chain(&load, |_| None), Fault::User);
        let server = Error::Server("down".into());
        assert_eq!(Fault::of_chain(&server, |_| None), Fault::Runtime);
        let model = ckeep_embed::Error::NotFound("nope".into());
        assert_eq!(Fault::of_chain(&model, |_| None), Fault::Model { user: true });
        let llm = ckeep_llm::Error::NotFound("nope".into());
        assert_eq!(Fault::of_chain(&llm, |_| None), Fault::Model { user: true });
        assert_eq!(Fault::of_chain(&UsageError("bad".into()), |_| None).exit_code(), 2);
        // Unknown to the engine: runtime, unless the caller's extra rule knows it.
        let other = std::fmt::Error;
        assert_eq!(Fault::of_chain(&other, |_| None), Fault::Runtime);
        assert_eq!(Fault::of_chain(&other, |_| Some(Fault::User)), Fault::User);
    }
}
