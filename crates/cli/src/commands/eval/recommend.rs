//! `ckeep eval recommend`: which strategy works on this store's documents, by a test set made
//! from them (or one given), and `--apply` to make it the store's default.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::bail;
use ckeep_engine::{Engine, Strategy};
use ckeep_eval::recommend::{Applied, RecommendRequest, Recommendation, TestSet};
use ckeep_eval::synth::{Generator, SynthOptions};
use ckeep_store::DynStore;
use clap::Args;

use crate::UsageError;
use crate::commands::ingest::stage_progress;
use crate::flags::parse_metric;
use crate::output::{Output, outln};

#[derive(Debug, Args)]
pub struct EvalRecommendArgs {
    /// A test set to compare on instead of one made from the store's documents: any layout
    /// `eval run --dataset` reads, such as a directory `eval synth` wrote.
    #[arg(long, value_name = "DIR")]
    pub dataset: Option<PathBuf>,
    /// The qrels split of --dataset.
    #[arg(long, default_value = "test", requires = "dataset")]
    pub split: String,
    /// Keep the test set made from the store here (default: a temporary directory).
    #[arg(long, value_name = "DIR", conflicts_with = "dataset")]
    pub set_out: Option<PathBuf>,
    /// Queries of the set made from the store.
    #[arg(long, value_name = "N", default_value_t = 200, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub count: u32,
    /// Seed of that set's sampling, and of the folds.
    #[arg(long, value_name = "N", default_value_t = 42)]
    pub seed: u64,
    /// How that set's queries are made (`ict` or `title`; see `ckeep eval synth --help`). A set
    /// written by a language model is made once with `eval synth --generator llm --out DIR`
    /// and compared with `--dataset DIR`.
    #[arg(long, value_name = "NAME", default_value = "ict", value_parser = parse_generator)]
    pub generator: Generator,
    /// Candidate strategies (`{a,b,…}` groups expand, as in `eval tune`); the store's current
    /// default is always the baseline. Default: BM25 with its classic parameters, and with a
    /// model dense, RRF fusion and linear fusion at W = 0.3, 0.5 and 0.7.
    #[arg(long = "strategy", value_name = "SPEC")]
    pub strategies: Vec<String>,
    /// The metric compared (the metrics are listed in `ckeep eval run --help`).
    #[arg(long, value_name = "METRIC", default_value = "ndcg@10", value_parser = parse_metric)]
    pub metric: ckeep_eval::Metric,
    /// Folds of the out-of-fold estimate.
    #[arg(long, value_name = "K", default_value_t = 5, value_parser = clap::value_parser!(u16).range(2..=1000))]
    pub folds: u16,
    /// The model of dense and hybrid candidates (default: the store's).
    #[arg(long, value_name = "MODEL")]
    pub model: Option<String>,
    /// Keep the evaluation indexes here (default: a temporary directory).
    #[arg(long, value_name = "DIR|URL")]
    pub work_dir: Option<String>,
    /// Make the recommended strategy the store's default, which `search`, `serve`, Python and
    /// MCP use when the caller names no strategy (an explicit strategy or flag still wins).
    /// Only a gain the set shows with confidence (its 95 % interval above zero) is applied.
    #[arg(long)]
    pub apply: bool,
    /// With --apply, when the winner needs another chunker: re-chunk the store (its documents
    /// are added to a new store beside it with that chunker, vectors and summaries coming from
    /// the caches, which then replaces it in one step). A SQLite store, open nowhere else.
    #[arg(long, requires = "apply")]
    pub rechunk: bool,
}

/// `ict` or `title`: a set made here is made again on every run, which a language model's
/// minutes per set do not suit.
fn parse_generator(s: &str) -> Result<Generator, String> {
    match super::synth::parse_generator(s)? {
        Generator::Llm => {
            Err("recommend makes `ict` or `title` sets; make an `llm` set once with \
             `ckeep eval synth --generator llm --out DIR`, then compare on it with --dataset DIR"
                .into())
        }
        g @ (Generator::Ict | Generator::Title) => Ok(g),
    }
}

