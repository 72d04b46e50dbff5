//! `ckeep eval recommend`: which strategy works on this store's documents, by a test set made
//! from them (or one given), and `--apply` to make it the store's default.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::bail;
use ckeep_engine::{Engine, Strategy};
use ckeep_eval::recommend::{Applied, Recommendation, recommend};
use ckeep_eval::synth::{self, Generator, SynthOptions};
use ckeep_store::DynStore;
use clap::Args;

use super::compare::{Runs, compare, load_dataset};
use crate::UsageError;
use crate::flags::{DatasetFlags, parse_metric};
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
    /// How that set's queries are made (`ict` or `title`; see `ckeep eval synth --help`).
    #[arg(long, value_name = "NAME", default_value = "ict", value_parser = super::synth::parse_generator)]
    pub generator: Generator,
    /// Candidate strategies (`{a,b,…}` groups expand, as in `eval tune`); the store's current
    /// default is always the baseline. Default: BM25 with its classic parameters, and with a
    /// model dense, RRF fusion and linear fusion at W = 0.3, 0.5 and 0.7.
    #[arg(long = "strategy", value_name = "SPEC")]
    pub strategies: Vec<String>,
    /// The metric compared.
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
    let tmp = tempfile::Builder::new().prefix("ckeep-set-").tempdir()?;
    let set_dir = match (&args.dataset, &args.set_out) {
        (Some(dir), _) => dir.clone(),
        (None, dir) => {
            let dir =
                dir.clone().unwrap_or_else(|| tmp.path().join(format!("{}-set", args.generator)));
            let engine = engine.as_ref().expect("opened above");
            make_set(engine, &dir, args, out)?;
            dir
        }
    };
    let flags = DatasetFlags {
        dataset: Some(set_dir.clone()),
        split: args.split.clone(),
        strict: false,
        docs: None,
        queries: None,
        relevance: "doc".into(),
        work_dir: args.work_dir.clone(),
        model: None,
        precision: ckeep_embed::Precision::F32,
        fields: None,
    };
    let data = load_dataset(&flags, out)?;
    let (offered, evaluated) = ckeep_eval::recommend::candidates(
        engine.as_ref(),
        &args.strategies,
        args.model.as_deref(),
    )?;
    let metrics = [args.metric];
    let runs = Runs { metrics: &metrics, tokens: None, no_cache };
    let comparison = compare(&flags, &data, evaluated, &runs, out)?;
    let ids: Vec<&str> = data.queries.iter().map(|q| q.id.as_str()).collect();
    let rec = recommend(&comparison, &offered, &ids, usize::from(args.folds), args.seed);
    let applied = match (args.apply, engine) {
        (true, Some(engine)) => apply(engine, store, &offered, &rec, out)?,
        _ => false,
    };
    print(&rec, args, applied, out)?;
    Ok(ExitCode::SUCCESS)
}

/// Makes a synthetic set from the store's documents into `dir`.
fn make_set(
    engine: &Engine<DynStore>,
    dir: &std::path::Path,
    args: &EvalRecommendArgs,
    out: &Output,
) -> anyhow::Result<()> {
    let bar = out.progress(0, "reading documents");
    let docs = ckeep_eval::recommend::documents_of(engine, &mut |done, total| {
        bar.set_length(total);
        bar.set_position(done);
    })?;
    bar.finish_and_clear();
    let opts = SynthOptions::new(args.count as usize, args.seed, args.generator);
    let report = synth::make(&docs, &opts, dir)?;
    out.note(format!(
        "test set: {} `{}` queries from {} of {} documents ({} dropped as copies, {} as \
         boilerplate; held-out text masked)",
        report.queries,
        report.generator,
        report.documents_used,
        report.documents,
        report.near_copy_dropped,
        report.bleed_dropped
    ));
    Ok(())
}

/// Records the winner as the store's default when the set shows its gain with confidence.
fn apply(
    mut engine: Engine<DynStore>,
    store: &str,
    offered: &[Strategy],
    rec: &Recommendation,
    out: &Output,
) -> anyhow::Result<bool> {
    match ckeep_eval::recommend::apply(&mut engine, offered, rec) {
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
        Err(ckeep_engine::Error::ChunkerMismatch { stored, requested }) => {
            bail!(UsageError(format!(
                "--apply: `{}` needs chunker={requested}, and {store} is chunked with {stored}; \
                 add the documents to a new store with --chunker {requested} (re-chunking a \
                 store in place is not built yet)",
                offered[rec.winner]
            )))
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
