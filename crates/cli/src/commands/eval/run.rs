//! `ckeep eval metrics` and `ckeep eval run`.

use std::process::ExitCode;

use crate::flags::{DatasetFlags, parse_metrics, parse_strategy, strategy_help};
use anyhow::{Context, bail};
use ckeep_engine::Strategy;
use ckeep_eval::experiment::Comparison;
use ckeep_eval::{Families, Qrels, Run, evaluate_in, report};
use clap::Args;
use std::path::PathBuf;

use super::compare::{Runs, compare, load_dataset};
use crate::output::{Output, outln};

#[derive(Debug, Args)]
pub struct EvalMetricsArgs {
    /// Relevance judgements.
    #[arg(long, value_name = "FILE")]
    pub qrels: PathBuf,
    /// The run (`qid Q0 docid rank score tag`).
    #[arg(long, value_name = "FILE")]
    pub run: PathBuf,
    /// Comma-separated metrics.
    #[arg(long, value_name = "LIST", default_value = ckeep_eval::DEFAULT_METRICS, value_parser = parse_metrics)]
    pub metrics: std::vec::Vec<ckeep_eval::Metric>,
    /// Near-copy families (`doc_id<TAB>family_id` lines) for alpha-ndcg@K and dup@K; a
    /// document not listed is its own family.
    #[arg(long, value_name = "FILE")]
    pub families: Option<PathBuf>,
    /// Also print every query's values.
    #[arg(long)]
    pub per_query: bool,
}

#[derive(Debug, Args)]
pub struct EvalRunArgs {
    #[command(flatten)]
    pub data: DatasetFlags,
    /// A strategy to compare (repeat the flag for several; the first is the baseline).
    #[arg(long = "strategy", value_name = "SPEC", required = true, value_parser = parse_strategy, long_help = strategy_help())]
    pub strategies: Vec<Strategy>,
    /// Comma-separated metrics.
    #[arg(long, value_name = "LIST", default_value = ckeep_eval::DEFAULT_METRICS, value_parser = parse_metrics)]
    pub metrics: std::vec::Vec<ckeep_eval::Metric>,
    /// Write table.md, results.json, one TREC run per strategy, and plots (metrics.svg,
    /// recall.svg) here.
    #[arg(long, value_name = "DIR")]
    pub report: Option<PathBuf>,
    /// Also state each strategy's context length in tokens of this installed model's tokenizer
    /// (`none`: words only).
    #[arg(long, value_name = "MODEL", default_value = ckeep_engine::DEFAULT_MODEL)]
    pub count_tokens: Option<String>,
}

pub(super) fn metrics(args: &EvalMetricsArgs, out: &Output) -> anyhow::Result<ExitCode> {
    if let Some(m) = args.metrics.iter().find(|m| m.needs_text()) {
        bail!(crate::UsageError(format!("{m} needs the retrieved text; use `ckeep eval run`")));
    }
    let qrels = Qrels::read(&args.qrels)?;
    let run = Run::read(&args.run)?;
    let families = args.families.as_deref().map(Families::read).transpose()?.unwrap_or_default();
    let eval = evaluate_in(&qrels, &run, &args.metrics, &families);
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

pub(super) fn run_strategies(
    args: &EvalRunArgs,
    no_cache: bool,
    out: &Output,
) -> anyhow::Result<ExitCode> {
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
