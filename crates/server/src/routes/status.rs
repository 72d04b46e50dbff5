//! The small read-only endpoints: `/health` and `/stats`.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;

use crate::AppState;
use crate::error::ApiError;

/// `GET /health`: the server is up.
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
pub(crate) struct Health {
    /// `ok`.
    status: &'static str,
    /// The server's version.
    version: &'static str,
    /// Seconds since it started.
    uptime_seconds: f64,
}

/// Liveness: answers without touching the store, and without a token.
pub(crate) async fn health(State(state): State<Arc<AppState>>) -> Json<Health> {
    Json(Health {
        status: "ok",
        version: env!("CARGO_PKG_VERSION"),
        uptime_seconds: state.started.elapsed().as_secs_f64(),
    })
}

/// `GET /stats`: the engine's store summary (the shape of `ckeep stats --json`), and how the
/// server has batched queries for the model.
#[derive(serde::Serialize, schemars::JsonSchema)]
pub(crate) struct StatsBody {
    #[serde(flatten)]
    summary: ckeep_engine::StoreSummary,
    /// How concurrent queries were embedded together (with query batching on).
    query_batches: Option<QueryBatches>,
}

/// Model calls made for queries, and the queries they embedded.
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
pub(crate) struct QueryBatches {
    /// Calls to the model.
    model_calls: u64,
    /// Queries embedded by them.
    queries: u64,
}

pub(crate) async fn stats(State(state): State<Arc<AppState>>) -> Result<Json<StatsBody>, ApiError> {
    let summary = state.workers.read(|e| Ok(e.searcher()?.summary()?)).await?;
    let query_batches =
        state.query_batches().map(|(model_calls, queries)| QueryBatches { model_calls, queries });
    Ok(Json(StatsBody { summary, query_batches }))
}
