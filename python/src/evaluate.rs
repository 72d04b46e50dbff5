//! `ckeep.eval`: strategies compared on a dataset (`ckeep eval run --json`) and a run scored
//! against relevance judgements (`ckeep eval metrics --json`).

use std::path::PathBuf;

use ckeep_engine::{ModelSet, Strategy};
use ckeep_eval::{Metric, Qrels, Run, dataset, evaluate, experiment, report};
use pyo3::prelude::*;

use crate::errors::{detached, usage};

/// `ndcg@10,mrr@10` → metrics (the default set when `None`).
fn parse_metrics(list: Option<&str>) -> anyhow::Result<Vec<Metric>> {
    let list = list.unwrap_or(ckeep_eval::DEFAULT_METRICS);
    let metrics = list
        .split(',')
        .filter(|m| !m.trim().is_empty())
        .map(|m| m.trim().parse::<Metric>())
        .collect::<Result<Vec<_>, _>>()?;
    if metrics.is_empty() {
        anyhow::bail!(usage("no metrics given"));
    }
    Ok(metrics)
}

/// Runs every strategy on a dataset and compares them: `ckeep eval run --json` with every
/// query's values (`per_query`) and the CLI's table (`table`).
#[pyfunction]
#[pyo3(signature = (*, dataset=None, split="test".to_string(), docs=None, queries=None,
    relevance="doc".to_string(), strategies, metrics=None, model=None, work_dir=None, report_dir=None,
    count_tokens=None, cache=true, progress=None, fields=None))]
#[allow(clippy::too_many_arguments)]
pub fn eval_run(
    py: Python<'_>,
    dataset: Option<PathBuf>,
    split: String,
    docs: Option<PathBuf>,
    queries: Option<PathBuf>,
    relevance: String,
    strategies: Vec<String>,
    metrics: Option<String>,
    model: Option<String>,
    work_dir: Option<String>,
    report_dir: Option<PathBuf>,
    count_tokens: Option<String>,
    cache: bool,
    progress: Option<Py<PyAny>>,
    fields: Option<String>,
) -> PyResult<String> {
    detached(py, || {
        let metrics = parse_metrics(metrics.as_deref())?;
        let passage = match relevance.as_str() {
            "doc" => false,
            "passage" => true,
            other => anyhow::bail!(usage(format!("relevance `{other}`: expected doc or passage"))),
        };
        if strategies.is_empty() {
            anyhow::bail!(usage("give at least one strategy"));
        }
        let mut parsed =
            strategies.iter().map(|s| s.parse::<Strategy>()).collect::<Result<Vec<_>, _>>()?;
        experiment::default_model(&mut parsed, model.as_deref());
        let files = docs.as_deref().zip(queries.as_deref());
        let mut data = dataset::load(dataset.as_deref(), &split, files, passage)?;
        if let Some(f) = fields.as_deref() {
            data.fields = f.parse().map_err(|e: String| usage(format!("fields: {e}")))?;
        }
        if data.queries.is_empty() {
            anyhow::bail!(usage(format!("{} has no judged queries", data.name)));
        }
        let tokens = match count_tokens.as_deref() {
            None | Some("none") => None,
            Some(spec) => Some(ckeep_embed::TokenCounter::load(spec)?),
        };
        let tmp = tempfile::Builder::new().prefix("ckeep-eval-").tempdir()?;
        let work = work_dir.unwrap_or_else(|| tmp.path().display().to_string());
        let loaded = ModelSet::new(cache);
        let mut models = |spec: &str| loaded.get(spec).map_err(ckeep_engine::Error::Embed);
        let mut report_progress = crate::progress::reporter(progress.as_ref());
        let comparison = experiment::run(
            &data,
            &parsed,
            &metrics,
            &work,
            &mut models,
            tokens.as_ref(),
            &mut report_progress,
        )?;
        if let Some(dir) = &report_dir {
            report::write(dir, &comparison, &data.qrels)?;
        }
        let mut value = comparison.to_json(true);
        value["table"] = report::markdown_table(&comparison).into();
        Ok(value.to_string())
    })
}

