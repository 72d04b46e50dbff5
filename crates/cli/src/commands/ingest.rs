//! What `add`, `sync`, `watch` and `extract` share: checking every input before the store is
//! touched, opening the store with its model, progress, and reporting what was written.

use ckeep_engine::{CheckedInputs, Engine, IngestReport, Inputs, SyncReport};
use ckeep_store::DynStore;

use crate::output::{Output, outln};

/// Loads and checks every input before the store is touched (pass 1 of `add` and `sync`, by
/// the engine's rules: [`Inputs::check`]), with a progress bar, and warns of what the loaders
/// warned of and what `--keep-going` skipped.
pub fn check_inputs(inputs: &Inputs, verb: &str, out: &Output) -> anyhow::Result<CheckedInputs> {
    let sources = inputs.sources()?;
    let bar = out.progress(sources.len() as u64, "checking");
    let checked = inputs.check_sources(sources, verb, || bar.inc(1))?;
    bar.finish_and_clear();
    for w in &checked.warnings {
        out.warn(w);
    }
    for s in &checked.skipped {
        out.warn(format!("skipped: {}", s.error));
    }
    Ok(checked)
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
    // A new store's model is loaded before the store is created, so a model that is not there
    // leaves no empty store behind.
    let early = match model {
        Some(spec) if create && ckeep_store::open(store).is_err() => {
            Some(super::load_model(spec, no_cache)?)
        }
        _ => None,
    };
    let store =
        if create { ckeep_store::open_or_create(store)? } else { ckeep_store::open(store)? };
    let mut engine = Engine::new(store).with_model_cache(!no_cache);
    if let Some(embedder) = early {
        engine = engine.with_embedder(embedder);
    }
    if let Some(analyzer) = analyzer {
        engine = engine.with_analyzer(analyzer);
    }
    if !no_cache {
        engine = engine.with_generation_cache(ckeep_engine::default_generation_cache());
    }
    let model = engine.searcher()?.model_for(model);
    if let Some(spec) = model.as_ref().filter(|_| engine.embedder().is_none()) {
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
