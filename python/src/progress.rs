//! Progress of long calls, reported to a Python callable `(stage, done, total)` from inside
//! the detached call: the GIL is taken back only for the callback.

use pyo3::prelude::*;

/// A reporter calling `callback` (or doing nothing without one). A callback that raises is
/// not called again: progress must never abort the work it reports on.
pub fn reporter(callback: Option<&Py<PyAny>>) -> impl FnMut(&str, u64, u64) + '_ {
    let mut failed = false;
    move |stage: &str, done: u64, total: u64| {
        let Some(callback) = callback else { return };
        if failed {
            return;
        }
        Python::attach(|py| {
            if let Err(e) = callback.call1(py, (stage, done, total)) {
                e.print(py);
                failed = true;
            }
        });
    }
}