/// Scores a run against qrels, each given as a file path or as TREC text:
/// `ckeep eval metrics --json`.
#[pyfunction]
#[pyo3(signature = (*, qrels_path=None, qrels_text=None, run_path=None, run_text=None,
    metrics=None, per_query=false))]
pub fn eval_metrics(
    py: Python<'_>,
    qrels_path: Option<PathBuf>,
    qrels_text: Option<String>,
    run_path: Option<PathBuf>,
    run_text: Option<String>,
    metrics: Option<String>,
    per_query: bool,
) -> PyResult<String> {
    detached(py, || {
        let metrics = parse_metrics(metrics.as_deref())?;
        if let Some(m) = metrics.iter().find(|m| m.needs_text()) {
            anyhow::bail!(usage(format!("{m} needs the retrieved text; use ckeep.eval.run")));
        }
        let qrels = match (qrels_path, qrels_text) {
            (Some(p), None) => Qrels::read(&p)?,
            (None, Some(t)) => Qrels::from_trec(&t)?,
            _ => anyhow::bail!(usage("give qrels as a path or as judgements, once")),
        };
        let run = match (run_path, run_text) {
            (Some(p), None) => Run::read(&p)?,
            (None, Some(t)) => Run::from_trec(&t)?,
            _ => anyhow::bail!(usage("give the run as a path or as scores, once")),
        };
        Ok(evaluate(&qrels, &run, &metrics).to_json(per_query).to_string())
    })
}

/// Makes a test set from documents (files as `ckeep add` reads them, a dataset's, or a
/// store's) into `out`: `ckeep eval synth --json`'s report.
#[pyfunction]
#[pyo3(signature = (out, *, paths=None, dataset=None, split="test".to_string(), store=None,
    count=200, seed=42, generator="ict".to_string(),
    llm="qwen2.5-coder-0.5b-instruct".to_string(), prompt=None, progress=None))]
#[allow(clippy::too_many_arguments)]
pub fn eval_synth(
    py: Python<'_>,
    out: PathBuf,
    paths: Option<Vec<PathBuf>>,
    dataset: Option<PathBuf>,
    split: String,
    store: Option<String>,
    count: usize,
    seed: u64,
    generator: String,
    llm: String,
    prompt: Option<String>,
    progress: Option<Py<PyAny>>,
) -> PyResult<String> {
    use ckeep_eval::synth;
    detached(py, || {
        let docs = match (paths, dataset, store) {
            (Some(paths), None, None) => {
                let loader = ckeep_text::Loader::default();
                let mut docs = Vec::new();
                for source in loader.sources(&paths)? {
                    docs.extend(loader.load(&source)?.documents);
                }
                docs
            }
            (None, Some(dir), None) => dataset::load(Some(&dir), &split, None, false)?.docs,
            (None, None, Some(location)) => {
                let engine = ckeep_engine::Engine::new(ckeep_store::open(&location)?);
                ckeep_eval::recommend::documents_of(&engine, &mut |_, _| {})?
            }
            _ => anyhow::bail!(usage("give exactly one of paths, dataset or store")),
        };
        let opts = synth::SynthOptions::new(count, seed, generator.parse()?);
        let report = if opts.generator == synth::Generator::Llm {
            let model = synth::llm::open_model(&llm)?;
            let writer = synth::llm::QueryWriter::new(model.as_ref(), prompt)?;
            let mut report_progress = crate::progress::reporter(progress.as_ref());
            let mut step = |done, total| report_progress("asking the model", done, total);
            let (queries, report) = synth::synthesize_with(&docs, &opts, Some(&writer), &mut step)?;
            synth::write(&out, &docs, &queries, &report)?;
            if let Some(why) = &report.stopped {
                anyhow::bail!(
                    "{why}\n{} queries made before it stopped are in {}",
                    report.queries,
                    out.display()
                );
            }
            report
        } else {
            synth::make(&docs, &opts, &out)?
        };
        Ok(serde_json::json!({"out": out.display().to_string(), "report": report}).to_string())
    })
}
