//! `Embedder`: a model's vectors as one float32 `NumPy` matrix. The rows are written once, into
//! a buffer `NumPy` then owns: no Python list of floats is ever built.

use std::sync::Arc;

use ckeep_embed::InputKind;
use numpy::ndarray::Array2;
use numpy::{IntoPyArray, PyArray2};
use pyo3::prelude::*;

use crate::errors::{detached, usage};

/// An embedding model: a name (`ckeep model pull`), a model directory, or `URL#MODEL`.
#[derive(Debug)]
#[pyclass(frozen, module = "ckeep._ckeep")]
pub struct Embedder {
    model: Arc<dyn ckeep_embed::Embedder>,
}

#[pymethods]
impl Embedder {
    #[new]
    #[pyo3(signature = (name_or_dir, *, cache=true))]
    fn new(py: Python<'_>, name_or_dir: String, cache: bool) -> PyResult<Self> {
        let model = detached(py, || Ok(ckeep_engine::load_model(&name_or_dir, cache)?))?;
        Ok(Self { model })
    }

    /// `ckeep model info --json`'s description: name, dimensions, input limit, prompts.
    #[getter]
    fn info(&self) -> PyResult<String> {
        serde_json::to_string(self.model.info())
            .map_err(|e| crate::errors::StoreError::new_err(e.to_string()))
    }

    /// Vectors of `texts` as a (len(texts), dim) float32 matrix, embedded as `kind`: `passage`
    /// (stored text), `query` (the model's query prompt) or `pair` (symmetric comparison).
    #[pyo3(signature = (texts, *, kind="passage"))]
    fn embed<'py>(
        &self,
        py: Python<'py>,
        texts: Vec<String>,
        kind: &str,
    ) -> PyResult<Bound<'py, PyArray2<f32>>> {
        let kind = match kind {
            "passage" | "document" => Ok(InputKind::Document),
            "query" => Ok(InputKind::Query),
            "pair" => Ok(InputKind::Pair),
            other => Err(usage(format!("kind `{other}`: expected passage, query or pair"))),
        };
        let dim = self.model.info().dim;
        let matrix = detached(py, || {
            let kind = kind?;
            let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
            let (rows, _) = self.model.embed(&refs, kind)?;
            let mut flat = Vec::with_capacity(rows.len() * dim);
            for row in &rows {
                flat.extend_from_slice(row);
            }
            Ok(Array2::from_shape_vec((rows.len(), dim), flat)?)
        })?;
        Ok(matrix.into_pyarray(py))
    }
}
