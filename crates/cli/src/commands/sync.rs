//! `ckeep sync`: the store brought in line with files and folders (see `ckeep_engine::sync`).

use std::process::ExitCode;
use std::time::Instant;

use anyhow::bail;
use ckeep_engine::{Engine, SyncPlan, SyncReport};
use ckeep_store::DynStore;
use serde::Serialize;

use super::ingest::{check_inputs, open_with_model, print_ids, stage_progress, warn_unspaced};
use crate::UsageError;
use crate::flags::{IndexFlags, LoadFlags};
use crate::output::{Output, human_bytes, outln};
use ckeep_engine::Skipped;
use clap::Args;
use std::path::PathBuf;

#[derive(Serialize)]
struct SyncOutput<'a> {
    store: &'a str,
    dry_run: bool,
    added: &'a [String],
    replaced: &'a [String],
    unchanged: u64,
    /// Removed (or, in a dry run, to be removed) with --prune.
    removed: &'a [String],
    /// Stored documents whose file is gone, kept because --prune was not given.
    gone_kept: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    chunks: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    vectors: Option<u64>,
    skipped: Vec<Skipped>,
    warnings: Vec<String>,
    seconds: f64,
}

#[derive(Debug, Args)]
pub struct SyncArgs {
    /// Files or directories to mirror (each must exist).
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// Remove stored documents whose file under a PATH is gone.
    #[arg(long)]
    pub prune: bool,
    /// Say what would be added, replaced and removed, and change nothing.
    #[arg(long)]
    pub dry_run: bool,
    #[command(flatten)]
    pub index: IndexFlags,
    #[command(flatten)]
    pub load: LoadFlags,
}

pub fn run(store: &str, args: &SyncArgs, no_cache: bool, out: &Output) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    if args.paths.iter().any(|p| p.as_os_str() == "-") {
        bail!(UsageError(
            "sync mirrors files and folders; use `ckeep add -` for standard input".into()
        ));
    }
    if let Some(missing) = args.paths.iter().find(|p| !p.exists()) {
        bail!(UsageError(format!("{}: no such file or directory", missing.display())));
    }
    // A missing PATH is an error, never "everything under it was deleted".
    let checked = check_inputs(&args.load.inputs(&args.paths), "synced", out)?;
    let (skipped, warnings) = (checked.skipped.clone(), checked.warnings.clone());
    let (checked, loader) = checked.into_checked();

    let mut engine = if args.dry_run {
        open_for_plan(store)?
    } else {
        open_with_model(store, args.index.model().as_deref(), args.index.analyzer, no_cache, true)?
    };
    let mut plan = engine.writer().plan_sync(&args.paths, checked, &loader)?;
    let gone_kept = if args.prune { 0 } else { std::mem::take(&mut plan.gone).len() };
    let report = if args.dry_run {
        let SyncPlan { added, replaced, unchanged, gone, .. } = plan;
        SyncReport { added, replaced, unchanged, removed: gone, ..SyncReport::default() }
    } else {
        let chunker = engine.searcher()?.chunker_for(args.index.chunker.as_ref(), None)?;
        let bar = out.progress(plan.added.len() as u64 + plan.replaced.len() as u64, "syncing");
        let report =
            engine.writer().apply_sync(plan, &loader, &chunker, &mut stage_progress(&bar))?;
        bar.finish_and_clear();
        warn_unspaced(&report.ingest, out);
        report
    };
    let seconds = started.elapsed().as_secs_f64();
    if out.json {
        let written = !args.dry_run;
        out.print_json(&SyncOutput {
            store,
            dry_run: args.dry_run,
            added: &report.added,
            replaced: &report.replaced,
            unchanged: report.unchanged,
            removed: &report.removed,
            gone_kept,
            chunks: written.then_some(report.ingest.chunks),
            vectors: written.then_some(report.ingest.vectors),
            skipped,
            warnings,
            seconds,
        })?;
        return Ok(ExitCode::SUCCESS);
    }
    print_plain(args, &report, gone_kept, seconds)?;
    Ok(ExitCode::SUCCESS)
}

/// The store as it is, for a plan only: nothing is created, and a store not made yet is an
/// empty one (everything would be added).
fn open_for_plan(store: &str) -> anyhow::Result<Engine<DynStore>> {
    match ckeep_store::open(store) {
        Ok(s) => Ok(Engine::new(s)),
        Err(ckeep_store::Error::NotFound { .. }) => {
            Ok(Engine::new(DynStore::from(ckeep_store::SqliteStore::in_memory()?)))
        }
        Err(e) => Err(e.into()),
    }
}

fn print_plain(
    args: &SyncArgs,
    report: &SyncReport,
    gone_kept: usize,
    seconds: f64,
) -> anyhow::Result<()> {
    let (add, replace, remove) = if args.dry_run {
        ("to add", "to replace", "to remove")
    } else {
        ("added", "replaced", "removed")
    };
    print_ids(report, [add, replace, remove])?;
    let written = if args.dry_run {
        String::new()
    } else {
        format!("; {} chunks ({})", report.ingest.chunks, human_bytes(report.ingest.bytes))
    };
    outln!(
        "{}{} {add}, {} {replace}, {} unchanged, {} {remove}{written} in {seconds:.2} s",
        if args.dry_run { "dry run, nothing changed: " } else { "" },
        report.added.len(),
        report.replaced.len(),
        report.unchanged,
        report.removed.len()
    );
    if gone_kept > 0 {
        outln!(
            "{gone_kept} stored document(s) whose file is gone were kept (--prune removes them)"
        );
    }
    Ok(())
}
