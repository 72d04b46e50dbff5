//! The playground's Evaluate view on the store itself: `POST /evaluate` starts what
//! `ckeep eval recommend` does (a test set made from the store's documents, every candidate run
//! in scratch indexes), `GET /evaluate/{id}` reports its progress and then the recommendation,
//! and `POST /evaluate/{id}/apply` makes the winner the store's default, by the same rule as
//! `--apply`. One evaluation runs at a time, on threads of its own at a lower priority, so
//! searches go on.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use ckeep_engine::Strategy;
use ckeep_eval::recommend::{self as rec, Applied, RecommendRequest, Recommendation};
use ckeep_eval::synth::{Generator, SynthReport};
use serde::{Deserialize, Serialize};

use crate::AppState;
use crate::error::{ApiError, ErrorCode};
use crate::json::JsonBody;

/// Evaluations kept for `GET /evaluate/{id}`; older ones are forgotten.
const KEPT: usize = 16;

/// `POST /evaluate`: the options of `ckeep eval recommend` that make sense on a server.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct EvaluateBody {
    /// Queries to make from the store's documents.
    #[serde(default = "default_count")]
    #[schemars(range(min = 1, max = 100_000))]
    count: usize,
    /// The seed that picks the passages (the same seed, the same set).
    #[serde(default = "default_seed")]
    seed: u64,
    /// `ict` (held-out sentences, the default) or `title`.
    #[serde(default)]
    generator: Option<String>,
    /// Candidate strategies (default: BM25's classic parameters and, with a model, dense and
    /// hybrid); `{a,b}` groups expand.
    #[serde(default)]
    strategies: Vec<String>,
    /// The metric they are compared by (default `ndcg@10`).
    #[serde(default)]
    metric: Option<String>,
    /// Folds of the cross-validated estimate.
    #[serde(default = "default_folds")]
    #[schemars(range(min = 2, max = 1000))]
    folds: usize,
}

fn default_count() -> usize {
    200
}
fn default_seed() -> u64 {
    42
}
fn default_folds() -> usize {
    5
}

impl EvaluateBody {
    /// The library's request, each bad value named by its field.
    fn into_request(self) -> Result<RecommendRequest, ApiError> {
        if !(1..=100_000).contains(&self.count) {
            return Err(ApiError::invalid("`count` must be from 1 to 100000"));
        }
        if !(2..=1000).contains(&self.folds) {
            return Err(ApiError::invalid("`folds` must be from 2 to 1000"));
        }
        let generator: Generator = match self.generator.as_deref() {
            None => Generator::Ict,
            Some(g) => g.parse().map_err(|e| ApiError::invalid(format!("`generator`: {e}")))?,
        };
        if generator == Generator::Llm {
            return Err(ApiError::invalid(
                "`generator`: `llm` runs for hours on a CPU; make the set with `ckeep eval synth \
                 --generator llm` and compare with `ckeep eval recommend --dataset DIR`",
            ));
        }
        let mut request = RecommendRequest::synthetic(self.count, self.seed, generator);
        if let Some(metric) = self.metric {
            request.metric =
                metric.parse().map_err(|e| ApiError::invalid(format!("`metric`: {e}")))?;
        }
        request.strategies = self.strategies;
        request.folds = self.folds;
        Ok(request)
    }
}

/// Where an evaluation is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Phase {
    Running,
    Done,
    Failed,
}

/// What `GET /evaluate/{id}` answers.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub(crate) struct Evaluation {
    id: u64,
    state: Phase,
    /// The stage under way (`reading documents`, `indexing …`, `searching …`).
    stage: String,
    done: u64,
    total: u64,
    elapsed_seconds: f64,
    /// The test set made from the store.
    test_set: Option<SynthReport>,
    recommendation: Option<Recommendation>,
    /// What `POST /evaluate/{id}/apply` did, once asked.
    applied: Option<Applied>,
    error: Option<String>,
    #[serde(skip)]
    #[schemars(skip)]
    offered: Vec<Strategy>,
    #[serde(skip)]
    #[schemars(skip)]
    started: Option<Instant>,
}

/// The evaluations a server keeps.
#[derive(Debug, Default)]
pub(crate) struct Evaluations {
    next: u64,
    jobs: BTreeMap<u64, Arc<Mutex<Evaluation>>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Evaluations {
    /// A new running evaluation, unless one runs already.
    fn start(&mut self) -> Result<Arc<Mutex<Evaluation>>, ApiError> {
        if let Some((id, _)) = self.jobs.iter().find(|(_, j)| lock(j).state == Phase::Running) {
            return Err(ApiError::new(
                ErrorCode::Conflict,
                format!("evaluation {id} is running; wait for it (GET /evaluate/{id})"),
            ));
        }
        self.next += 1;
        let job = Arc::new(Mutex::new(Evaluation {
            id: self.next,
            state: Phase::Running,
            stage: "starting".into(),
            done: 0,
            total: 0,
            elapsed_seconds: 0.0,
            test_set: None,
            recommendation: None,
            applied: None,
            error: None,
            offered: Vec::new(),
            started: Some(Instant::now()),
        }));
        self.jobs.insert(self.next, Arc::clone(&job));
        while self.jobs.len() > KEPT {
            self.jobs.pop_first();
        }
        Ok(job)
    }

    fn get(&self, id: u64) -> Result<Arc<Mutex<Evaluation>>, ApiError> {
        self.jobs.get(&id).cloned().ok_or_else(|| {
            ApiError::new(ErrorCode::NotFound, format!("no evaluation {id} on this server"))
        })
    }
}

impl Evaluation {
    fn snapshot(&self) -> Self {
        let mut s = self.clone();
        if s.state == Phase::Running {
            s.elapsed_seconds = self.started.map_or(0.0, |t| t.elapsed().as_secs_f64());
        }
        s
    }

