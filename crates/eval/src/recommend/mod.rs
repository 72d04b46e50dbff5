//! Which strategy to use on a corpus: every candidate run on one test set (synthetic or
//! human), the best mean recommended, and the evidence beside it — its margin over the
//! baseline (the first candidate, the store's current default) with a paired bootstrap
//! interval and a randomisation test, an out-of-fold estimate of choosing this way (each fold
//! scored by the candidate that won on the other folds), and what each candidate costs.

mod store;

pub use store::{Plan, RecommendRequest, TestSet};

use ckeep_core::Document;
use ckeep_engine::{Engine, Error, Mode, Strategy};
use ckeep_store::{StoreRead, StoreWrite};
use serde::Serialize;

use crate::experiment::Comparison;
use crate::tune::{cross_validate, per_query};
use crate::{paired_bootstrap_ci, paired_randomization};

/// Resamples and permutations of the interval and the test.
const ROUNDS: usize = 10_000;

/// One candidate's figures.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Candidate {
    /// The strategy.
    pub strategy: String,
    /// Mean of the metric over the set's queries.
    pub mean: f64,
    /// Its difference from the baseline's mean.
    pub margin: f64,
    /// 95 % paired bootstrap interval of that difference.
    pub margin_ci: (f64, f64),
    /// Paired randomisation test against the baseline.
    pub p_value: f64,
    /// Mean milliseconds per query (embedding the query included).
    pub query_ms: f64,
    /// Disk size of the index it ran on.
    pub index_bytes: u64,
}

/// The recommendation and its evidence.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Recommendation {
    /// The set the candidates ran on.
    pub dataset: String,
    /// Its queries.
    pub queries: usize,
    /// The metric compared.
    pub metric: String,
    /// Index of the baseline (always 0).
    pub baseline: usize,
    /// Index of the recommended candidate: the best mean, ties to the earlier candidate.
    pub winner: usize,
    /// Whether the winner's interval lies above zero: a gain the set shows with confidence.
    pub confident: bool,
    /// Out-of-fold mean of choosing by the best mean (k-fold over queries): what the choice is
    /// worth on queries it was not made on.
    pub out_of_fold: f64,
    /// Folds of that estimate.
    pub folds: usize,
    /// Every candidate, in the order given.
    pub candidates: Vec<Candidate>,
}

impl Recommendation {
    /// The recommended candidate.
    pub fn best(&self) -> &Candidate {
        &self.candidates[self.winner]
    }
}

/// Recommends among the strategies of `c` (the first is the baseline) by its first metric,
/// over the queries `ids` (a query a strategy retrieved nothing for scores 0); each candidate
/// is named as `offered` (see [`candidates`]).
///
/// # Panics
/// If `c` has no strategies, or `offered` is not one per strategy.
pub fn recommend(
    c: &Comparison,
    offered: &[Strategy],
    ids: &[&str],
    folds: usize,
    seed: u64,
) -> Recommendation {
    assert_eq!(c.strategies.len(), offered.len(), "one offered strategy per result");
    assert!(!c.strategies.is_empty(), "at least one strategy");
    let values = per_query(c, ids);
    let mean = |v: &[f64]| if v.is_empty() { 0.0 } else { v.iter().sum::<f64>() / v.len() as f64 };
    let means: Vec<f64> = values.iter().map(|v| mean(v)).collect();
    let winner = (0..means.len()).fold(0, |best, i| if means[i] > means[best] { i } else { best });
    let candidates: Vec<Candidate> = c
        .strategies
        .iter()
        .enumerate()
        .map(|(i, s)| Candidate {
            strategy: offered[i].to_string(),
            mean: means[i],
            margin: means[i] - means[0],
            margin_ci: paired_bootstrap_ci(&values[0], &values[i], ROUNDS),
            p_value: paired_randomization(&values[0], &values[i], ROUNDS),
            query_ms: s.query_seconds * 1000.0 / ids.len().max(1) as f64,
            index_bytes: s.index_bytes,
        })
        .collect();
    let tuning = cross_validate(&values, folds, seed);
    Recommendation {
        dataset: c.dataset.clone(),
        queries: ids.len(),
        metric: c.metrics.first().cloned().unwrap_or_default(),
        baseline: 0,
        winner,
        confident: winner != 0 && candidates[winner].margin_ci.0 > 0.0,
        out_of_fold: tuning.mean,
        folds: tuning.folds.len(),
        candidates,
    }
}

