//! Shared set-up: a store served by the real router with the real all-MiniLM-L6-v2 and SciFact
//! abstracts from `../shared/data`.
#![allow(dead_code, clippy::missing_panics_doc)]

use std::path::PathBuf;
use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use ckeep_embed::Embedder;
use ckeep_server::{AppState, ServerConfig};
use http_body_util::BodyExt;
use tower::ServiceExt;

/// The model, loaded once per test binary.
pub fn minilm() -> Arc<dyn Embedder> {
    ckeep_testkit::model("all-MiniLM-L6-v2")
}

/// The first `n` SciFact abstracts as API documents, with a `year` metadata field alternating
/// 2020/2021 so filters have something to select.
pub fn scifact(n: usize) -> Vec<serde_json::Value> {
    ckeep_testkit::scifact_values(n)
        .into_iter()
        .enumerate()
        .map(|(i, d)| {
            serde_json::json!({
                "id": d["_id"],
                "title": d["title"],
                "text": d["text"],
                "metadata": {"year": 2020 + (i % 2), "corpus": "scifact"},
            })
        })
        .collect()
}

/// The in-repo corpus (`testdata/corpus.jsonl`: English, Chinese, Japanese) as API documents,
/// for the fast tier.
pub fn corpus() -> Vec<serde_json::Value> {
    ckeep_testkit::corpus_values()
}

/// A model whose first embedding call holds until the test opens its gate: a test that must act
/// while a write is being embedded waits for [`Gate::entered`] instead of sleeping and hoping
/// the write is still running.
#[derive(Debug)]
pub struct Gated {
    inner: Arc<dyn Embedder>,
    pub gate: Arc<Gate>,
}

/// The gate of a [`Gated`] model.
#[derive(Debug, Default)]
pub struct Gate {
    /// (a call is waiting at the gate or went through, the gate is open)
    state: std::sync::Mutex<(bool, bool)>,
    changed: std::sync::Condvar,
}

impl Gate {
    /// Waits until an embedding call has reached the gate (it is held there until `open`).
    pub fn entered(&self) {
        let mut state = self.state.lock().unwrap();
        while !state.0 {
            state = self.changed.wait(state).unwrap();
        }
    }

    /// Lets every call through, now and from now on.
    pub fn open(&self) {
        self.state.lock().unwrap().1 = true;
        self.changed.notify_all();
    }

    fn pass(&self) {
        let mut state = self.state.lock().unwrap();
        state.0 = true;
        self.changed.notify_all();
        while !state.1 {
            state = self.changed.wait(state).unwrap();
        }
    }
}

impl Gated {
    pub fn new(inner: Arc<dyn Embedder>) -> Arc<Self> {
        Arc::new(Self { inner, gate: Arc::default() })
    }
}

impl Embedder for Gated {
    fn info(&self) -> &ckeep_embed::ModelInfo {
        self.inner.info()
    }
    fn embed_raw(
        &self,
        texts: &[&str],
    ) -> ckeep_embed::Result<(Vec<Vec<f32>>, ckeep_embed::EmbedStats)> {
        self.gate.pass();
        self.inner.embed_raw(texts)
    }
    fn count_text_tokens(&self, text: &str) -> Option<usize> {
        self.inner.count_text_tokens(text)
    }
    fn token_vectors(
        &self,
        texts: &[&str],
        kind: ckeep_embed::InputKind,
    ) -> ckeep_embed::Result<Vec<ckeep_embed::TokenVectors>> {
        self.gate.pass();
        self.inner.token_vectors(texts, kind)
    }
}

/// The deterministic test embedder of the fast tier.
pub fn test_model() -> Arc<dyn Embedder> {
    Arc::new(ckeep_embed::HashingEmbedder::new(64))
}

/// A server over a fresh store in a temporary directory.
pub struct TestServer {
    pub state: Arc<AppState>,
    pub dir: tempfile::TempDir,
}

impl TestServer {
    pub fn new(config: ServerConfig) -> Self {
        Self::with_model(config, minilm())
    }

    /// A server with another model, e.g. the deterministic `test-hash-DIM` of the fast tier.
    pub fn with_model(config: ServerConfig, model: Arc<dyn Embedder>) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let location = dir.path().join("store").display().to_string();
        let state = AppState::open(&location, Some(model), config).unwrap();
        Self { state, dir }
    }

    pub fn store(&self) -> PathBuf {
        self.dir.path().join("store")
    }

    /// Sends one request through the router; returns status and JSON body (or `Null`).
    pub async fn call(&self, req: Request<Body>) -> (StatusCode, serde_json::Value) {
        let res = ckeep_server::router(Arc::clone(&self.state)).oneshot(req).await.unwrap();
        let status = res.status();
        let bytes = res.into_body().collect().await.unwrap().to_bytes();
        let json = if bytes.is_empty() {
            serde_json::Value::Null
        } else {
            serde_json::from_slice(&bytes).unwrap_or_else(|e| {
                panic!("{status}: not JSON ({e}): {}", String::from_utf8_lossy(&bytes))
            })
        };
        (status, json)
    }

    pub async fn get(&self, uri: &str) -> (StatusCode, serde_json::Value) {
        self.call(Request::get(uri).body(Body::empty()).unwrap()).await
    }

    pub async fn send(
        &self,
        method: &str,
        uri: &str,
        body: impl Into<Body>,
    ) -> (StatusCode, serde_json::Value) {
        let req = Request::builder()
            .method(method)
            .uri(uri)
            .header("content-type", "application/json")
            .body(body.into())
            .unwrap();
        self.call(req).await
    }

    pub async fn post(
        &self,
        uri: &str,
        body: &serde_json::Value,
    ) -> (StatusCode, serde_json::Value) {
        self.send("POST", uri, body.to_string()).await
    }
}

/// Asserts an error answer: status, code and a message.
#[track_caller]
pub fn assert_error(got: &(StatusCode, serde_json::Value), status: u16, code: &str) {
    assert_eq!(got.0.as_u16(), status, "{}", got.1);
    assert_eq!(got.1["error"]["code"], code, "{}", got.1);
    assert!(
        got.1["error"]["message"].as_str().is_some_and(|m| !m.is_empty()),
        "a message: {}",
        got.1
    );
}
