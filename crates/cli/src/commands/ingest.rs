//! What `add`, `sync`, `watch` and `extract` share: checking every input before the store is
//! touched, opening the store with its model, progress, and reporting what was written.

use anyhow::bail;
use ckeep_engine::{Engine, IngestReport, Skipped, SyncReport};
use ckeep_store::DynStore;
use ckeep_text::Loader;
use ckeep_text::load::{Checked, Source};

use crate::output::{Output, outln};

/// Inputs checked in the first pass are kept in memory up to this many bytes of text, so small
/// and medium corpora are read once; larger ones are read again in the second pass.
const KEEP_LOADED_BYTES: usize = 512 << 20;

/// Loads and checks every source before the store is touched (pass 1 of `add` and `sync`),
/// with a progress bar. A source that does not load stops the command, naming every such
/// source, unless `keep_going` skips them (with a warning each).
pub fn check_inputs(
    loader: &Loader,
    sources: Vec<Source>,
    keep_going: bool,
    verb: &str,
    out: &Output,
) -> anyhow::Result<Checked> {
    let bar = out.progress(sources.len() as u64, "checking");
    let checked = loader.check_all(sources, KEEP_LOADED_BYTES, || bar.inc(1));
    bar.finish_and_clear();
    for w in &checked.warnings {
        out.warn(w);
    }
    let failures: Vec<&ckeep_text::Error> = checked.failed.iter().map(|(_, e)| e).collect();
    refuse_or_skip(&failures, keep_going, verb, out)?;
    Ok(checked)
}

/// Inputs that did not load stop the command, every one named, unless `keep_going`, which
/// skips them with a warning each.
pub fn refuse_or_skip(
    failures: &[&ckeep_text::Error],
    keep_going: bool,
    verb: &str,
    out: &Output,
) -> anyhow::Result<()> {
    if failures.is_empty() {
        return Ok(());
    }
    let list: Vec<String> = failures.iter().map(ToString::to_string).collect();
    if !keep_going {
        let message = format!(
            "{} input(s) cannot be loaded; nothing was {verb} (use --keep-going to skip them):\n{}",
            list.len(),
            list.join("\n")
        );
        // The input's fault only when every failure is (a read error may be the machine's).
        if failures.iter().all(|e| e.is_user_error()) {
            bail!(crate::UsageError(message));
        }
        bail!(message);
    }
    for s in &list {
        out.warn(format!("skipped: {s}"));
    }
    Ok(())
}

/// The sources `--keep-going` skipped, for the JSON report.
pub fn skipped(checked: &Checked) -> Vec<Skipped> {
    checked
        .failed
        .iter()
        .map(|(source, e)| Skipped { source: source.name(), error: e.to_string() })
        .collect()
}

/// The store (created when `create`), with `analyzer` for a new one and the model `model`
/// names or the store was built with.
pub fn open_with_model(
    store: &str,
    model: Option<&str>,
    analyzer: Option<ckeep_engine::AnalyzerChoice>,
    no_cache: bool,
    create: bool,
) -> anyhow::Result<Engine<DynStore>> {
    let store =
        if create { ckeep_store::open_or_create(store)? } else { ckeep_store::open(store)? };
    let mut engine = Engine::new(store).with_model_cache(!no_cache);
    if let Some(analyzer) = analyzer {
        engine = engine.with_analyzer(analyzer);
    }
    if !no_cache {
        engine = engine.with_generation_cache(ckeep_engine::default_generation_cache());
    }
    let model = engine.searcher()?.model_for(model);
    if let Some(spec) = &model {
        engine = engine.with_embedder(super::load_model(spec, no_cache)?);
    }
    Ok(engine)
}

/// A progress callback that shows each derivation stage on `bar`.
pub fn stage_progress(bar: &indicatif::ProgressBar) -> impl FnMut(&str, u64, u64) + '_ {
    let mut stage = String::new();
    move |what: &str, done: u64, total: u64| {
        if what != stage {
            stage = what.to_string();
            bar.set_message(stage.clone());
            bar.set_length(total);
            bar.reset_eta();
        }
        bar.set_position(done);
    }
}

/// Warns when documents in an unspaced script went into a store whose analyzer cannot split
/// them (in the engine's words): nothing fails, but searching their words one by one finds
/// nothing.
pub fn warn_unspaced(report: &IngestReport, out: &Output) {
    if let Some(warning) = report.unspaced_warning() {
        out.warn(warning);
    }
}

/// One line per document a sync added, replaced and removed, each under its verb.
pub fn print_ids(report: &SyncReport, verbs: [&str; 3]) -> anyhow::Result<()> {
    let lists = [&report.added, &report.replaced, &report.removed];
    for (verb, ids) in verbs.iter().zip(lists) {
        for id in ids {
            outln!("{verb}: {id}");
        }
    }
    Ok(())
}
