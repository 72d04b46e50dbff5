//! `ckeep eval metrics` and `ckeep eval run`.

use std::process::ExitCode;

use anyhow::{Context, bail};
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
        out.print_json(&eval.to_json(args.per_query))?;
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

fn run_strategies(args: &EvalRunArgs, no_cache: bool, out: &Output) -> anyhow::Result<ExitCode> {
    let files = args.docs.as_deref().zip(args.queries.as_deref());
    let data =
        dataset::load(args.dataset.as_deref(), &args.split, files, args.relevance == "passage")?;
    if !data.skipped.is_empty() {
        let shown = data.skipped.iter().take(10).cloned().collect::<Vec<_>>().join("\n  ");
        let more = data.skipped.len().saturating_sub(10);
        let more = if more > 0 { format!("\n  … and {more} more") } else { String::new() };
        let what = format!(
            "{} document(s) with empty text, which no system can retrieve:\n  {shown}{more}",
            data.skipped.len()
        );
        if args.strict {
            bail!(crate::UsageError(format!("{} has {what}", data.name)));
        }
        out.warn(format!("left out {what}\n(--strict refuses such a dataset)"));
    }
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
    experiment::default_model(&mut strategies, args.model.as_deref());
    let loaded = ckeep_engine::ModelSet::new(!no_cache);
    let mut models = |spec: &str| loaded.get(spec).map_err(ckeep_engine::Error::Embed);
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
        out.print_json(&c.to_json(false))?;
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
