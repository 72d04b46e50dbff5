//! Runs strategies over a dataset: index once per distinct chunker, run every query for every
//! strategy, score, and compare each strategy with the first.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use ckeep_embed::Embedder;
use ckeep_engine::{Engine, Representation, SearchRequest, Strategy, Summarizer};
use ckeep_store::DynStore;
use ckeep_text::ChunkerSpec;
use serde::Serialize;

use crate::dataset::Dataset;
use crate::metrics::by_metric;
use crate::{Evaluation, Metric, Run, evaluate_in, paired_randomization};

/// Permutations of the paired randomisation test.
const RANDOMIZATION_ROUNDS: usize = 10_000;

/// Results are retrieved to this depth at least (the largest metric cut-off if larger).
const MIN_DEPTH: usize = 100;

/// One strategy's results.
#[derive(Debug, Clone, Serialize)]
pub struct StrategyResult {
    /// The strategy as given.
    pub strategy: String,
    /// Scores.
    pub evaluation: Evaluation,
    /// p-value of the paired randomisation test against the first strategy, per metric.
    pub p_values: Vec<Option<f64>>,
    /// The run, for TREC output.
    #[serde(skip)]
    pub run: Run,
    /// Seconds spent querying.
    pub query_seconds: f64,
    /// Disk size of the index the strategy ran on (its chunks, terms and vectors).
    pub index_bytes: u64,
    /// Mean words of context a reader gets: the text of the top `context_k` results, per query.
    pub context_words: f64,
    /// The same in tokens of [`Comparison::token_model`]'s tokenizer, when one was given.
    pub context_tokens: Option<f64>,
}

/// A whole comparison.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    /// Dataset name.
    pub dataset: String,
    /// Number of documents.
    pub documents: usize,
    /// Corpus records left out for their empty text.
    pub skipped_documents: usize,
    /// Number of queries.
    pub queries: usize,
    /// Metrics, in order.
    pub metrics: Vec<String>,
    /// The cut-off of `context_words`: the largest `contain@k`, else 10.
    pub context_k: usize,
    /// The model whose tokenizer counted `context_tokens`.
    pub token_model: Option<String>,
    /// One entry per strategy, in the order given.
    pub strategies: Vec<StrategyResult>,
}

impl Comparison {
    /// What `ckeep eval run --json` prints: the dataset, and per strategy its means and
    /// p-values by metric, query time and context size; with `per_query`, also every query's
    /// values per strategy.
    pub fn to_json(&self, per_query: bool) -> serde_json::Value {
        let strategies: Vec<serde_json::Value> = self
            .strategies
            .iter()
            .map(|s| {
                let mut v = serde_json::json!({
                    "strategy": s.strategy,
                    "means": by_metric(&self.metrics, &s.evaluation.means),
                    "p_values": by_metric(&self.metrics, &s.p_values),
                    "query_seconds": s.query_seconds,
                    "index_bytes": s.index_bytes,
                    "context_words": s.context_words,
                    "context_tokens": s.context_tokens,
                });
                if per_query {
                    v["per_query"] = s.evaluation.per_query_json();
                }
                v
            })
            .collect();
        serde_json::json!({
            "dataset": self.dataset, "documents": self.documents,
            "skipped_documents": self.skipped_documents, "queries": self.queries,
            "metrics": self.metrics, "context_k": self.context_k, "token_model": self.token_model,
            "strategies": strategies,
        })
    }
}

/// Progress reports: `(stage, done, total)`.
pub type Progress<'a> = &'a mut dyn FnMut(&str, u64, u64);

/// Opens a model named in a strategy (`model=…`).
pub type ModelLoader<'a> =
    &'a mut dyn FnMut(&str) -> Result<Arc<dyn Embedder>, ckeep_engine::Error>;

/// Gives `model` to every strategy that needs a model and names none (`--model`).
pub fn default_model(strategies: &mut [Strategy], model: Option<&str>) {
    for s in strategies {
        if s.mode.needs_model() && s.model.is_none() {
            s.model = model.map(str::to_string);
        }
    }
}

