//! The routes, admission and authentication; the description at `/openapi.json`.

pub(crate) mod ask;
pub(crate) mod documents;
pub(crate) mod evaluate;
pub(crate) mod query;
pub(crate) mod status;

use std::sync::Arc;

use axum::Router;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::header::AUTHORIZATION;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};

use crate::AppState;
use crate::error::{ApiError, ErrorCode};

/// Every route, for the description test: `(method, path)`.
pub const ROUTES: &[(&str, &str)] = &[
    ("get", "/health"),
    ("get", "/stats"),
    ("get", "/openapi.json"),
    ("get", "/metrics"),
    ("get", "/documents"),
    ("post", "/documents"),
    ("get", "/documents/{id}"),
    ("put", "/documents/{id}"),
    ("delete", "/documents/{id}"),
    ("post", "/search"),
    ("post", "/similar"),
    ("post", "/ask"),
    ("get", "/strategy"),
    ("post", "/evaluate"),
    ("get", "/evaluate/{id}"),
    ("post", "/evaluate/{id}/apply"),
];

pub fn router(state: Arc<AppState>) -> Router {
    let body_limit = state.config.limits.max_body_bytes;
    let authed = Router::new()
        .route("/stats", get(status::stats))
        .route("/metrics", get(crate::observe::metrics))
        .route("/documents", get(documents::list).post(documents::add))
        .route(
            "/documents/{*id}",
            get(documents::get).put(documents::put).delete(documents::delete),
        )
        .route("/search", post(query::search))
        .route("/strategy", get(query::strategy))
        .route("/similar", post(query::similar))
        .route("/ask", post(ask::ask))
        .route("/evaluate", post(evaluate::start))
        .route("/evaluate/{id}", get(evaluate::status))
        .route("/evaluate/{id}/apply", post(evaluate::apply))
        .route_layer(axum::middleware::from_fn_with_state(Arc::clone(&state), authenticate));
    Router::new()
        .route("/health", get(status::health))
        .route("/openapi.json", get(openapi))
        .route("/", get(crate::ui::index))
        .route("/ui/{file}", get(crate::ui::asset))
        .merge(authed)
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(body_limit))
        .layer(axum::middleware::from_fn_with_state(Arc::clone(&state), admit))
        .layer(axum::middleware::from_fn_with_state(Arc::clone(&state), crate::guard::guard))
        .layer(axum::middleware::from_fn_with_state(Arc::clone(&state), crate::observe::observe))
        .with_state(state)
}

/// Turns requests beyond `max_in_flight` away at once (503), and bodies announced larger than
/// the limit (413), before their bodies are read. (Bodies without a length are cut at the limit
/// while they are read.)
async fn admit(State(state): State<Arc<AppState>>, req: Request, next: Next) -> Response {
    let announced = req
        .headers()
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let limit = state.config.limits.max_body_bytes;
    if announced.is_some_and(|n| n > limit as u64) {
        return ApiError::new(
            ErrorCode::BodyTooLarge,
            format!("the body is larger than the {limit} bytes this server takes"),
        )
        .into_response();
    }
    let Ok(_permit) = Arc::clone(&state.in_flight).try_acquire_owned() else {
        return ApiError::new(
            ErrorCode::Overloaded,
            format!(
                "{} requests are in flight, the most this server takes; retry later",
                state.config.limits.max_in_flight
            ),
        )
        .into_response();
    };
    next.run(req).await
}

/// Checks `Authorization: Bearer TOKEN` when the server has a token. The two are compared as
/// hashes in constant time (`subtle`), so neither the token's bytes nor its length leak
/// through timing.
async fn authenticate(State(state): State<Arc<AppState>>, req: Request, next: Next) -> Response {
    if let Some(token) = &state.config.token {
        let given = req
            .headers()
            .get(AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .unwrap_or_default();
        let (given, token) = (blake3::hash(given.as_bytes()), blake3::hash(token.as_bytes()));
        if !bool::from(subtle::ConstantTimeEq::ct_eq(&given.as_bytes()[..], &token.as_bytes()[..]))
        {
            let mut res = ApiError::new(
                ErrorCode::Unauthorized,
                "this server needs `Authorization: Bearer TOKEN` with its token",
            )
            .into_response();
            res.headers_mut().insert("www-authenticate", "Bearer".parse().expect("valid header"));
            return res;
        }
    }
    next.run(req).await
}

async fn not_found() -> ApiError {
    ApiError::new(ErrorCode::NotFound, "no such endpoint; the API is described at /openapi.json")
}

async fn method_not_allowed() -> ApiError {
    ApiError::new(ErrorCode::MethodNotAllowed, "this endpoint does not take that method")
}

async fn openapi() -> Response {
    ([(axum::http::header::CONTENT_TYPE, "application/json")], crate::openapi::openapi())
        .into_response()
}
