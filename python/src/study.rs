//! `similar` and `pairs`: chunk-pair similarity of two texts, and a labelled-pair study, with
//! the figures `ckeep similar --json` and `ckeep pairs --json` print.

use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use ckeep_engine::{ModelSet, PairScorer};
use ckeep_eval::pair_file::{Columns, LabelledPair, PairFile, PairFormat};
use ckeep_eval::pair_study::{PairSelection, study};
use ckeep_text::ChunkerSpec;
use pyo3::prelude::*;

use crate::errors::{detached, usage};

/// Models loaded by these functions, once per process (with and without the embedding cache).
static CACHED: LazyLock<ModelSet> = LazyLock::new(|| ModelSet::new(true));
static UNCACHED: LazyLock<ModelSet> = LazyLock::new(|| ModelSet::new(false));

/// How a pair is cut and scored.
struct Scoring {
    model: String,
    chunker: String,
    top_k: usize,
    cache: bool,
}

impl Scoring {
    fn scorer(&self) -> anyhow::Result<PairScorer> {
        let chunker: ChunkerSpec = self.chunker.parse().map_err(|e| usage(format!("{e}")))?;
        let models = if self.cache { &*CACHED } else { &*UNCACHED };
        Ok(PairScorer::new(models.get(&self.model)?, chunker, self.top_k)?)
    }
}

/// A file's text under the loaders' UTF-8 policy.
fn read_text(path: &Path) -> anyhow::Result<String> {
    let origin = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| usage(format!("reading {origin}: {e}")))?;
    Ok(ckeep_text::decode::decode(bytes, &origin, false)?.text)
}

/// Chunk-pair score and whole-text cosine of two texts (or files): `ckeep similar --json`.
#[pyfunction]
#[pyo3(signature = (a, b, *, files=false, model, chunker, top_k, threshold, explain=false, cache=true))]
#[allow(clippy::too_many_arguments, clippy::fn_params_excessive_bools)]
pub fn similar(
    py: Python<'_>,
    a: String,
    b: String,
    files: bool,
    model: String,
    chunker: String,
    top_k: usize,
    threshold: f64,
    explain: bool,
    cache: bool,
) -> PyResult<String> {
    detached(py, || {
        let (a, b) =
            if files { (read_text(Path::new(&a))?, read_text(Path::new(&b))?) } else { (a, b) };
        for (name, text) in [("a", &a), ("b", &b)] {
            if text.trim().is_empty() {
                anyhow::bail!(usage(format!("{name} is empty")));
            }
        }
        let scorer = Scoring { model, chunker, top_k, cache }.scorer()?;
        let mut report = serde_json::to_value(scorer.report(&a, &b, threshold, explain)?)?;
        for m in report["top"].as_array_mut().into_iter().flatten() {
            for (side, text) in [("a", &a), ("b", &b)] {
                let span = &m[side]["span"];
                if let (Some(start), Some(end)) = (span[0].as_u64(), span[1].as_u64()) {
                    let chars = crate::char_span(text, start as usize, end as usize);
                    m[side]["char_span"] = serde_json::json!(chars);
                }
            }
        }
        Ok(report.to_string())
    })
}

/// Pairs from a file (`format`: tsv, csv or jsonl, else from the extension; `columns` as in
/// `ckeep pairs --columns`).
fn read_pairs(
    path: &Path,
    format: Option<&str>,
    columns: Option<&str>,
) -> anyhow::Result<Vec<LabelledPair>> {
    let format = match format {
        Some("tsv") => PairFormat::Tsv,
        Some("csv") => PairFormat::Csv,
        Some("jsonl") => PairFormat::Jsonl,
        Some(other) => {
            anyhow::bail!(usage(format!("format `{other}`: expected tsv, csv or jsonl")))
        }
        None => PairFormat::from_path(path).unwrap_or(PairFormat::Tsv),
    };
    let columns: Columns = match columns {
        Some(c) => c.parse().map_err(|e| usage(format!("columns `{c}`: {e}")))?,
        None => Columns::default(),
    };
    let file = PairFile::read(path, format, &columns)?;
    if file.pairs.is_empty() {
        anyhow::bail!(usage(format!("{} has no pairs", path.display())));
    }
    Ok(file.pairs)
}

/// Pairs given in memory: `(a, b, label)`, numbered from 0.
fn given_pairs(pairs: Vec<(String, String, bool)>) -> Vec<LabelledPair> {
    pairs
        .into_iter()
        .enumerate()
        .map(|(i, (a, b, label))| LabelledPair { id: i.to_string(), label, a, b })
        .collect()
}

/// A labelled-pair study: `ckeep pairs --json`. Pairs come from `file` or `pairs`; thresholds
/// may be calibrated on `calibrate_file`/`calibrate_pairs` or on a `calibrate_split` of them.
/// `progress(done, total)` is called as texts are embedded.
#[pyfunction]
#[pyo3(signature = (*, file=None, pairs=None, format=None, columns=None, calibrate_file=None,
    calibrate_pairs=None, calibrate_split=None, sample=None, seed=42, model, chunker, top_k,
    threshold, cache=true, progress=None))]
#[allow(clippy::too_many_arguments)]
pub fn pairs(
    py: Python<'_>,
    file: Option<PathBuf>,
    pairs: Option<Vec<(String, String, bool)>>,
    format: Option<String>,
    columns: Option<String>,
    calibrate_file: Option<PathBuf>,
    calibrate_pairs: Option<Vec<(String, String, bool)>>,
    calibrate_split: Option<f64>,
    sample: Option<usize>,
    seed: u64,
    model: String,
    chunker: String,
    top_k: usize,
    threshold: f64,
    cache: bool,
    progress: Option<Py<PyAny>>,
) -> PyResult<String> {
    detached(py, || {
        let (format, columns) = (format.as_deref(), columns.as_deref());
        let report = match (&file, pairs) {
            (Some(path), None) => read_pairs(path, format, columns)?,
            (None, Some(p)) => given_pairs(p),
            _ => anyhow::bail!(usage("give pairs or a file, not both")),
        };
        let calibration = match (&calibrate_file, calibrate_pairs) {
            (Some(path), None) => read_pairs(path, format, columns)?,
            (None, Some(p)) => given_pairs(p),
            (None, None) => Vec::new(),
            _ => anyhow::bail!(usage("give calibration pairs or a calibration file, not both")),
        };
        let selection = PairSelection { calibrate_split, sample, seed };
        let (report, calibration) = selection.apply(report, calibration)?;
        let scorer = Scoring { model, chunker, top_k, cache }.scorer()?;
        let mut report_progress = crate::progress::reporter(progress.as_ref());
        let mut result = study(&scorer, &report, &calibration, threshold, &mut |done, total| {
            report_progress("embedding", done, total);
        })?;
        result.file = file.map(|f| f.display().to_string());
        Ok(serde_json::to_string(&result)?)
    })
}
