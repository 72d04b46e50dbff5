//! `ckeep eval metrics` and `ckeep eval run`.

use std::process::ExitCode;

use anyhow::{Context, bail};
use ckeep_eval::dataset::Dataset;
use ckeep_eval::experiment::Comparison;
use ckeep_eval::{Metric, Qrels, Run, dataset, evaluate, experiment, report};

use crate::args::{DatasetFlags, EvalCommand, EvalMetricsArgs, EvalRunArgs};
use crate::output::{Output, outln};

pub fn run(cmd: &EvalCommand, no_cache: bool, out: &Output) -> anyhow::Result<ExitCode> {
    match cmd {
        EvalCommand::Metrics(a) => metrics(a, out),
        EvalCommand::Run(a) => run_strategies(a, no_cache, out),
        EvalCommand::Tune(a) => super::tune::run(a, no_cache, out),
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
    let data = load_dataset(&args.data, out)?;
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
    let runs = Runs { metrics: &args.metrics, tokens: tokens.as_ref(), no_cache };
    let comparison = compare(&args.data, &data, args.strategies.clone(), &runs, out)?;
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

/// The dataset `flags` name, with its left-out documents warned about (or, with `--strict`,
/// refused) and at least one judged query.
pub(crate) fn load_dataset(flags: &DatasetFlags, out: &Output) -> anyhow::Result<Dataset> {
    let files = flags.docs.as_deref().zip(flags.queries.as_deref());
    let mut data =
        dataset::load(flags.dataset.as_deref(), &flags.split, files, flags.relevance == "passage")?;
    if let Some(fields) = flags.fields {
        data.fields = fields;
    }
    if !data.skipped.is_empty() {
        let shown = data.skipped.iter().take(10).cloned().collect::<Vec<_>>().join("\n  ");
        let more = data.skipped.len().saturating_sub(10);
        let more = if more > 0 { format!("\n  … and {more} more") } else { String::new() };
        let what = format!(
            "{} document(s) with empty text, which no system can retrieve:\n  {shown}{more}",
            data.skipped.len()
        );
        if flags.strict {
            bail!(crate::UsageError(format!("{} has {what}", data.name)));
        }
        out.warn(format!("left out {what}\n(--strict refuses such a dataset)"));
    }
    if data.queries.is_empty() {
        bail!("{} has no judged queries", data.name);
    }
    Ok(data)
}

/// How the strategies of a comparison are run.
pub(crate) struct Runs<'a> {
    pub metrics: &'a [Metric],
    pub tokens: Option<&'a ckeep_embed::TokenCounter>,
    pub no_cache: bool,
}

/// Runs `strategies` on `data` (indexes in `--work-dir`, else a temporary directory), with a
/// progress bar.
pub(crate) fn compare(
    flags: &DatasetFlags,
    data: &Dataset,
    mut strategies: Vec<ckeep_engine::Strategy>,
    runs: &Runs<'_>,
    out: &Output,
) -> anyhow::Result<Comparison> {
    out.note(format!(
        "{}: {} documents, {} queries, {} strategies; fields {} unless a strategy names repr=",
        data.name,
        data.docs.len(),
        data.queries.len(),
        strategies.len(),
        if data.fields == ckeep_engine::Fields::TitleText { "title,text" } else { "text" }
    ));
    // Evaluation indexes go to a temporary directory (removed on exit) unless --work-dir.
    let tmp = tempfile::Builder::new().prefix("ckeep-eval-").tempdir()?;
    let tmp_path = tmp.path().display().to_string();
    let work: &str = flags.work_dir.as_deref().unwrap_or(&tmp_path);
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
    let model = flags.model.as_deref().map(|m| flags.precision.apply(m));
    experiment::default_model(&mut strategies, model.as_deref());
    let loaded = ckeep_engine::ModelSet::new(!runs.no_cache);
    let mut models = |spec: &str| loaded.get(spec).map_err(ckeep_engine::Error::Embed);
    let comparison = experiment::run(
        data,
        &strategies,
        runs.metrics,
        work,
        &mut models,
        runs.tokens,
        &mut progress,
    )?;
    bar.finish_and_clear();
    Ok(comparison)
}