/// The documents of a store, to make a test set from; `progress(done, total)`.
pub fn documents_of<S: StoreRead>(
    engine: &Engine<S>,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<Vec<Document>, Error> {
    let store = engine.store();
    let ids = store.document_ids()?;
    let total = ids.len() as u64;
    let mut docs = Vec::with_capacity(ids.len());
    for (i, id) in ids.iter().enumerate() {
        if let Some(d) = store.document(id)? {
            docs.push(d.document);
        }
        progress(i as u64 + 1, total);
    }
    Ok(docs)
}

/// BM25's classic parameters (Robertson et al.), beside ours (k1 = 0.9, b = 0.4).
const CLASSIC_BM25: &str = "k1=1.2,b=0.75";

/// Fusion modes offered when there is a model.
const DENSE_MODES: [&str; 5] =
    ["dense", "hybrid", "hybrid:linear=0.3", "hybrid:linear=0.5", "hybrid:linear=0.7"];

/// The candidates as offered (what `apply` records; the first is the store's current default)
/// and as evaluated: with the store's chunker, analyzer and default representation, so each
/// scratch index is built as the store is, and `model` (else the store's) where one is needed.
/// `specs` may hold `{a,b,…}` groups; none: BM25's classic parameters and, with a model,
/// dense, RRF and linear fusion at W = 0.3, 0.5 and 0.7.
pub fn candidates<S: StoreRead>(
    engine: Option<&Engine<S>>,
    specs: &[String],
    model: Option<&str>,
) -> Result<(Vec<Strategy>, Vec<Strategy>), Error> {
    let baseline =
        engine.map(|e| e.searcher()?.default_strategy()).transpose()?.unwrap_or_default();
    let manifest = engine.map(|e| e.store().manifest()).transpose()?;
    let model = model
        .map(str::to_string)
        .or_else(|| manifest.as_ref().and_then(ckeep_engine::stored_model));
    let mut offered = vec![baseline.clone()];
    let mut push = |s: Strategy| {
        if !offered.contains(&s) {
            offered.push(s);
        }
    };
    if specs.is_empty() {
        push(Strategy { mode: Mode::Bm25, ..baseline.clone() });
        let classic: Strategy = CLASSIC_BM25.parse()?;
        push(Strategy { mode: Mode::Bm25, lexical: classic.lexical, ..baseline.clone() });
        if model.is_some() {
            for mode in DENSE_MODES {
                let mode = mode.parse().map_err(Error::Invalid)?;
                push(Strategy {
                    mode,
                    lexical: ckeep_engine::LexicalParams::default(),
                    ..baseline.clone()
                });
            }
        }
    } else {
        for spec in specs {
            for expanded in crate::tune::expand_grid(spec).map_err(Error::Invalid)? {
                push(
                    expanded.parse().map_err(|e: Error| {
                        Error::Invalid(format!("strategy `{expanded}`: {e}"))
                    })?,
                );
            }
        }
    }
    let searcher = engine.map(Engine::searcher).transpose()?;
    let mut evaluated = Vec::with_capacity(offered.len());
    for s in &offered {
        let mut s = s.clone();
        if let Some(m) = &manifest {
            if s.chunker.is_none() {
                s.chunker = m.chunker.as_deref().map(str::parse).transpose()?;
            }
            if s.analyzer.is_none() {
                s.analyzer = m.analyzer.as_deref().and_then(ckeep_engine::Analyzer::from_id);
            }
            if s.repr.is_empty()
                && let Some(r) = &m.default_repr
            {
                s.repr = ckeep_engine::parse_representations(r).map_err(Error::Invalid)?;
            }
        }
        if s.mode.needs_model() && s.model.is_none() {
            s.model.clone_from(&model);
        }
        if s.mode.needs_model() && s.model.is_none() {
            return Err(Error::Invalid(format!(
                "`{s}` needs a model: the store has none; give one (--model)"
            )));
        }
        // A server's candidates name only what its operator configured: no reranker, model
        // or summarizer a client wrote is called or loaded by the runs.
        if let Some(searcher) = &searcher {
            searcher.admit(&s)?;
        }
        evaluated.push(s);
    }
    Ok((offered, evaluated))
}

/// What [`apply`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Applied {
    /// The winner is now the store's default.
    Applied,
    /// The winner is the default already.
    AlreadyDefault,
    /// No candidate beats the default with confidence; nothing changed.
    NotConfident,
}

