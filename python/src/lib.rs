//! `ckeep._ckeep`: the engine for Python. The Python layer in `ckeep/` turns its JSON answers
//! into dataclasses, so Python sees exactly what `ckeep … --json` prints (one serializer).
//!
//! Every call that reads, embeds, indexes or searches releases the GIL, and no Rust panic
//! reaches Python: each becomes a [`StoreError`] naming the bug.

// PyO3 hands every argument over as an owned value.
#![allow(clippy::needless_pass_by_value)]

mod embedder;
mod errors;
mod evaluate;
mod progress;
mod store;
mod study;

use pyo3::prelude::*;

pub use errors::{CkeepError, ModelError, StoreError, UsageError};

/// The native module.
#[pymodule]
fn _ckeep(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("CkeepError", py.get_type::<CkeepError>())?;
    m.add("UsageError", py.get_type::<UsageError>())?;
    m.add("StoreError", py.get_type::<StoreError>())?;
    m.add("ModelError", py.get_type::<ModelError>())?;
    m.add_class::<store::Store>()?;
    m.add_class::<embedder::Embedder>()?;
    m.add_function(wrap_pyfunction!(study::similar, m)?)?;
    m.add_function(wrap_pyfunction!(study::pairs, m)?)?;
    m.add_function(wrap_pyfunction!(evaluate::eval_run, m)?)?;
    m.add_function(wrap_pyfunction!(evaluate::eval_metrics, m)?)?;
    m.add_function(wrap_pyfunction!(evaluate::eval_synth, m)?)?;
    m.add_function(wrap_pyfunction!(known_extensions, m)?)?;
    Ok(())
}

/// The file extensions `add` reads (lower case, without the dot): the loaders' own table, so
/// the Python layer tells a path from a text as `ckeep add` would.
#[pyfunction]
fn known_extensions() -> Vec<&'static str> {
    ckeep_text::load::EXTENSIONS.iter().map(|(ext, _)| *ext).collect()
}

/// A byte span of `text` counted in characters, as Python strings index.
pub(crate) fn char_span(text: &str, start: usize, end: usize) -> [usize; 2] {
    let before = text.get(..start).map_or(0, |t| t.chars().count());
    [before, before + text.get(start..end).map_or(0, |t| t.chars().count())]
}
