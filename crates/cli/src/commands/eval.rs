//! `ckeep eval metrics` and `ckeep eval run`.

use std::process::ExitCode;

use std::sync::Arc;

use anyhow::{Context, bail};
use ckeep_embed::Embedder;
use ckeep_eval::experiment::Comparison;
use ckeep_eval::{Metric, Qrels, Run, dataset, evaluate, experiment, report};

use crate::args::{EvalCommand, EvalMetricsArgs, EvalRunArgs};
use crate::output::{Output, outln};

pub fn run(cmd: &EvalCommand, no_cache: bool, out: &Output) -> anyhow::Result<ExitCode> {
    match cmd {
        EvalCommand::Metrics(a) => metrics(a, out),
        EvalCommand::Run(a) => run_strategies(a, no_cache, out),
    }
}

fn metrics(args: &EvalMetricsArgs, out: &Output) -> anyhow::Result<ExitCode> {
    if let Some(m) = args.metrics.iter().find(|m| m.needs_text()) {
        bail!(crate::UsageError(format!("{m} needs the retrieved text; use `ckeep eval run`")));
    }
    let qrels = Qrels::read(&args.qrels)?;
    let run = Run::read(&args.run)?;
    let eval = evaluate(&qrels, &run, &args.metrics);
    if !eval.missing_from_run.is_empty() {
        out.warn(format!(
            "{} judged queries have no results in the run and are not averaged in",
            eval.missing_from_run.len()
        ));
    }
    if out.json {
        let mut v = serde_json::json!({
            "queries": eval.queries.len(),
            "means": by_metric(&eval.metrics, &eval.means),
            "missing_from_run": eval.missing_from_run,
        });
        if args.per_query {
            v["per_query"] = per_query_json(&eval);
        }
        out.print_json(&v)?;
        return Ok(ExitCode::SUCCESS);
    }
    for (m, v) in eval.metrics.iter().zip(&eval.means) {
        outln!("{m:<12} {v:.4}");
    }
    outln!("{:<12} {}", "queries", eval.queries.len());
    if args.per_query {
        for (q, vals) in eval.queries.iter().zip(&eval.per_query) {
            let cells: Vec<String> = vals.iter().map(|v| format!("{v:.4}")).collect();
            outln!("{q}\t{}", cells.join("\t"));
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn per_query_json(eval: &ckeep_eval::Evaluation) -> serde_json::Value {
    eval.queries
        .iter()
        .zip(&eval.per_query)
        .map(|(q, vals)| (q.clone(), by_metric(&eval.metrics, vals)))
        .collect::<serde_json::Map<_, _>>()
        .into()
}

/// `{"metric": value, …}` for values given in the order of `metrics`.
fn by_metric<T: serde::Serialize>(metrics: &[String], values: &[T]) -> serde_json::Value {
    metrics
        .iter()
        .zip(values)
        .map(|(m, v)| (m.clone(), serde_json::json!(v)))
        .collect::<serde_json::Map<_, _>>()
        .into()
}

fn run_strategies(args: &EvalRunArgs, no_cache: bool, out: &Output) -> anyhow::Result<ExitCode> {
    let data = match (&args.dataset, &args.docs, &args.queries) {
        (Some(dir), None, None) => dataset::load_dir(dir, &args.split)?,
        (None, Some(docs), Some(queries)) => {
            dataset::load_longdoc_at(docs, queries, args.relevance == "passage")?
        }
        _ => bail!(crate::UsageError("give --dataset DIR, or both --docs and --queries".into())),
    };
    if data.queries.is_empty() {
        bail!("{} has no judged queries", data.name);
    }
    out.note(format!(
        "{}: {} documents, {} queries, {} strategies",
        data.name,
        data.docs.len(),
        data.queries.len(),
        args.strategies.len()
    ));
    // Evaluation indexes go to a temporary directory (removed on exit) unless --work-dir.
    let tmp = tempfile::Builder::new().prefix("ckeep-eval-").tempdir()?;
    let tmp_path = tmp.path().display().to_string();
    let work: &str = args.work_dir.as_deref().unwrap_or(&tmp_path);
    let bar = out.progress(0, "");
    let mut stage = String::new();
    let mut progress = |what: &str, done: u64, total: u64| {
        if what != stage {
            stage = what.to_string();
            bar.set_message(stage.clone());
            bar.set_length(total);
        }
        bar.set_position(done);
    };
    let mut strategies = args.strategies.clone();
    for s in &mut strategies {
        if s.mode.needs_model() && s.model.is_none() {
            s.model.clone_from(&args.model);
        }
    }
    // Each model is loaded once, however many strategies name it.
    let mut loaded: std::collections::HashMap<String, Arc<dyn Embedder>> =
        std::collections::HashMap::new();
    let mut models = |spec: &str| -> Result<Arc<dyn Embedder>, ckeep_engine::Error> {
        if let Some(m) = loaded.get(spec) {
            return Ok(Arc::clone(m));
        }
        let m = super::load_model(spec, no_cache).map_err(|e| {
            match e.downcast::<ckeep_embed::Error>() {
                Ok(e) => ckeep_engine::Error::Embed(e),
                Err(e) => ckeep_engine::Error::Invalid(format!("{e:#}")),
            }
        })?;
        loaded.insert(spec.to_string(), Arc::clone(&m));
        Ok(m)
    };
    let tokens = match args.count_tokens.as_deref() {
        None | Some("none") => None,
        Some(spec) => match ckeep_embed::TokenCounter::load(spec) {
            Ok(t) => Some(t),
            Err(e) => {
                out.warn(format!("context lengths in words only: {e}"));
                None
            }
        },
    };
    let comparison = experiment::run(
        &data,
        &strategies,
        &args.metrics,
        work,
        &mut models,
        tokens.as_ref(),
        &mut progress,
    )?;
    bar.finish_and_clear();
    if let Some(dir) = &args.report {
        report::write(dir, &comparison, &data.qrels)
            .with_context(|| format!("writing the report to {}", dir.display()))?;
        out.note(format!("report written to {}", dir.display()));
    }
    print_comparison(&comparison, out)?;
    Ok(ExitCode::SUCCESS)
}

fn print_comparison(c: &Comparison, out: &Output) -> anyhow::Result<()> {
    if out.json {
        let strategies: Vec<serde_json::Value> = c
            .strategies
            .iter()
            .map(|s| {
                serde_json::json!({
                    "strategy": s.strategy,
                    "means": by_metric(&c.metrics, &s.evaluation.means),
                    "p_values": by_metric(&c.metrics, &s.p_values),
                    "query_seconds": s.query_seconds,
                    "context_words": s.context_words,
                    "context_tokens": s.context_tokens,
                })
            })
            .collect();
        out.print_json(&serde_json::json!({"dataset": c.dataset, "documents": c.documents, "queries": c.queries, "metrics": c.metrics, "context_k": c.context_k, "token_model": c.token_model, "strategies": strategies}))?;
    } else {
        outln!("{} — {} documents, {} queries", c.dataset, c.documents, c.queries);
        outln!("{}", report::markdown_table(c));
        outln!(
            "bold: best per column; p: paired randomisation test against the first strategy (10,000 permutations), † < 0.05"
        );
    }
    Ok(())
}

/// Parses `--metrics ndcg@10,mrr@10`.
pub fn parse_metrics(s: &str) -> Result<Vec<Metric>, String> {
    s.split(',')
        .filter(|p| !p.trim().is_empty())
        .map(|p| p.parse::<Metric>().map_err(|e| e.to_string()))
        .collect()
}
