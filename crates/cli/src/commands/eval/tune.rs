//! `ckeep eval tune`: strategy parameters chosen by k-fold cross-validation over queries (see
//! `ckeep_eval::tune`), reported out of fold.

use std::process::ExitCode;

use anyhow::bail;
use ckeep_engine::Strategy;
use ckeep_eval::experiment::Comparison;
use ckeep_eval::tune::{FoldChoice, Tuning, cross_validate, expand_grid};
use ckeep_eval::{Metric, paired_randomization};
use serde::Serialize;

use super::compare::{Runs, compare, load_dataset};
use crate::UsageError;
use crate::flags::{DatasetFlags, parse_metric};
use crate::output::{Output, outln};
use clap::Args;

/// Permutations of the test against the baseline, as `eval run` uses.
const ROUNDS: usize = 10_000;

#[derive(Serialize)]
struct Candidate<'a> {
    strategy: &'a str,
    /// Mean over all queries: chosen on them, so optimistic.
    mean: f64,
}

#[derive(Serialize)]
struct Fold<'a> {
    strategy: &'a str,
    #[serde(flatten)]
    choice: &'a FoldChoice,
}

#[derive(Serialize)]
struct TuneOutput<'a> {
    dataset: &'a str,
    queries: usize,
    metric: String,
    folds: Vec<Fold<'a>>,
    seed: u64,
    /// The figure to report: every query scored by parameters chosen without it.
    out_of_fold: f64,
    baseline: Candidate<'a>,
    /// p of the out-of-fold per-query values against the baseline's.
    p_vs_baseline: f64,
    /// The best candidate over all queries: chosen on the queries it is scored on.
    in_sample_best: Candidate<'a>,
    candidates: Vec<Candidate<'a>>,
}

#[derive(Debug, Args)]
pub struct EvalTuneArgs {
    #[command(flatten)]
    pub data: DatasetFlags,
    /// Candidate strategies: `{a,b,…}` groups expand to every combination
    /// (`mode=hybrid:linear={0.3,0.5,0.7}`); repeat the flag for more. The first candidate is
    /// the baseline the tuned score is tested against.
    #[arg(long = "strategy", value_name = "SPEC", required = true)]
    pub strategies: Vec<String>,
    /// The objective: the metric whose mean each fold maximises.
    #[arg(long, value_name = "METRIC", default_value = "ndcg@10", value_parser = parse_metric)]
    pub metric: ckeep_eval::Metric,
    /// Number of folds the queries are dealt into.
    #[arg(long, value_name = "K", default_value_t = 5, value_parser = clap::value_parser!(u16).range(2..=1000))]
    pub folds: u16,
    /// Seed of the shuffle that deals queries into folds.
    #[arg(long, value_name = "N", default_value_t = 42)]
    pub seed: u64,
}

pub fn run(args: &EvalTuneArgs, no_cache: bool, out: &Output) -> anyhow::Result<ExitCode> {
    let strategies = candidates(&args.strategies)?;
    let data = load_dataset(&args.data, out)?;
    let metrics = [args.metric];
    let runs = Runs { metrics: &metrics, tokens: None, no_cache };
    let comparison = compare(&args.data, &data, strategies, &runs, out)?;
    let ids: Vec<&str> = data.queries.iter().map(|q| q.id.as_str()).collect();
    let values = ckeep_eval::tune::per_query(&comparison, &ids);
    let tuning = cross_validate(&values, usize::from(args.folds), args.seed);
    print(args, &comparison, &values, &tuning, out)?;
    Ok(ExitCode::SUCCESS)
}

/// Every strategy the specs expand to, parsed, without repeats.
fn candidates(specs: &[String]) -> anyhow::Result<Vec<Strategy>> {
    let mut out: Vec<Strategy> = Vec::new();
    for spec in specs {
        for expanded in expand_grid(spec).map_err(UsageError)? {
            let s: Strategy = expanded.parse().map_err(|e: ckeep_engine::Error| {
                UsageError(format!("--strategy {expanded}: {e}"))
            })?;
            if !out.contains(&s) {
                out.push(s);
            }
        }
    }
    if out.len() > ckeep_eval::tune::MAX_CANDIDATES {
        bail!(UsageError(format!(
            "{} candidates; at most {} are run",
            out.len(),
            ckeep_eval::tune::MAX_CANDIDATES
        )));
    }
    Ok(out)
}

fn mean(v: &[f64]) -> f64 {
    if v.is_empty() { 0.0 } else { v.iter().sum::<f64>() / v.len() as f64 }
}

fn print(
    args: &EvalTuneArgs,
    c: &Comparison,
    values: &[Vec<f64>],
    tuning: &Tuning,
    out: &Output,
) -> anyhow::Result<()> {
    let name = |i: usize| c.strategies[i].strategy.as_str();
    let means: Vec<f64> = values.iter().map(|v| mean(v)).collect();
    let best = (0..means.len()).fold(0, |b, i| if means[i] > means[b] { i } else { b });
    let p = paired_randomization(&tuning.out_of_fold, &values[0], ROUNDS);
    let metric: &Metric = &args.metric;
    if out.json {
        out.print_json(&TuneOutput {
            dataset: &c.dataset,
            queries: c.queries,
            metric: metric.to_string(),
            folds: tuning
                .folds
                .iter()
                .map(|f| Fold { strategy: name(f.chosen), choice: f })
                .collect(),
            seed: args.seed,
            out_of_fold: tuning.mean,
            baseline: Candidate { strategy: name(0), mean: means[0] },
            p_vs_baseline: p,
            in_sample_best: Candidate { strategy: name(best), mean: means[best] },
            candidates: (0..means.len())
                .map(|i| Candidate { strategy: name(i), mean: means[i] })
                .collect(),
        })?;
        return Ok(());
    }
    outln!(
        "{} — {} queries, {} candidates, {} folds (seed {}), objective {metric}",
        c.dataset,
        c.queries,
        values.len(),
        tuning.folds.len(),
        args.seed
    );
    outln!("| fold | queries | chosen on the other folds | train | held out |");
    outln!("|---|---|---|---|---|");
    for (i, f) in tuning.folds.iter().enumerate() {
        outln!(
            "| {} | {} | {} | {:.4} | {:.4} |",
            i + 1,
            f.queries,
            name(f.chosen),
            f.train_mean,
            f.held_out_mean
        );
    }
    outln!(
        "out-of-fold {metric}: {:.4} (every query scored by parameters chosen without it)",
        tuning.mean
    );
    outln!("baseline {}: {:.4}; out-of-fold vs baseline p = {p:.4}", name(0), means[0]);
    outln!(
        "best over all queries (optimistic: chosen on the queries it is scored on): {} {:.4}",
        name(best),
        means[best]
    );
    Ok(())
}