    fn finish(&mut self, outcome: Result<(Recommendation, Vec<Strategy>), String>) {
        self.elapsed_seconds = self.started.map_or(0.0, |t| t.elapsed().as_secs_f64());
        match outcome {
            Ok((found, offered)) => {
                self.state = Phase::Done;
                self.recommendation = Some(found);
                self.offered = offered;
            }
            Err(message) => {
                self.state = Phase::Failed;
                self.error = Some(message);
            }
        }
    }
}

/// `POST /evaluate`: starts an evaluation; 202 with its first status.
pub(crate) async fn start(
    State(state): State<Arc<AppState>>,
    JsonBody(body): JsonBody<EvaluateBody>,
) -> Result<(StatusCode, Json<Evaluation>), ApiError> {
    let request = body.into_request()?;
    let job = lock(&state.evaluations).start()?;
    let first = lock(&job).snapshot();
    // Whatever stops it from starting ends it as failed, so it never blocks the next one.
    match launch(&state, request, Arc::clone(&job)).await {
        Ok(()) => Ok((StatusCode::ACCEPTED, Json(first))),
        Err(err) => {
            lock(&job).finish(Err(err.message.clone()));
            Err(err)
        }
    }
}

/// Plans the evaluation on a reader (reading the store takes seconds), then runs it on threads
/// of its own, which need no store; progress goes to `job`.
async fn launch(
    state: &AppState,
    request: RecommendRequest,
    job: Arc<Mutex<Evaluation>>,
) -> Result<(), ApiError> {
    let progress_job = Arc::clone(&job);
    let report = move |stage: &str, done: u64, total: u64| {
        let mut j = lock(&progress_job);
        stage.clone_into(&mut j.stage);
        j.done = done;
        j.total = total;
    };
    let plan = {
        let mut report = report.clone();
        state.workers.read_untimed(move |e| Ok(request.plan(Some(e), &mut report)?)).await?
    };
    lock(&job).test_set = plan.made().cloned();
    let pool = crate::background_pool("ckeep-evaluate")?;
    std::thread::Builder::new()
        .name("ckeep-evaluate".into())
        .spawn(move || {
            let mut report = report;
            let models = ckeep_engine::ModelSet::new(true);
            let mut load = |spec: &str| models.get(spec).map_err(ckeep_engine::Error::Embed);
            let ran = pool.install(|| plan.run(&mut load, &mut report));
            // As an error response would say it: a failure of ours (or of a model server the
            // operator configured) is logged, and the status shows no remote reply.
            let outcome = ran
                .map(|found| (found, plan.offered().to_vec()))
                .map_err(|e| ApiError::from(e).client_body().message);
            lock(&job).finish(outcome);
        })
        .map_err(|e| ApiError::internal(format!("cannot start the evaluation: {e}")))?;
    Ok(())
}

/// `GET /evaluate/{id}`.
pub(crate) async fn status(
    State(state): State<Arc<AppState>>,
    Path(id): Path<u64>,
) -> Result<Json<Evaluation>, ApiError> {
    let job = lock(&state.evaluations).get(id)?;
    let snapshot = lock(&job).snapshot();
    Ok(Json(snapshot))
}

/// `POST /evaluate/{id}/apply`: the winner becomes the store's default when the set shows its
/// gain with confidence (as `ckeep eval recommend --apply`); a winner that needs another
/// chunker is a conflict, re-chunked only by the CLI with the server stopped.
pub(crate) async fn apply(
    State(state): State<Arc<AppState>>,
    Path(id): Path<u64>,
) -> Result<Json<Evaluation>, ApiError> {
    let job = lock(&state.evaluations).get(id)?;
    let (found, offered) = {
        let j = lock(&job);
        match (&j.state, &j.recommendation) {
            (Phase::Done, Some(found)) => (found.clone(), j.offered.clone()),
            _ => {
                return Err(ApiError::new(
                    ErrorCode::Conflict,
                    format!("evaluation {id} has no recommendation to apply (it is {:?})", j.state),
                ));
            }
        }
    };
    let applied = state
        .workers
        .write(move |e| match rec::apply(e, &offered, &found) {
            Err(ckeep_engine::Error::ChunkerMismatch { stored, requested, .. }) => {
                Err(ApiError::new(
                    ErrorCode::Conflict,
                    rec::rechunk_needed(&offered[found.winner], &stored, &requested),
                ))
            }
            other => Ok(other?),
        })
        .await?;
    let mut j = lock(&job);
    j.applied = Some(applied);
    Ok(Json(j.snapshot()))
}
