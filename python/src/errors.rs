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

/// Maps an error to its exception class by the engine's table, as every front end answers
/// an error (the typed error nearest the top of its chain decides). The exception carries the
/// body's stable `code` (`not_found`, …) and `hint`, as the CLI's and the server's JSON do.
pub fn to_py(err: &anyhow::Error) -> PyErr {
    let body = ckeep_eval::Error::body(err.as_ref(), format!("{err:#}"));
    let message = match &body.hint {
        Some(hint) => format!("{} ({hint})", body.message),
        None => body.message.clone(),
    };
    let exception = match body.code.rendering().python {
        "UsageError" => UsageError::new_err(message),
        "ModelError" => ModelError::new_err(message),
        _ => StoreError::new_err(message),
    };
    Python::attach(|py| {
        let value = exception.value(py);
        // Setting an attribute on a fresh exception object cannot fail.
        let _ = value.setattr("code", body.code.as_str());
        let _ = value.setattr("hint", body.hint.as_deref());
    });
    exception
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
    anyhow::Error::new(ckeep_engine::UsageError(message.into()))
}
