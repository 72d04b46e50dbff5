//! `ckeep watch`: the store kept in line with folders while it runs (see
//! `ckeep_engine::watch`), and the loop `ckeep serve --watch` runs beside its server.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::bail;
use ckeep_engine::{Changes, ChangesReport, Debounce, FolderWatch};
use serde::Serialize;

use super::ingest::{open_with_model, print_ids};
use crate::UsageError;
use crate::flags::IndexFlags;
use crate::output::{Output, outln};
use clap::Args;

/// One synced batch, as `--json` prints it (one line each).
#[derive(Serialize)]
pub(crate) struct BatchLine<'a> {
    /// 0 for the first sync of every root, then 1, 2, …
    pub batch: u64,
    pub added: &'a [String],
    pub replaced: &'a [String],
    pub removed: &'a [String],
    pub unchanged: u64,
    /// Files that did not load, with why; their stored documents are kept.
    pub failed: &'a [String],
    pub seconds: f64,
}

/// Checks `paths` and starts watching them (before the first sync, so nothing changed during
/// it is missed), leaving out the store's own folder if it lies inside one.
pub(crate) fn start(store: &str, paths: &[PathBuf]) -> anyhow::Result<FolderWatch> {
    if paths.iter().any(|p| p.as_os_str() == "-") {
        bail!(UsageError("watch follows files and folders, not standard input".into()));
    }
    if let Some(missing) = paths.iter().find(|p| !p.exists()) {
        bail!(UsageError(format!("{}: no such file or directory", missing.display())));
    }
    let ignored: Vec<PathBuf> =
        if ckeep_store::is_postgres_url(store) { Vec::new() } else { vec![PathBuf::from(store)] };
    Ok(FolderWatch::new(paths, &ignored)?)
}

/// Syncs every root once, then each batch of changes as it comes, until the watcher stops.
/// The first sync's failure ends the loop (a store built with another model, say); a later
/// batch's is reported to `failed` and the next batch compares everything, so no change is
/// lost while the store was busy or a model server down.
pub(crate) fn run_batches(
    watch: &FolderWatch,
    debounce: Debounce,
    mut sync: impl FnMut(&Changes) -> anyhow::Result<ChangesReport>,
    mut synced: impl FnMut(u64, &ChangesReport, Duration),
    mut failed: impl FnMut(&anyhow::Error),
) -> anyhow::Result<()> {
    let started = Instant::now();
    let first = sync(&Changes::Everything("the first sync".into()))?;
    synced(0, &first, started.elapsed());
    let mut batch = 0;
    let mut retry_all = false;
    while let Some(mut changes) = watch.next_batch(debounce, None) {
        if std::mem::take(&mut retry_all) {
            changes = Changes::Everything("the last batch failed".into());
        }
        batch += 1;
        let started = Instant::now();
        match sync(&changes) {
            Ok(report) => synced(batch, &report, started.elapsed()),
            Err(e) => {
                failed(&e);
                retry_all = true;
            }
        }
    }
    Ok(())
}

/// Whether a batch wrote or skipped anything worth a line.
pub(crate) fn eventful(report: &ChangesReport) -> bool {
    let s = &report.sync;
    !(s.added.is_empty()
        && s.replaced.is_empty()
        && s.removed.is_empty()
        && report.failed.is_empty())
}

#[cfg(feature = "watch")]
#[derive(Debug, Args)]
pub struct WatchArgs {
    /// Files or directories to follow (each must exist).
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// Remove stored documents whose file under a PATH is deleted.
    #[arg(long)]
    pub prune: bool,
    /// Seconds without a file-system event that close a batch.
    #[arg(long, value_name = "SECONDS", default_value_t = 0.2)]
    pub debounce: f64,
    #[command(flatten)]
    pub index: IndexFlags,
    /// Replace invalid UTF-8 with U+FFFD (with a warning) instead of skipping the file.
    #[arg(long)]
    pub lossy: bool,
    /// Largest document accepted, in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = ckeep_text::load::DEFAULT_MAX_DOC_BYTES)]
    pub max_doc_bytes: u64,
}

pub fn run(
    store: &str,
    args: &WatchArgs,
    no_cache: bool,
    out: &Output,
) -> anyhow::Result<ExitCode> {
    let watch = start(store, &args.paths)?;
    let loader = ckeep_text::Loader::new(ckeep_text::LoadOptions {
        lossy: args.lossy,
        max_doc_bytes: args.max_doc_bytes,
    });
    let debounce =
        Debounce { quiet: super::seconds("debounce", args.debounce)?, ..Debounce::default() };
    let mut engine =
        open_with_model(store, args.index.model().as_deref(), args.index.analyzer, no_cache, true)?;
    let chunker = engine.searcher()?.chunker_for(args.index.chunker.as_ref(), None)?;
    let roots = watch.roots();
    let names: Vec<String> = roots.iter().map(|r| r.display().to_string()).collect();
    out.note(format!("ckeep watch: first sync of {}", names.join(", ")));
    let sync = |changes: &Changes| -> anyhow::Result<ChangesReport> {
        Ok(engine.writer().sync_changes(&roots, changes, &loader, &chunker, args.prune)?)
    };
    let mut first = true;
    let synced = |batch: u64, report: &ChangesReport, took: Duration| {
        for w in &report.warnings {
            out.warn(w);
        }
        for f in &report.failed {
            out.warn(format!("skipped {f} (its stored document, if any, is kept)"));
        }
        for root in &report.missing_roots {
            out.warn(format!("{} is gone; its documents are kept", root.display()));
        }
        if (first || eventful(report))
            && let Err(e) = print_batch(batch, report, took, out)
        {
            out.warn(format!("cannot write the report: {e}"));
        }
        if std::mem::take(&mut first) {
            out.note(format!(
                "ckeep watch: watching {} (each change is synced {} ms after the last event; Ctrl-C stops)",
                names.join(", "),
                debounce.quiet.as_millis()
            ));
        }
    };
    let failed =
        |e: &anyhow::Error| out.warn(format!("a batch failed, retrying with the next: {e:#}"));
    run_batches(&watch, debounce, sync, synced, failed)?;
    Ok(ExitCode::SUCCESS)
}

fn print_batch(
    batch: u64,
    report: &ChangesReport,
    took: Duration,
    out: &Output,
) -> anyhow::Result<()> {
    let s = &report.sync;
    let seconds = took.as_secs_f64();
    if out.json {
        let line = BatchLine {
            batch,
            added: &s.added,
            replaced: &s.replaced,
            removed: &s.removed,
            unchanged: s.unchanged,
            failed: &report.failed,
            seconds,
        };
        outln!("{}", serde_json::to_string(&line)?);
        return Ok(());
    }
    print_ids(s, ["added", "replaced", "removed"])?;
    outln!(
        "{}: {} added, {} replaced, {} unchanged, {} removed in {seconds:.2} s",
        if batch == 0 { "first sync".to_string() } else { format!("batch {batch}") },
        s.added.len(),
        s.replaced.len(),
        s.unchanged,
        s.removed.len()
    );
    Ok(())
}
