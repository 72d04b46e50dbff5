//! Rust errors as Python exceptions: the model's fault, the caller's, or the store's/system's,
//! decided by the same `is_user_error` rules as the CLI's exit codes and the server's statuses.

use std::panic::{AssertUnwindSafe, catch_unwind};

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;

create_exception!(_ckeep, CkeepError, PyException, "Every error Context Keeper raises.");
create_exception!(
    _ckeep,
    UsageError,
    CkeepError,
    "The caller's mistake: a bad argument, malformed input, no store there, a store built otherwise."
);
create_exception!(
    _ckeep,
    StoreError,
    CkeepError,
    "The store or the system failed (I/O, database, an internal error)."
);
create_exception!(
    _ckeep,
    ModelError,
    CkeepError,
    "An embedding model could not be found, loaded or run."
);

/// A caller's mistake found by the bindings themselves (an unknown option value).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Usage(pub String);

/// Maps an error to its exception class by the typed error nearest the top of its chain.
pub fn to_py(err: &anyhow::Error) -> PyErr {
    let message = format!("{err:#}");
    for cause in err.chain() {
        if cause.downcast_ref::<Usage>().is_some() {
            return UsageError::new_err(message);
        }
        if cause.downcast_ref::<ckeep_embed::Error>().is_some() {
            return ModelError::new_err(message);
        }
        let user = if let Some(e) = cause.downcast_ref::<ckeep_engine::Error>() {
            Some(e.is_user_error())
        } else if let Some(e) = cause.downcast_ref::<ckeep_text::Error>() {
            Some(e.is_user_error())
        } else if let Some(e) = cause.downcast_ref::<ckeep_eval::Error>() {
            Some(e.is_user_error())
        } else {
            cause.downcast_ref::<ckeep_store::Error>().map(ckeep_store::Error::is_user_error)
        };
        match user {
            Some(true) => return UsageError::new_err(message),
            Some(false) => return StoreError::new_err(message),
            None => {}
        }
    }
    StoreError::new_err(message)
}

/// Runs `job` without the GIL; its errors and panics come back as Python exceptions.
pub fn detached<T: Send>(
    py: Python<'_>,
    job: impl FnOnce() -> anyhow::Result<T> + Send,
) -> PyResult<T> {
    let outcome = py.detach(|| catch_unwind(AssertUnwindSafe(job)));
    match outcome {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(err)) => Err(to_py(&err)),
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(ToString::to_string)
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic".to_string());
            Err(StoreError::new_err(format!(
                "internal error (a bug in ckeep, please report it): {what}"
            )))
        }
    }
}

/// A bad option value, as an error [`to_py`] raises as `UsageError`.
pub fn usage(message: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(Usage(message.into()))
}
