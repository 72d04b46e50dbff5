//! What an operator sees: request ids on every answer (echoed when the client sends one),
//! error bodies that carry them, and Prometheus metrics read by scraping `/metrics`.
//! Fast tier: the deterministic test embedder and a few documents written here.

use std::sync::Arc;

use axum::body::Body;
use axum::http::Request;
use ckeep_server::ServerConfig;
use http_body_util::BodyExt;
use serde_json::json;
use tower::ServiceExt;

use crate::common::TestServer;

fn server() -> TestServer {
    TestServer::with_model(ServerConfig::default(), crate::common::test_model())
}

/// Status, the `x-request-id` header and the body as text.
async fn raw(server: &TestServer, req: Request<Body>) -> (u16, Option<String>, String) {
    let res = ckeep_server::router(Arc::clone(&server.state)).oneshot(req).await.unwrap();
    let status = res.status().as_u16();
    let id = res.headers().get("x-request-id").map(|v| v.to_str().unwrap().to_string());
    let body = res.into_body().collect().await.unwrap().to_bytes();
    (status, id, String::from_utf8(body.to_vec()).unwrap())
}

fn get(uri: &str) -> axum::http::request::Builder {
    Request::get(uri)
}

#[tokio::test]
async fn every_answer_has_a_request_id_and_errors_carry_it() {
    let server = server();
    let (status, id, _) = raw(&server, get("/health").body(Body::empty()).unwrap()).await;
    assert_eq!(status, 200);
    let first = id.expect("a generated id");
    let (_, id, _) = raw(&server, get("/health").body(Body::empty()).unwrap()).await;
    assert_ne!(id.unwrap(), first, "each request its own id");
    // A client's id is kept, so its logs and ours line up; an unusable one is replaced.
    let (status, id, body) = raw(
        &server,
        get("/nope").header("x-request-id", "trace-42.a").body(Body::empty()).unwrap(),
    )
    .await;
    assert_eq!((status, id.as_deref()), (404, Some("trace-42.a")));
    let error: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(error["error"]["request_id"], "trace-42.a", "{error}");
    let long = "x".repeat(200);
    let (_, id, _) =
        raw(&server, get("/health").header("x-request-id", &long).body(Body::empty()).unwrap())
            .await;
    assert_ne!(id.unwrap(), long);
}

#[tokio::test]
async fn metrics_count_requests_by_route_and_status_and_report_the_store() {
    let server = server();
    let docs = json!({"documents": [
        {"id": "rivers", "text": "Rivers carry water to the sea."},
        {"id": "bread", "text": "Bake the bread after the dough rises."},
        {"id": "河流", "text": "河流把水带到大海。"},
    ]});
    assert_eq!(server.post("/documents", &docs).await.0, 200);
    for query in ["water in rivers", "大海"] {
        let (status, res) =
            server.post("/search", &json!({"query": query, "mode": "hybrid"})).await;
        assert_eq!(status, 200, "{res}");
    }
    assert_eq!(server.get("/documents/missing%2Fdoc").await.0, 404);
    assert_eq!(server.get("/no/such/route").await.0, 404);
    let (status, _, text) = raw(&server, get("/metrics").body(Body::empty()).unwrap()).await;
    assert_eq!(status, 200, "{text}");
    let has = |line: &str| text.lines().any(|l| l == line);
    for line in [
        r#"ckeep_http_requests_total{method="POST",route="/search",status="200"} 2"#,
        r#"ckeep_http_requests_total{method="POST",route="/documents",status="200"} 1"#,
        r#"ckeep_http_requests_total{method="GET",route="/documents/{*id}",status="404"} 1"#,
        r#"ckeep_http_requests_total{method="GET",route="unmatched",status="404"} 1"#,
        r#"ckeep_http_request_duration_seconds_count{route="/search"} 2"#,
        "ckeep_documents 3",
        "ckeep_worker_queue_depth 0",
        "ckeep_requests_in_flight 1",
    ] {
        assert!(has(line), "missing {line:?} in:\n{text}");
    }
    assert!(
        !text.contains("missing%2Fdoc") && !text.contains("/no/such"),
        "raw paths are not labels"
    );
    let value = |name: &str| -> f64 {
        let line = text.lines().find(|l| l.starts_with(&format!("{name} "))).unwrap();
        line.rsplit(' ').next().unwrap().parse().unwrap()
    };
    assert!(value("ckeep_chunks") >= 3.0);
    let before = value("ckeep_store_generation");
    assert!(before > 0.0);
    // A write moves the generation the next scrape reports.
    let one = json!({"documents": [{"id": "more", "text": "Another document."}]});
    assert_eq!(server.post("/documents", &one).await.0, 200);
    let (_, _, text) = raw(&server, get("/metrics").body(Body::empty()).unwrap()).await;
    let after: f64 = text
        .lines()
        .find_map(|l| l.strip_prefix("ckeep_store_generation "))
        .unwrap()
        .parse()
        .unwrap();
    assert!(after > before, "{before} -> {after}");
}

/// The `Server-Timing` of a search as (name, milliseconds) pairs.
async fn search_timing(server: &TestServer, body: &serde_json::Value) -> Vec<(String, f64)> {
    let req = Request::post("/search")
        .header("content-type", "application/json")
        .body(Body::from(body.to_string()))
        .unwrap();
    let res = ckeep_server::router(Arc::clone(&server.state)).oneshot(req).await.unwrap();
    assert_eq!(res.status(), 200);
    let header = res.headers().get("server-timing").expect("a Server-Timing header");
    header
        .to_str()
        .unwrap()
        .split(", ")
        .map(|metric| {
            let (name, dur) = metric.split_once(";dur=").expect("name;dur=ms");
            (name.to_string(), dur.parse().expect("milliseconds"))
        })
        .collect()
}

#[tokio::test]
async fn a_search_says_how_long_it_waited_embedded_and_searched() {
    let server = server();
    let docs = json!({"documents": [
        {"id": "rivers", "text": "Rivers carry water to the sea."},
        {"id": "河流", "text": "河流把水带到大海。"},
    ]});
    assert_eq!(server.post("/documents", &docs).await.0, 200);
    for (query, mode) in [("water", "dense"), ("大海", "hybrid"), ("water", "bm25")] {
        let timing = search_timing(&server, &json!({"query": query, "mode": mode})).await;
        let names: Vec<&str> = timing.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["wait", "embed", "search"], "{mode}");
        assert!(timing.iter().all(|(_, ms)| ms.is_finite() && *ms >= 0.0), "{timing:?}");
        if mode == "bm25" {
            assert!(timing[1].1 <= 0.0, "a BM25 search embeds nothing: {timing:?}");
        }
    }
}