/// The index a strategy runs on: its chunker, analyzer and model.
pub(crate) fn index_key(s: &Strategy) -> String {
    let mut key = s.chunker.clone().unwrap_or_default().to_string();
    if let Some(a) = s.analyzer {
        key = format!("{key} {a}");
    }
    if let Some(m) = &s.model {
        key = format!("{key} {m}");
    }
    key
}

/// Runs `strategies` on `dataset`, building indexes in `work_dir` (one store per chunker and
/// model, in a subdirectory, or, when `work_dir` is a `postgres://` server URL, in a database
/// `ckeep_eval_<index>` of its own, replaced; vectors come through the loader's model, so a cached one never embeds a text twice).
pub fn run(
    dataset: &Dataset,
    strategies: &[Strategy],
    metrics: &[Metric],
    work_dir: &str,
    models: ModelLoader<'_>,
    tokens: Option<&ckeep_embed::TokenCounter>,
    progress: Progress<'_>,
) -> Result<Comparison, ckeep_engine::Error> {
    if let Some(s) = strategies.iter().find(|s| s.mode.needs_model() && s.model.is_none()) {
        return Err(ckeep_engine::Error::Strategy {
            spec: s.to_string(),
            message: format!("mode={} needs a model: add model=NAME (or pass --model)", s.mode),
        });
    }
    let depth = metrics
        .iter()
        .filter_map(|m| match m {
            Metric::Ndcg(k)
            | Metric::Recall(k)
            | Metric::Precision(k)
            | Metric::Hit(k)
            | Metric::Contain(k)
            | Metric::AlphaNdcg(k, _)
            | Metric::Dup(k) => Some(*k),
            Metric::Mrr(k) | Metric::Map(k) => *k,
        })
        .max()
        .unwrap_or(0)
        .max(MIN_DEPTH);
    let context_k = metrics
        .iter()
        .filter_map(|m| if let Metric::Contain(k) = m { Some(*k) } else { None })
        .max()
        .unwrap_or(10);
    let strategies = with_fields(dataset, strategies);
    let strategies = strategies.as_slice();
    let engines = build_indexes(dataset, strategies, work_dir, models, progress)?;
    let mut results: Vec<StrategyResult> = Vec::new();
    for s in strategies {
        let engine = &engines[&index_key(s)];
        let mut strategy = s.clone();
        // A diversified strategy returns the k results MMR picks (its own k): asking MMR for
        // the whole depth would diversify a thousand results, which no user sees.
        if strategy.diversify == ckeep_engine::Diversify::None {
            strategy.k = depth;
        }
        let started = std::time::Instant::now();
        let mut run = Run::new();
        let mut contexts: Vec<Vec<String>> = Vec::with_capacity(dataset.queries.len());
        let total = dataset.queries.len() as u64;
        for (i, q) in dataset.queries.iter().enumerate() {
            let req = SearchRequest::new(q.text.clone()).with_strategy(strategy.clone());
            let results = match engine.search(&req) {
                Ok(res) => res.results,
                // A query with no indexable terms retrieves nothing; it still counts.
                Err(ckeep_engine::Error::Invalid(_)) => Vec::new(),
                Err(e) => return Err(e),
            };
            run.insert(q.id.clone(), ranked_ids(dataset, &results));
            contexts.push(results.into_iter().map(|r| r.text).collect());
            progress(&format!("querying {s}"), i as u64 + 1, total);
        }
        let mean_length = |count: &dyn Fn(&str) -> usize| {
            contexts
                .iter()
                .map(|c| c.iter().take(context_k).map(|t| count(t)).sum::<usize>())
                .sum::<usize>() as f64
                / contexts.len().max(1) as f64
        };
        let context_words =
            mean_length(&|t| ckeep_text::SizeCounter::count(&ckeep_text::WordCounter, t));
        let context_tokens = tokens.map(|counter| mean_length(&|t| counter.count(t)));
        let mut evaluation = evaluate_in(&dataset.qrels, &run, metrics, &dataset.families);
        fill_containment(&mut evaluation, metrics, dataset, &contexts);
        let p_values = match results.first() {
            None => vec![None; metrics.len()],
            Some(base) => (0..metrics.len())
                .map(|m| {
                    let a: Vec<f64> = base.evaluation.per_query.iter().map(|v| v[m]).collect();
                    let b: Vec<f64> = evaluation.per_query.iter().map(|v| v[m]).collect();
                    Some(paired_randomization(&a, &b, RANDOMIZATION_ROUNDS))
                })
                .collect(),
        };
        results.push(StrategyResult {
            strategy: s.to_string(),
            evaluation,
            p_values,
            run,
            query_seconds: started.elapsed().as_secs_f64(),
            index_bytes: ckeep_store::StoreRead::stats(engine.store())?.disk_bytes,
            context_words,
            context_tokens,
        });
    }
    Ok(Comparison {
        dataset: dataset.name.clone(),
        documents: dataset.docs.len(),
        skipped_documents: dataset.skipped.len(),
        queries: dataset.queries.len(),
        metrics: metrics.iter().map(ToString::to_string).collect(),
        context_k,
        token_model: tokens.map(|t| t.name().to_string()),
        strategies: results,
    })
}

