//! `ckeep adapt`: a query adapter learned from the store's own documents, kept only when
//! queries held out from training find their sources better with it.

use std::path::PathBuf;
use std::process::ExitCode;

use ckeep_eval::adapt::{AdaptOptions, AdaptReport};
use clap::Args;
use serde_json::json;

use crate::commands::ingest::stage_progress;
use crate::output::{Output, outln};

#[derive(Debug, Args)]
pub struct AdaptArgs {
    /// Remove the store's adapters: searches are again the model's own, byte for byte.
    #[arg(long, conflicts_with_all = ["minutes", "queries", "seed", "dry_run"])]
    pub undo: bool,
    /// Time budget in minutes from the start: training stops after the pass that ends past it
    /// (making the pairs is never cut short).
    #[arg(long, value_name = "M")]
    pub minutes: Option<f64>,
    /// Inverse-cloze queries to train on (default: two per document or one per chunk, whichever
    /// is more, at most 20,000); each titled document gives a title query too.
    #[arg(long, value_name = "N", value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1_000_000))]
    pub queries: Option<usize>,
    /// Seed of the queries, the held-out split and the training order.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Train and judge, but leave the store as it is.
    #[arg(long)]
    pub dry_run: bool,
    /// Also write the store's own model's trained adapter to FILE (safetensors), kept or not.
    #[arg(long, value_name = "FILE")]
    pub save: Option<PathBuf>,
    /// Apply the adapter in FILE (written by --save, for the same model) without training or
    /// the guard: to use on one store what was learned on another.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["undo", "minutes", "queries", "seed", "dry_run", "save"])]
    pub load: Option<PathBuf>,
}

pub fn run(
    store: &str,
    args: &AdaptArgs,
    no_cache: bool,
    out: &Output,
) -> anyhow::Result<ExitCode> {
    let mut engine = super::open(store)?.with_model_cache(!no_cache);
    if args.undo {
        let removed = ckeep_eval::adapt::undo(&mut engine)?;
        if out.json {
            out.print_json(&json!({ "removed": removed }))?;
        } else if removed.is_empty() {
            outln!("the store has no query adapter; nothing to undo");
        } else {
            for r in &removed {
                outln!("removed the query adapter of {}", r.model);
            }
        }
        return Ok(ExitCode::SUCCESS);
    }
    let spec = engine.searcher()?.model_for(None);
    if let Some(spec) = &spec {
        engine = engine.with_embedder(super::load_model(spec, no_cache)?);
    }
    if let Some(file) = &args.load {
        let record = ckeep_eval::adapt::load(&mut engine, file)?;
        if out.json {
            out.print_json(&json!({ "loaded": record }))?;
        } else {
            outln!("the store now applies {} to queries of {}", file.display(), record.model);
        }
        return Ok(ExitCode::SUCCESS);
    }
    let opts = AdaptOptions {
        queries: args.queries,
        seed: args.seed,
        minutes: args.minutes,
        apply: !args.dry_run,
        save: args.save.clone(),
        ..AdaptOptions::default()
    };
    let bar = out.progress(0, "");
    let report = ckeep_eval::adapt::adapt(&mut engine, &opts, &mut stage_progress(&bar))?;
    bar.finish_and_clear();
    if out.json {
        out.print_json(&report)?;
    } else {
        print(&report)?;
    }
    Ok(ExitCode::SUCCESS)
}

fn print(report: &AdaptReport) -> anyhow::Result<()> {
    let made: Vec<String> = report.queries.iter().map(|(g, n)| format!("{n} {g}")).collect();
    outln!(
        "{} documents, {} queries made (seed {}), {:.0} s",
        report.documents,
        made.join(" + "),
        report.seed,
        report.seconds
    );
    outln!("model\ttrain\theld out\tloss\tnDCG@10 before\tafter\t95% interval\tverdict");
    for m in &report.models {
        let first = m.losses.first().copied().unwrap_or(f64::NAN);
        let last = m.losses.last().copied().unwrap_or(f64::NAN);
        outln!(
            "{}\t{}\t{}\t{first:.3} → {last:.3}\t{:.4}\t{:.4}\t[{:+.4}, {:+.4}]\t{}",
            m.model,
            m.train_queries,
            m.heldout_queries,
            m.before,
            m.after,
            m.margin_ci.0,
            m.margin_ci.1,
            m.verdict
        );
    }
    Ok(())
}
