//! `ckeep adapt`: a query adapter learned from the store's own documents, without judgments.
//!
//! `eval synth`'s generators make queries from the documents (inverse cloze sentences and
//! titles); each query's source passage is embedded with the query's text masked out, and hard
//! negatives are mined by the store's dense and BM25 searches ([`pairs`]). A linear map of the
//! query vectors is trained on the CPU ([`train`]); the stored vectors are untouched. Queries
//! from a fifth of the documents are held out, and the map becomes the store's only when it
//! ranks their sources better than the model alone with confidence (the 95 % paired bootstrap
//! interval of the nDCG@10 difference above zero, [`guard`]), as `eval recommend --apply`
//! guards a default strategy.

pub mod guard;
pub mod pairs;

use std::time::{Duration, Instant};

use ckeep_core::Document;
use ckeep_engine::{AdaptableModel, Engine};
use ckeep_store::{AdapterRecord, StoreWrite};
use serde::Serialize;

use crate::Error;
use crate::significance::{SplitMix64, paired_bootstrap_ci};
use crate::synth::{Generator, SynthOptions, SynthQuery, synthesize};
use ckeep_engine::adapter_training as train;
pub use ckeep_engine::adapter_training::TrainOptions;

/// Bootstrap resamples of the guard's interval.
const BOOTSTRAP_ROUNDS: usize = 2_000;

/// Fewest held-out queries the guard judges on.
pub const MIN_HELDOUT: usize = 30;

/// Inverse-cloze queries made per document unless told otherwise (or one per leaf chunk, if
/// that is more: long documents hold many passages).
const QUERIES_PER_DOCUMENT: usize = 2;

/// Most inverse-cloze queries made unless told otherwise.
const MAX_QUERIES: usize = 20_000;

/// What [`adapt`] does.
#[derive(Debug, Clone)]
pub struct AdaptOptions {
    /// Inverse-cloze queries to make (`None`: two per document or one per leaf chunk, whichever
    /// is more, at most 20,000); titles give one more per titled document.
    pub queries: Option<usize>,
    /// Seed of the queries, the held-out split and the training order.
    pub seed: u64,
    /// Share of documents whose queries are held out for the guard.
    pub heldout: f64,
    /// Hard negatives per training query.
    pub negatives: usize,
    /// Training of each model; its deadline is set from `minutes`.
    pub train: TrainOptions,
    /// Minutes from the start after which training stops at the end of a pass, over all models
    /// (`None`: every pass of `train`); making the pairs is never cut short.
    pub minutes: Option<f64>,
    /// Apply an adapter the guard accepts (`false`: report only).
    pub apply: bool,
    /// Where to write the store's own model's trained adapter (safetensors), kept or not.
    pub save: Option<std::path::PathBuf>,
}

impl Default for AdaptOptions {
    fn default() -> Self {
        Self {
            queries: None,
            seed: 42,
            heldout: 0.2,
            negatives: 8,
            train: TrainOptions::default(),
            minutes: None,
            apply: true,
            save: None,
        }
    }
}

/// What adapting one model gave.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ModelAdapted {
    /// The model.
    pub model: String,
    /// The stored vectors it was trained against.
    pub repr: String,
    /// Training queries.
    pub train_queries: usize,
    /// Held-out queries the guard judged on.
    pub heldout_queries: usize,
    /// Mean training loss before training, then after each pass.
    pub losses: Vec<f64>,
    /// Held-out nDCG@10 of the model alone.
    pub before: f64,
    /// Held-out nDCG@10 with the adapter.
    pub after: f64,
    /// 95 % paired bootstrap interval of `after − before`.
    pub margin_ci: (f64, f64),
    /// Whether the store now applies it.
    pub applied: bool,
    /// Why it was applied or not, in words.
    pub verdict: String,
}

/// Queries made, by generator.
pub type Made = Vec<(String, usize)>;

/// What `ckeep adapt` did.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct AdaptReport {
    /// Documents in the store.
    pub documents: usize,
    /// Queries made from them, by generator.
    pub queries: Made,
    /// The seed.
    pub seed: u64,
    /// Each model of the store.
    pub models: Vec<ModelAdapted>,
    /// Wall-clock seconds.
    pub seconds: f64,
}

