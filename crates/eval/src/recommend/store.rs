//! `eval recommend` on a store as one request every front end makes (the CLI, Python, the
//! server's Evaluate view): the test set made from the store's documents (or one given), the
//! candidates, their runs in scratch indexes, and the recommendation. Planning reads the store
//! briefly; running needs only the plan, so a server lends a reader for seconds, not for the
//! minutes the runs take.

use std::path::PathBuf;

use ckeep_engine::{Engine, Strategy};
use ckeep_store::StoreRead;

use super::{Recommendation, candidates, documents_of, recommend};
use crate::dataset::Dataset;
use crate::experiment::{ModelLoader, Progress};
use crate::synth::{self, SynthOptions, SynthReport};
use crate::{Error, Metric};

/// The queries the candidates are compared on.
#[derive(Debug, Clone)]
pub enum TestSet {
    /// Made from the store's documents; kept in `keep` when given, else in a scratch
    /// directory removed with the plan.
    Synthetic {
        /// How it is made.
        options: SynthOptions,
        /// Where it is written.
        keep: Option<PathBuf>,
    },
    /// A set on disk in a layout `eval run --dataset` reads.
    Given {
        /// Its directory.
        dir: PathBuf,
        /// Its qrels split.
        split: String,
    },
}

/// What to compare, and how.
#[derive(Debug, Clone)]
pub struct RecommendRequest {
    /// The queries.
    pub set: TestSet,
    /// Candidate specs (`{a,b}` groups expand); none: the defaults of [`candidates`].
    pub strategies: Vec<String>,
    /// The metric compared.
    pub metric: Metric,
    /// Folds of the out-of-fold estimate (at least 2).
    pub folds: usize,
    /// Seed of the folds.
    pub seed: u64,
    /// Model of dense and hybrid candidates (default: the store's).
    pub model: Option<String>,
    /// Where the scratch indexes go (default: a scratch directory removed with the plan).
    pub work_dir: Option<String>,
}

impl RecommendRequest {
    /// `count` queries made from the store's documents by `generator`, compared by nDCG@10
    /// over 5 folds: what `ckeep eval recommend` does without options.
    pub fn synthetic(count: usize, seed: u64, generator: synth::Generator) -> Self {
        Self {
            set: TestSet::Synthetic {
                options: SynthOptions::new(count, seed, generator),
                keep: None,
            },
            strategies: Vec::new(),
            metric: Metric::Ndcg(10),
            folds: 5,
            seed,
            model: None,
            work_dir: None,
        }
    }

    /// Makes or reads the test set and chooses the candidates, from the store `engine` holds
    /// (`None`: no store, only a given set and the built-in default as baseline).
    /// `progress` hears `("reading documents", done, total)`.
    pub fn plan<S: StoreRead>(
        &self,
        engine: Option<&Engine<S>>,
        progress: Progress<'_>,
    ) -> Result<Plan, Error> {
        let scratch =
            tempfile::Builder::new().prefix("ckeep-recommend-").tempdir().map_err(|source| {
                Error::Io { path: std::env::temp_dir().display().to_string(), source }
            })?;
        let (data, made) = match &self.set {
            TestSet::Given { dir, split } => (crate::dataset::load_dir(dir, split)?, None),
            TestSet::Synthetic { options, keep } => {
                let engine = engine.ok_or_else(|| {
                    Error::Invalid("a test set made from a store needs the store".into())
                })?;
                let docs = documents_of(engine, &mut |done, total| {
                    progress("reading documents", done, total);
                })?;
                let dir = keep
                    .clone()
                    .unwrap_or_else(|| scratch.path().join(format!("{}-set", options.generator)));
                let report = synth::make(&docs, options, &dir)?;
                (crate::dataset::load_dir(&dir, "test")?, Some(report))
            }
        };
        if data.queries.is_empty() {
            return Err(Error::Invalid(format!("{} has no judged queries", data.name)));
        }
        let (offered, evaluated) = candidates(engine, &self.strategies, self.model.as_deref())?;
        let work = self
            .work_dir
            .clone()
            .unwrap_or_else(|| scratch.path().join("indexes").display().to_string());
        Ok(Plan { request: self.clone(), data, made, offered, evaluated, work, _scratch: scratch })
    }
}

/// A planned comparison: the set loaded, the candidates chosen.
#[derive(Debug)]
pub struct Plan {
    request: RecommendRequest,
    data: Dataset,
    made: Option<SynthReport>,
    offered: Vec<Strategy>,
    evaluated: Vec<Strategy>,
    work: String,
    _scratch: tempfile::TempDir,
}

impl Plan {
    /// The report of the set made from the store (`None` for a given set).
    pub fn made(&self) -> Option<&SynthReport> {
        self.made.as_ref()
    }

    /// The set.
    pub fn dataset(&self) -> &Dataset {
        &self.data
    }

    /// The candidates as `apply` records them (the first is the store's current default).
    pub fn offered(&self) -> &[Strategy] {
        &self.offered
    }

    /// Runs every candidate in scratch indexes (`models` opens the models they name) and
    /// recommends one; `progress` hears each stage of the runs.
    pub fn run(
        &self,
        models: ModelLoader<'_>,
        progress: Progress<'_>,
    ) -> Result<Recommendation, Error> {
        let r = &self.request;
        let comparison = crate::experiment::run(
            &self.data,
            &self.evaluated,
            &[r.metric],
            &self.work,
            models,
            None,
            progress,
        )?;
        let ids: Vec<&str> = self.data.queries.iter().map(|q| q.id.as_str()).collect();
        Ok(recommend(&comparison, &self.offered, &ids, r.folds.max(2), r.seed))
    }
}
