//! What an operator sees: a request id on every answer, one structured log line per request
//! (`tracing`: id, method, route, status, latency), and Prometheus metrics at `/metrics`.
//!
//! Routes are labelled by their template (`/documents/{*id}`), never by the raw path, so a
//! client cannot grow the label set; unmatched paths share one label.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use ckeep_store::StoreRead;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use crate::AppState;
use crate::error::ApiError;

use crate::request_id::REQUEST_ID;
pub use crate::request_id::REQUEST_ID_HEADER;

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    method: String,
    route: String,
    status: u16,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteLabels {
    route: String,
}

fn latency_histogram() -> Histogram {
    // 0.5 ms to about 16 s.
    Histogram::new(exponential_buckets(0.0005, 2.0, 16))
}

/// The server's metrics; the store's figures are read at each scrape.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    latency: Family<RouteLabels, Histogram, fn() -> Histogram>,
    in_flight: Gauge,
    queued: Gauge,
    readers_busy: Gauge,
    generation: Gauge,
    documents: Gauge,
    chunks: Gauge,
    log_lines_dropped: Counter,
    next_id: AtomicU64,
    id_prefix: String,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("ckeep");
        let requests = Family::<RequestLabels, Counter>::default();
        let latency = Family::<RouteLabels, Histogram, fn() -> Histogram>::new_with_constructor(
            latency_histogram,
        );
        let gauges: [Gauge; 6] = Default::default();
        registry.register("http_requests", "HTTP requests answered", requests.clone());
        registry.register(
            "http_request_duration_seconds",
            "Time to answer a request",
            latency.clone(),
        );
        let [in_flight, queued, readers_busy, generation, documents, chunks] = gauges;
        for (name, help, gauge) in [
            ("requests_in_flight", "Requests being answered", &in_flight),
            ("worker_queue_depth", "Requests waiting for a reader or the writer", &queued),
            ("readers_busy", "Reader engines running a job", &readers_busy),
            ("store_generation", "Committed writes to the store, by any writer", &generation),
            ("documents", "Documents in the store", &documents),
            ("chunks", "Chunks in the store", &chunks),
        ] {
            registry.register(name, help, gauge.clone());
        }
        let log_lines_dropped = Counter::default();
        registry.register(
            "log_lines_dropped",
            "Log lines dropped because stderr did not keep up (see crate::logs)",
            log_lines_dropped.clone(),
        );
        // A prefix per process, so ids from two runs of the server do not repeat.
        let seed = format!("{}-{:?}", std::process::id(), std::time::SystemTime::now());
        let id_prefix = blake3::hash(seed.as_bytes()).to_hex()[..8].to_string();
        Self {
            registry,
            requests,
            latency,
            in_flight,
            queued,
            readers_busy,
            generation,
            documents,
            chunks,
            log_lines_dropped,
            next_id: AtomicU64::new(1),
            id_prefix,
        }
    }
}

impl Metrics {
    fn new_request_id(&self) -> String {
        format!("{}-{:06}", self.id_prefix, self.next_id.fetch_add(1, Ordering::Relaxed))
    }
}

/// A request id a client sent, if it is short and plain enough to log and echo back.
fn client_request_id(req: &Request) -> Option<String> {
    let id = req.headers().get(REQUEST_ID_HEADER)?.to_str().ok()?;
    let plain = !id.is_empty()
        && id.len() <= 64
        && id.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.:".contains(&b));
    plain.then(|| id.to_string())
}

/// The outermost layer: gives the request an id (the client's `x-request-id` when sane), runs
/// it with that id in scope, then logs and counts the answer and returns the id in a header.
pub(crate) async fn observe(
    State(state): State<Arc<AppState>>,
    req: Request,
    next: Next,
) -> Response {
    let metrics = &state.metrics;
    let id = client_request_id(&req).unwrap_or_else(|| metrics.new_request_id());
    let method = req.method().to_string();
    let route =
        req.extensions().get::<MatchedPath>().map_or("unmatched", MatchedPath::as_str).to_string();
    let started = Instant::now();
    metrics.in_flight.inc();
    let mut res = REQUEST_ID.scope(id.clone(), next.run(req)).await;
    metrics.in_flight.dec();
    let seconds = started.elapsed().as_secs_f64();
    let status = res.status().as_u16();
    tracing::info!(
        target: "ckeep::http",
        request_id = %id,
        method = %method,
        route = %route,
        status,
        latency_ms = seconds * 1000.0,
        "request"
    );
    metrics.latency.get_or_create(&RouteLabels { route: route.clone() }).observe(seconds);
    metrics.requests.get_or_create(&RequestLabels { method, route, status }).inc();
    if let Ok(value) = HeaderValue::from_str(&id) {
        res.headers_mut().insert(REQUEST_ID_HEADER, value);
    }
    res
}

/// `GET /metrics`: Prometheus' text format, with the store's figures read now.
pub(crate) async fn metrics(State(state): State<Arc<AppState>>) -> Result<Response, ApiError> {
    let (generation, documents, chunks) = state
        .workers
        .read(|e| {
            let store = e.store();
            let _snapshot = ckeep_store::ReadSnapshot::begin(store)?;
            Ok((store.generation()?, store.document_count()?, store.stats()?.chunks))
        })
        .await?;
    let m = &state.metrics;
    m.generation.set(i64::try_from(generation).unwrap_or(i64::MAX));
    m.documents.set(documents as i64);
    m.chunks.set(chunks as i64);
    m.queued.set(state.workers.queued() as i64);
    m.readers_busy.set(state.workers.readers_busy() as i64);
    // The logs count their own drops; the counter catches up at each scrape.
    let dropped = crate::logs::dropped_lines();
    m.log_lines_dropped.inc_by(dropped.saturating_sub(m.log_lines_dropped.get()));
    let mut body = String::new();
    prometheus_client::encoding::text::encode(&mut body, &m.registry)
        .map_err(|e| ApiError::internal(format!("encoding metrics: {e}")))?;
    let content_type = "application/openmetrics-text; version=1.0.0; charset=utf-8";
    Ok(([(axum::http::header::CONTENT_TYPE, content_type)], body).into_response())
}