/// Why `winner` cannot be applied to a store chunked with `stored`, and what to do, in the
/// words every front end shows.
pub fn rechunk_needed(winner: &Strategy, stored: &str, requested: &str) -> String {
    format!(
        "`{winner}` needs chunker={requested}, and the store is chunked with {stored}; re-chunk \
         it with `ckeep eval recommend --apply --rechunk` (with the store open nowhere else), or \
         add the documents to a new store with --chunker {requested}"
    )
}

/// Makes the recommended candidate of `offered` the store's default, in one manifest write,
/// when the set shows its gain with confidence; a store that cannot run it (another chunker)
/// is refused and left as it was.
pub fn apply<S: StoreWrite>(
    engine: &mut Engine<S>,
    offered: &[Strategy],
    rec: &Recommendation,
) -> Result<Applied, Error> {
    if rec.winner == rec.baseline {
        return Ok(Applied::AlreadyDefault);
    }
    if !rec.confident {
        return Ok(Applied::NotConfident);
    }
    let best = rec.best();
    let from = format!(
        "ckeep eval recommend on {} ({} queries): {} {:.4}, {:+.4} [{:+.4}, {:+.4}] over `{}`",
        rec.dataset,
        rec.queries,
        rec.metric,
        best.mean,
        best.margin,
        best.margin_ci.0,
        best.margin_ci.1,
        rec.candidates[rec.baseline].strategy
    );
    engine.writer().set_default_strategy(Some(&offered[rec.winner]), &from)?;
    Ok(Applied::Applied)
}

/// [`apply`], re-chunking the store at `location` first when the winner names another chunker
/// than the store's: its documents are added to a new store beside it with the winner's
/// chunker ([`ckeep_engine::Writer::copy_rechunked`]), the winner becomes that store's default, and it
/// replaces the old store in one step ([`ckeep_store::replace`]). A failure before that step
/// leaves the old store as it was, and the new one is removed.
pub fn apply_rechunked(
    engine: Engine<ckeep_store::DynStore>,
    location: &str,
    offered: &[Strategy],
    rec: &Recommendation,
    progress: ckeep_engine::DeriveProgress<'_>,
) -> Result<Applied, Error> {
    let mut engine = engine;
    let wanted = offered[rec.winner].chunker.as_ref();
    let stored = engine.searcher()?.stored_chunker()?;
    let Some(chunker) = wanted.filter(|&c| rec.confident && Some(c) != stored.as_ref()) else {
        return apply(&mut engine, offered, rec);
    };
    let staged = ckeep_store::staging_location(location)?;
    let built = (|| {
        let mut target = Engine::new(ckeep_store::open_or_create(&staged)?);
        engine.writer().copy_rechunked(&mut target, chunker, progress)?;
        apply(&mut target, offered, rec)
    })();
    // Every connection closes before the files move.
    drop(engine);
    match built {
        Ok(applied) => {
            ckeep_store::replace(location, &staged)?;
            Ok(applied)
        }
        Err(e) => {
            ckeep_store::discard_staged(location)?;
            Err(e)
        }
    }
}