/// Adapts every model of the store (see the module docs); `progress(stage, done, total)`.
pub fn adapt<S: StoreWrite>(
    engine: &mut Engine<S>,
    opts: &AdaptOptions,
    progress: &mut dyn FnMut(&str, u64, u64),
) -> Result<AdaptReport, Error> {
    if let Some(m) = opts.minutes.filter(|m| !(m.is_finite() && *m > 0.0)) {
        return Err(Error::Invalid(format!(
            "the time budget must be a positive number of minutes, not {m}"
        )));
    }
    let started = Instant::now();
    let models = engine.searcher()?.adaptable_models()?;
    if models.is_empty() {
        return Err(Error::Invalid(
            "the store has no vectors to adapt a model to: add them with `ckeep add --model NAME` (no inputs)"
                .into(),
        ));
    }
    let docs = crate::recommend::documents_of(engine, &mut |d, t| {
        progress("reading documents", d, t);
    })?;
    let leaves = ckeep_store::StoreRead::stats(engine.store())
        .map_err(ckeep_engine::Error::from)?
        .leaf_chunks;
    let leaves = usize::try_from(leaves).unwrap_or(usize::MAX);
    let (queries, made) = training_queries(&docs, leaves, opts)?;
    let deadline = opts.minutes.map(|m| started + Duration::from_secs_f64(m * 60.0));
    let mut report = AdaptReport {
        documents: docs.len(),
        queries: made,
        seed: opts.seed,
        models: Vec::new(),
        seconds: 0.0,
    };
    for (i, model) in models.iter().enumerate() {
        let save = opts.save.as_deref().filter(|_| i == 0);
        let run = Training { docs: &docs, queries: &queries, opts, deadline };
        let adapted = adapt_model(engine, model, &run, save, progress)?;
        report.models.push(adapted);
    }
    report.seconds = started.elapsed().as_secs_f64();
    Ok(report)
}

/// Makes the adapter in the safetensors file `path` (`ckeep adapt --save`) the store's, for
/// the model it names (its fingerprint), else the store's own model, without the guard: the
/// user chose it.
pub fn load<S: StoreWrite>(
    engine: &mut Engine<S>,
    path: &std::path::Path,
) -> Result<AdapterRecord, Error> {
    let bytes = std::fs::read(path)
        .map_err(|source| Error::Io { path: path.display().to_string(), source })?;
    let adapter = ckeep_engine::QueryAdapter::from_safetensors(&bytes)?;
    let models = engine.searcher()?.adaptable_models()?;
    let fingerprint = ckeep_engine::QueryAdapter::fingerprint_in(&bytes);
    let model = match &fingerprint {
        Some(f) => models.iter().find(|m| &m.fingerprint == f).ok_or_else(|| {
            Error::Invalid(format!(
                "{} was trained for a model whose vectors the store does not hold",
                path.display()
            ))
        })?,
        None => models.first().ok_or_else(|| {
            Error::Invalid("the store has no vectors: it was built without a model".into())
        })?,
    };
    let dim = model.embedder.info().dim;
    if adapter.dim() != dim {
        return Err(Error::Invalid(format!(
            "{} maps {} values and {} gives {dim}",
            path.display(),
            adapter.dim(),
            model.name
        )));
    }
    let from = format!("loaded from {}", path.display());
    Ok(engine.writer().set_adapter(&model.name, &model.fingerprint, &adapter, &from)?)
}

/// Removes the store's adapters (`ckeep adapt --undo`): its searches are again the model's own.
pub fn undo<S: StoreWrite>(engine: &mut Engine<S>) -> Result<Vec<AdapterRecord>, Error> {
    Ok(engine.writer().remove_adapters()?)
}

/// Inverse-cloze queries, and title queries where documents have titles.
fn training_queries(
    docs: &[Document],
    leaves: usize,
    opts: &AdaptOptions,
) -> Result<(Vec<SynthQuery>, Made), Error> {
    let count =
        opts.queries.unwrap_or((docs.len() * QUERIES_PER_DOCUMENT).max(leaves).min(MAX_QUERIES));
    let (mut queries, _) = synthesize(docs, &SynthOptions::new(count, opts.seed, Generator::Ict))?;
    let mut made = vec![(Generator::Ict.to_string(), queries.len())];
    let titled = docs.iter().filter(|d| !d.title.trim().is_empty()).count();
    if titled > 0 {
        let titles = SynthOptions::new(titled, opts.seed, Generator::Title);
        // A corpus whose titles all fail the checks still trains on its sentences.
        if let Ok((more, _)) = synthesize(docs, &titles) {
            made.push((Generator::Title.to_string(), more.len()));
            queries.extend(more);
        }
    }
    Ok((queries, made))
}

/// What every model is trained from.
#[derive(Clone, Copy)]
struct Training<'a> {
    docs: &'a [Document],
    queries: &'a [SynthQuery],
    opts: &'a AdaptOptions,
    deadline: Option<Instant>,
}