pub fn run(
    store: &str,
    args: &EvalRecommendArgs,
    no_cache: bool,
    out: &Output,
) -> anyhow::Result<ExitCode> {
    let engine = match ckeep_store::open(store) {
        Ok(s) => Some(Engine::new(s)),
        // Without a store, a given set is still compared from the built-in default.
        Err(e) if e.is_user_error() && args.dataset.is_some() && !args.apply => None,
        Err(e) => return Err(e.into()),
    };
    let set = match &args.dataset {
        Some(dir) => TestSet::Given { dir: dir.clone(), split: args.split.clone() },
        None => TestSet::Synthetic {
            options: SynthOptions::new(args.count as usize, args.seed, args.generator),
            keep: args.set_out.clone(),
        },
    };
    let request = RecommendRequest {
        set,
        strategies: args.strategies.clone(),
        metric: args.metric,
        folds: usize::from(args.folds),
        seed: args.seed,
        model: args.model.clone(),
        work_dir: args.work_dir.clone(),
    };
    let bar = out.progress(0, "");
    let mut progress = stage_progress(&bar);
    let plan = request.plan(engine.as_ref(), &mut progress)?;
    if let Some(shortfall) = plan.made().and_then(ckeep_eval::synth::SynthReport::shortfall) {
        out.warn(shortfall);
    }
    if let Some(made) = plan.made() {
        out.note(format!(
            "test set: {} `{}` queries from {} of {} documents ({} dropped as copies, {} as \
             boilerplate; held-out text masked)",
            made.queries,
            made.generator,
            made.documents_used,
            made.documents,
            made.near_copy_dropped,
            made.bleed_dropped
        ));
    }
    let data = plan.dataset();
    out.note(format!(
        "{}: {} documents, {} queries, {} strategies",
        data.name,
        data.docs.len(),
        data.queries.len(),
        plan.offered().len()
    ));
    let loaded = ckeep_engine::ModelSet::new(!no_cache);
    let mut models = |spec: &str| loaded.get(spec).map_err(ckeep_engine::Error::Embed);
    let rec = plan.run(&mut models, &mut progress)?;
    drop(progress);
    bar.finish_and_clear();
    let offered = plan.offered();
    let applied = match (args.apply, engine) {
        (true, Some(engine)) => apply(engine, store, offered, &rec, args.rechunk, out)?,
        _ => false,
    };
    print(&rec, args, applied, out)?;
    Ok(ExitCode::SUCCESS)
}

/// Records the winner as the store's default when the set shows its gain with confidence.
fn apply(
    mut engine: Engine<DynStore>,
    store: &str,
    offered: &[Strategy],
    rec: &Recommendation,
    rechunk: bool,
    out: &Output,
) -> anyhow::Result<bool> {
    let applied = if rechunk {
        let bar = out.progress(0, "re-chunking");
        let applied = ckeep_eval::recommend::apply_rechunked(
            engine,
            store,
            offered,
            rec,
            &mut stage_progress(&bar),
        );
        bar.finish_and_clear();
        applied
    } else {
        ckeep_eval::recommend::apply(&mut engine, offered, rec)
    };
    match applied {
        Ok(Applied::Applied) => Ok(true),
        Ok(Applied::AlreadyDefault) => {
            out.note("--apply: the store's default is already the best candidate; nothing changed");
            Ok(false)
        }
        Ok(Applied::NotConfident) => {
            out.warn(
                "--apply: nothing changed: no candidate beats the store's default with \
                 confidence on this set (every 95 % interval includes zero)",
            );
            Ok(false)
        }
        Err(ckeep_engine::Error::ChunkerMismatch { stored, requested, .. }) => {
            let why =
                ckeep_eval::recommend::rechunk_needed(&offered[rec.winner], &stored, &requested);
            bail!(UsageError(format!("--apply: {why}")))
        }
        Err(e) => Err(e.into()),
    }
}

fn print(
    rec: &Recommendation,
    args: &EvalRecommendArgs,
    applied: bool,
    out: &Output,
) -> anyhow::Result<()> {
    if out.json {
        out.print_json(&serde_json::json!({ "recommendation": rec, "applied": applied }))?;
        return Ok(());
    }
    let metric = &rec.metric;
    outln!(
        "{} — {} queries; the first row is the store's current default",
        rec.dataset,
        rec.queries
    );
    outln!("| strategy | {metric} | vs default [95 % interval] | p | ms/query | index MB |");
    outln!("|---|---|---|---|---|---|");
    for (i, c) in rec.candidates.iter().enumerate() {
        let mark = if i == rec.winner { " **←**" } else { "" };
        outln!(
            "| `{}`{mark} | {:.4} | {:+.4} [{:+.4}, {:+.4}] | {:.4} | {:.1} | {:.1} |",
            c.strategy,
            c.mean,
            c.margin,
            c.margin_ci.0,
            c.margin_ci.1,
            c.p_value,
            c.query_ms,
            c.index_bytes as f64 / 1e6
        );
    }
    let best = rec.best();
    outln!(
        "recommended: `{}` ({metric} {:.4}; {:+.4} over the default, {})",
        best.strategy,
        best.mean,
        best.margin,
        if rec.confident {
            "a gain this set shows with confidence"
        } else {
            "not a confident gain"
        }
    );
    outln!(
        "choosing by this set is worth {:.4} on queries it was not made on ({} folds)",
        rec.out_of_fold,
        rec.folds
    );
    if applied {
        outln!("applied: searches that name no strategy now use `{}`", best.strategy);
    } else if !args.apply && rec.confident {
        outln!("run again with --apply to make it the store's default");
    }
    Ok(())
}