/// `strategies`, those that name no representation searching the dataset's fields (and
/// saying so in their labels).
pub(crate) fn with_fields(dataset: &Dataset, strategies: &[Strategy]) -> Vec<Strategy> {
    strategies
        .iter()
        .cloned()
        .map(|mut s| {
            if s.repr.is_empty() {
                s.repr = dataset.fields.representation().into_iter().collect();
            }
            s
        })
        .collect()
}

/// Replaces the NaN placeholders of text metrics with answer containment per query.
fn fill_containment(
    evaluation: &mut crate::Evaluation,
    metrics: &[Metric],
    dataset: &Dataset,
    contexts: &[Vec<String>],
) {
    for (m, metric) in metrics.iter().enumerate() {
        let Metric::Contain(k) = *metric else { continue };
        for (qi, qid) in evaluation.queries.iter().enumerate() {
            let i = dataset
                .queries
                .binary_search_by(|q| q.id.as_str().cmp(qid))
                .expect("every scored query was run");
            evaluation.per_query[qi][m] =
                Metric::containment(k, &contexts[i], &dataset.queries[i].answers);
        }
        let n = evaluation.per_query.len().max(1) as f64;
        evaluation.means[m] = evaluation.per_query.iter().map(|v| v[m]).sum::<f64>() / n;
    }
}

/// One index per distinct (chunker, analyzer, model) of `strategies`, holding every
/// representation and summary the strategies on it use, and the vectors of every further
/// model they fuse (`models=A+B`), so `model=A` and `models=A+B` compare on one index.
pub(crate) fn build_indexes(
    dataset: &Dataset,
    strategies: &[Strategy],
    work_dir: &str,
    models: ModelLoader<'_>,
    progress: Progress<'_>,
) -> Result<BTreeMap<String, Engine<DynStore>>, ckeep_engine::Error> {
    let mut engines: BTreeMap<String, Engine<DynStore>> = BTreeMap::new();
    for s in strategies {
        let key = index_key(s);
        if let std::collections::btree_map::Entry::Vacant(slot) = engines.entry(key) {
            let model = s.model.as_deref().map(&mut *models).transpose()?;
            let chunker = s.chunker.clone().unwrap_or_default();
            let name = sanitize(slot.key());
            let location = index_location(work_dir, &name)?;
            // Every representation and summarizer the strategies on this index use.
            let same: Vec<&Strategy> =
                strategies.iter().filter(|t| index_key(t) == index_key(s)).collect();
            let mut reprs: Vec<Representation> = Vec::new();
            let mut summarizers: Vec<Summarizer> = Vec::new();
            let mut further: Vec<Arc<dyn Embedder>> = Vec::new();
            for spec in same.iter().flat_map(|t| &t.extra_models) {
                let m = models(spec)?;
                if !further.iter().any(|f| f.info().fingerprint == m.info().fingerprint) {
                    further.push(m);
                }
            }
            for t in &same {
                for r in &t.repr {
                    if !reprs.contains(r) {
                        reprs.push(*r);
                    }
                }
                if let Some(sm) = t.summarizer.as_ref().filter(|sm| !summarizers.contains(sm)) {
                    summarizers.push(sm.clone());
                }
            }
            let needs = Needs {
                reprs: &reprs,
                summarizers: &summarizers,
                analyzer: s.analyzer,
                further: &further,
            };
            slot.insert(index(dataset, &chunker, model, needs, &location, &name, progress)?);
        }
    }
    Ok(engines)
}

