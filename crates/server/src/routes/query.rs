//! Search and pair similarity.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Json;
use axum::extract::State;
use axum::http::HeaderName;
use ckeep_engine::{
    MetadataFilter, PairScorer, SearchRequest, SearchResponse, SearchTiming, StrategyChoices,
    StrategyFields,
};
use serde::Deserialize;

use crate::AppState;
use crate::error::{ApiError, ErrorCode};
use crate::json::JsonBody;

/// `POST /search`: every option of `ckeep search`. `strategy` is a whole spec; the fields
/// beside it override its parts (the engine's [`StrategyFields`], flattened).
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
pub(crate) struct SearchBody {
    /// The query (at most the server's `--max-query-bytes`).
    pub(crate) query: String,
    #[serde(flatten)]
    pub(crate) strategy: StrategyFields,
    /// Each result's score components.
    #[serde(default)]
    pub(crate) explain: bool,
    /// Only documents whose metadata passes.
    #[serde(default)]
    pub(crate) filter: Option<RequestFilter>,
    /// Fields no one above took: refused, as `deny_unknown_fields` would (which serde does not
    /// support beside `flatten`).
    #[serde(flatten)]
    #[schemars(skip)]
    pub(crate) unknown: std::collections::BTreeMap<String, serde_json::Value>,
}

/// A search's metadata filter: an object of `KEY: VALUE`, or conditions typed as `KEY=VALUE`
/// (as `ckeep search --filter` takes them, read by the same rule; the playground sends these).
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
pub(crate) enum RequestFilter {
    /// The JSON form, checked in [`Self::into_filter`] so a bad operator is named (inside an
    /// untagged enum serde would only say that no variant matched).
    Object(serde_json::Map<String, serde_json::Value>),
    Conditions(Vec<String>),
}

impl RequestFilter {
    pub(crate) fn into_filter(self) -> Result<MetadataFilter, ApiError> {
        match self {
            Self::Object(map) => {
                let filter = MetadataFilter(map);
                filter.check().map_err(|e| ApiError::invalid(format!("`filter`: {e}")))?;
                Ok(filter)
            }
            Self::Conditions(list) => {
                MetadataFilter::from_conditions(list.iter().map(String::as_str))
                    .map_err(|e| ApiError::invalid(format!("`filter`: {e}")))
            }
        }
    }
}

impl SearchBody {
    /// The engine's request; the engine applies the defaults and the server's limits.
    fn into_request(self) -> Result<SearchRequest, ApiError> {
        if let Some(name) = self.unknown.keys().next() {
            return Err(ApiError::new(
                ErrorCode::InvalidRequest,
                format!("unknown field `{name}` in the request body"),
            ));
        }
        let filter = self.filter.map(RequestFilter::into_filter).transpose()?;
        Ok(SearchRequest::from_fields(self.query, &self.strategy)?
            .with_explain(self.explain)
            .with_filter(filter))
    }
}

/// `GET /strategy`: the choices of each strategy part, the defaults and the filter syntax, for
/// forms (the playground's controls).
pub(crate) async fn strategy() -> Json<StrategyChoices> {
    Json(StrategyChoices::new())
}

/// `POST /search`, with a `Server-Timing` header (milliseconds, as the W3C header has them):
/// `wait` for a reader, `embed` the query, `search` the rest, so a client can tell the index's
/// latency from the model's and the queue's.
pub(crate) async fn search(
    State(state): State<Arc<AppState>>,
    JsonBody(body): JsonBody<SearchBody>,
) -> Result<([(HeaderName, String); 1], Json<SearchResponse>), ApiError> {
    let started = Instant::now();
    let response = run_search(&state, body).await?;
    let timing = server_timing(started.elapsed(), response.timing);
    Ok(([(HeaderName::from_static("server-timing"), timing)], Json(response)))
}

/// The `Server-Timing` value of a search that took `handled` in the handler.
fn server_timing(handled: Duration, t: SearchTiming) -> String {
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    format!(
        "wait;dur={:.3}, embed;dur={:.3}, search;dur={:.3}",
        ms(handled.saturating_sub(t.total)),
        ms(t.embed),
        ms(t.total.saturating_sub(t.embed)),
    )
}

/// A search on a reader, for every front end (HTTP and MCP).
pub(crate) async fn run_search(
    state: &AppState,
    body: SearchBody,
) -> Result<SearchResponse, ApiError> {
    let req = body.into_request()?;
    state.workers.read(move |e| Ok(e.search(&req)?)).await
}

/// `POST /similar`: two texts compared by the mean of their top-k most similar chunk pairs,
/// with the server's model.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct SimilarBody {
    /// The first text.
    pub(crate) a: String,
    /// The second text.
    pub(crate) b: String,
    /// How both are cut into chunks (default `words:dynamic`).
    #[serde(default)]
    pub(crate) chunker: Option<String>,
    /// Chunk pairs averaged (default 3).
    #[serde(default)]
    pub(crate) top_k: Option<usize>,
    /// The duplicate threshold, -1 to 1 (default 0.7).
    #[serde(default)]
    pub(crate) threshold: Option<f64>,
    /// The matching chunk pairs, with spans and text.
    #[serde(default)]
    pub(crate) explain: bool,
}

/// `POST /similar`.
pub(crate) async fn similar(
    State(state): State<Arc<AppState>>,
    JsonBody(body): JsonBody<SimilarBody>,
) -> Result<Json<ckeep_engine::SimilarReport>, ApiError> {
    run_similar(&state, body).await.map(Json)
}

/// A pair comparison with the server's model, for every front end (HTTP and MCP).
pub(crate) async fn run_similar(
    state: &AppState,
    body: SimilarBody,
) -> Result<ckeep_engine::SimilarReport, ApiError> {
    let Some(model) = state.embedder.clone() else {
        return Err(ApiError::invalid(
            "pair similarity needs an embedding model; start the server with --model",
        ));
    };
    for (name, text) in [("a", &body.a), ("b", &body.b)] {
        if text.trim().is_empty() {
            return Err(ApiError::invalid(format!("`{name}` is empty")));
        }
    }
    let chunker = body.chunker.as_deref().unwrap_or(ckeep_engine::PAIR_CHUNKER);
    let chunker = chunker
        .parse()
        .map_err(|e: ckeep_text::Error| ApiError::invalid(format!("`chunker`: {e}")))?;
    let top_k = body.top_k.unwrap_or(ckeep_engine::DEFAULT_TOP_K);
    if top_k == 0 || top_k > ckeep_engine::MAX_K {
        return Err(ApiError::invalid(format!("`top_k` must be 1 to {}", ckeep_engine::MAX_K)));
    }
    let threshold = body.threshold.unwrap_or(ckeep_engine::DEFAULT_THRESHOLD);
    if !(-1.0..=1.0).contains(&threshold) {
        return Err(ApiError::invalid("`threshold` must be between -1 and 1"));
    }
    let scorer = PairScorer::new(model, chunker, top_k)?;
    state.workers.read(move |_| Ok(scorer.report(&body.a, &body.b, threshold, body.explain)?)).await
}