/// Trains, judges and (if the guard accepts) applies one model's adapter.
fn adapt_model<S: StoreWrite>(
    engine: &mut Engine<S>,
    model: &AdaptableModel,
    run: &Training<'_>,
    save: Option<&std::path::Path>,
    progress: &mut dyn FnMut(&str, u64, u64),
) -> Result<ModelAdapted, Error> {
    let Training { docs, queries, opts, deadline } = *run;
    let heldout = |id: &str| held_out(id, opts.seed, opts.heldout);
    let sources = pairs::sources(engine.store(), docs, queries, model.title_in_front, &heldout)?;
    let made = pairs::pairs(engine, model, docs, &sources, opts.negatives, progress)?;
    let before = guard::ndcg(None, &made.heldout, &made.corpus);
    let mut train_opts = opts.train.clone();
    train_opts.seed = opts.seed;
    train_opts.deadline = deadline;
    let stage = format!("training {}", model.name);
    let passes = train_opts.epochs as u64;
    progress(&stage, 0, passes);
    let trained =
        train::train(made.corpus.dim, &made.train, &made.corpus.rows, &train_opts, &mut |p, _| {
            progress(&stage, p as u64, passes);
        });
    let after = guard::ndcg(Some(&trained.adapter), &made.heldout, &made.corpus);
    let ci = paired_bootstrap_ci(&before, &after, BOOTSTRAP_ROUNDS);
    let (b, a) = (guard::mean(&before), guard::mean(&after));
    let mut out = ModelAdapted {
        model: model.name.clone(),
        repr: model.repr.clone(),
        train_queries: made.train.len(),
        heldout_queries: made.heldout.len(),
        losses: trained.losses,
        before: b,
        after: a,
        margin_ci: ci,
        applied: false,
        verdict: String::new(),
    };
    if let Some(path) = save {
        let metadata = std::collections::HashMap::from([
            ("model".to_string(), model.name.clone()),
            ("fingerprint".to_string(), model.fingerprint.clone()),
        ]);
        let bytes = trained.adapter.to_safetensors(metadata)?;
        std::fs::write(path, bytes)
            .map_err(|source| Error::Io { path: path.display().to_string(), source })?;
    }
    out.verdict = if made.heldout.len() < MIN_HELDOUT {
        format!(
            "not applied: {} held-out queries are too few to judge it (at least {MIN_HELDOUT})",
            made.heldout.len()
        )
    } else if ci.0 <= 0.0 {
        format!(
            "not applied: no confident gain on held-out queries ({:+.4} [{:+.4}, {:+.4}])",
            a - b,
            ci.0,
            ci.1
        )
    } else if !opts.apply {
        format!("would apply: {:+.4} [{:+.4}, {:+.4}] (not applied: --dry-run)", a - b, ci.0, ci.1)
    } else {
        let from = format!(
            "ckeep adapt (seed {}, {} training queries): held-out nDCG@10 {b:.4} → {a:.4}, {:+.4} [{:+.4}, {:+.4}]",
            opts.seed,
            made.train.len(),
            a - b,
            ci.0,
            ci.1
        );
        engine.writer().set_adapter(&model.name, &model.fingerprint, &trained.adapter, &from)?;
        out.applied = true;
        format!("applied: {:+.4} [{:+.4}, {:+.4}] on held-out queries", a - b, ci.0, ci.1)
    };
    let manifest =
        ckeep_store::StoreRead::manifest(engine.store()).map_err(ckeep_engine::Error::from)?;
    if !out.applied && manifest.adapter_for(&model.fingerprint).is_some() {
        out.verdict.push_str("; the store keeps the map it had (`--undo` removes it)");
    }
    Ok(out)
}

/// Whether document `id`'s queries are held out: a seeded hash of the id, so the split is the
/// same for every model and every run with the seed.
fn held_out(id: &str, seed: u64, share: f64) -> bool {
    let mut h = SplitMix64(seed ^ 0x0ada_9700);
    let mut x = h.next();
    for b in id.bytes() {
        x = (x ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    let mut mix = SplitMix64(x);
    (mix.next() >> 11) as f64 / (1u64 << 53) as f64 <= share
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_held_out_split_is_seeded_and_near_its_share() {
        let ids: Vec<String> = (0..5_000).map(|i| format!("doc{i}")).collect();
        let held = ids.iter().filter(|id| held_out(id, 42, 0.2)).count();
        assert!((900..1_100).contains(&held), "{held}");
        assert_eq!(held, ids.iter().filter(|id| held_out(id, 42, 0.2)).count());
        let other: Vec<bool> = ids.iter().map(|id| held_out(id, 7, 0.2)).collect();
        let same: Vec<bool> = ids.iter().map(|id| held_out(id, 42, 0.2)).collect();
        assert_ne!(other, same);
    }
}