/// A query's results as a run: document ids, or, with passage relevance, the passage each
/// result's best chunk starts in (each passage once, at its best rank).
fn ranked_ids(dataset: &Dataset, results: &[ckeep_engine::SearchResult]) -> Vec<(String, f64)> {
    if dataset.passages.is_empty() {
        return results.iter().map(|r| (r.doc_id.clone(), f64::from(r.score))).collect();
    }
    let mut seen = std::collections::HashSet::new();
    results
        .iter()
        .filter_map(|r| {
            let at = r.chunks.first().map_or(0, |c| c.span.start);
            let pid = dataset.passage_at(&r.doc_id, at)?.to_string();
            seen.insert(pid.clone()).then_some((pid, f64::from(r.score)))
        })
        .collect()
}

fn sanitize(key: &str) -> String {
    key.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect()
}

/// What an index must hold beyond plain chunks.
#[derive(Clone, Copy)]
struct Needs<'a> {
    reprs: &'a [Representation],
    summarizers: &'a [Summarizer],
    /// `None`: `auto` chooses from the dataset's script.
    analyzer: Option<ckeep_engine::Analyzer>,
    /// Models whose vectors are kept beside the index model's (`models=A+B`).
    further: &'a [Arc<dyn Embedder>],
}

fn index(
    dataset: &Dataset,
    chunker: &ChunkerSpec,
    model: Option<Arc<dyn Embedder>>,
    needs: Needs<'_>,
    location: &str,
    name: &str,
    progress: Progress<'_>,
) -> Result<Engine<DynStore>, ckeep_engine::Error> {
    // Summaries by a language model are cached across indexes (each chunker has its own).
    let mut engine = Engine::new(ckeep_store::open_or_create(location)?)
        .with_generation_cache(ckeep_engine::default_generation_cache());
    if let Some(m) = model {
        engine = engine.with_embedder(m);
    }
    if let Some(a) = needs.analyzer {
        engine = engine.with_analyzer(ckeep_engine::AnalyzerChoice::Fixed(a));
    }
    let mut ingest = engine.writer().ingest(chunker)?;
    ingest.require(needs.reprs, needs.summarizers)?;
    let total = dataset.docs.len() as u64;
    for (i, d) in dataset.docs.iter().enumerate() {
        ingest.add(d.clone())?;
        progress(&format!("indexing {name}"), i as u64 + 1, total);
    }
    ingest.finish_with(progress)?;
    for m in needs.further {
        engine.writer().add_model(Arc::clone(m), progress)?;
    }
    Ok(engine)
}

/// Where the index `name` of an experiment lives: a directory under `work_dir`, or a fresh
/// database beside the one a `postgres://` `work_dir` names.
#[cfg_attr(not(feature = "postgres"), allow(clippy::unnecessary_wraps))]
fn index_location(work_dir: &str, name: &str) -> Result<String, ckeep_engine::Error> {
    #[cfg(feature = "postgres")]
    if ckeep_store::is_postgres_url(work_dir) {
        return Ok(ckeep_store::PgStore::create_database(work_dir, &format!("ckeep_eval_{name}"))?);
    }
    // Without PostgreSQL support, a URL goes on to `open_or_create`, which refuses it clearly.
    if ckeep_store::is_postgres_url(work_dir) {
        return Ok(work_dir.to_string());
    }
    Ok(Path::new(work_dir).join(name).display().to_string())
}
