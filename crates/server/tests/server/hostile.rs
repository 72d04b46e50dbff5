//! Hostile clients: every request that once crashed the server, leaked through it or made it
//! call a URL the client named now gets a clear 4xx, the server goes on answering and the
//! store stays whole (`docs/security.md` lists each row).

use std::io::{Read, Write};
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::Request;
use ckeep_server::{AllowedHosts, Limits, ServerConfig};
use ckeep_store::{SqliteStore, StoreRead};
use serde_json::{Value, json};

use crate::common::{TestServer, assert_error, corpus, test_model};

/// A port that must hear nothing: the server calling it is a call a client named.
struct Trap(std::net::TcpListener);

impl Trap {
    fn new() -> Self {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        Self(listener)
    }

    fn url(&self) -> String {
        format!("http://{}", self.0.local_addr().unwrap())
    }

    /// Every request was answered before this is asked, so a call would be waiting here.
    fn assert_untouched(&self) {
        match self.0.accept() {
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Ok((_, from)) => panic!("the server called a URL a client named (from {from})"),
            Err(e) => panic!("{e}"),
        }
    }
}

async fn with_corpus() -> TestServer {
    let server = TestServer::with_model(ServerConfig::default(), test_model());
    let (status, added) = server.post("/documents", &json!({"documents": corpus()})).await;
    assert_eq!(status, 200, "{added}");
    server
}

/// The store is whole and the server still answers.
async fn still_whole(server: &TestServer) {
    let (status, _) = server.get("/health").await;
    assert_eq!(status, 200);
    let (status, found) = server.post("/search", &json!({"query": "tea", "k": 1})).await;
    assert_eq!(status, 200, "{found}");
    let store = SqliteStore::open(&server.store()).unwrap();
    assert!(store.check().unwrap().is_ok());
}

#[tokio::test(flavor = "multi_thread")]
async fn no_route_calls_a_url_or_loads_a_model_the_client_names() {
    let server = with_corpus().await;
    let trap = Trap::new();
    let url = trap.url();
    let strategies = [
        format!("mode=bm25,rerank={url}"),
        format!("mode=dense,model={url}#m"),
        format!("mode=hybrid,models=test-hash-64+{url}#m"),
        format!("mode=dense,repr=summary,summarizer=http:{url}#m"),
        "mode=dense,repr=summary,summarizer=llm:/etc/passwd".to_string(),
        "mode=dense,model=/etc".to_string(),
    ];
    for strategy in &strategies {
        let evaluate = server.post("/evaluate", &json!({"strategies": [strategy]})).await;
        assert_error(&evaluate, 422, "invalid_parameter");
        // Refused by the rule, or (a further model the store lacks) with how to add it.
        let message = evaluate.1["error"]["message"].as_str().unwrap();
        let refused = message.contains("not accepted from a client")
            || message.contains("the store holds vectors of test-hash-64, not of");
        assert!(refused, "{strategy}: {message}");
        for (route, body) in [
            ("/search", json!({"query": "tea", "strategy": strategy})),
            ("/ask", json!({"question": "tea?", "strategy": strategy, "extractive": true})),
        ] {
            let (status, answer) = server.post(route, &body).await;
            assert!((400..500).contains(&status.as_u16()), "{route} {strategy}: {answer}");
        }
    }
    // The parts of a search request said as fields, not a spec, are held to the same rule.
    let fields = json!({"query": "tea", "mode": "bm25", "rerank": url});
    assert!(server.post("/search", &fields).await.0.is_client_error());
    trap.assert_untouched();
    // A failed evaluation's status shows no remote reply either: it never started.
    let (_, listed) = server.get("/evaluate/1").await;
    assert_eq!(listed["state"], "failed", "{listed}");
    still_whole(&server).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn deep_wide_and_long_filters_and_grids_are_refused_and_the_server_stays_up() {
    let server = with_corpus().await;
    let nested = format!("{}lang=en{}", "(".repeat(10_000), ")".repeat(10_000));
    let nots = format!("{}lang=en", "not ".repeat(10_000));
    let terms: Vec<Value> = (0..40_000).map(|i| json!({"year": i})).collect();
    let lists: Vec<String> = (0..40_000).map(|i| format!("year={i}")).collect();
    for filter in [json!([nested]), json!([nots]), json!({"$or": terms}), json!(lists)] {
        let got = server.post("/search", &json!({"query": "tea", "filter": filter})).await;
        assert_error(&got, 422, "invalid_parameter");
    }
    let grid = format!("mode=bm25{}", "{1}".repeat(100_000));
    let got = server.post("/evaluate", &json!({"strategies": [grid]})).await;
    assert_error(&got, 422, "invalid_parameter");
    let long = format!("mode=bm25,k1=1.2{}", ",b=0.7".repeat(2_000));
    let got = server.post("/search", &json!({"query": "tea", "strategy": long})).await;
    assert!(got.0.is_client_error(), "{}", got.1);
    assert!(got.1.to_string().len() < 2_000, "the error does not echo the spec whole");
    still_whole(&server).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_web_page_cannot_drive_the_server() {
    let server = with_corpus().await;
    // A body without a content type (what a cross-site form or `text/plain` fetch sends).
    let doc = json!({"id": "planted", "text": "written by another site's page"}).to_string();
    let req = Request::post("/documents").body(Body::from(doc)).unwrap();
    assert_error(&server.call(req).await, 415, "unsupported_media_type");
    // DNS rebinding: the page's own domain, resolved to 127.0.0.1.
    let req = Request::get("/stats").header("host", "evil.example").body(Body::empty()).unwrap();
    assert_error(&server.call(req).await, 403, "forbidden");
    let req = Request::get("/stats").header("host", "127.0.0.1:7700").body(Body::empty()).unwrap();
    assert_eq!(server.call(req).await.0, 200);
    // A change from another origin, even to a route without a body.
    let req = Request::post("/evaluate/1/apply")
        .header("host", "127.0.0.1:7700")
        .header("origin", "http://evil.example")
        .body(Body::empty())
        .unwrap();
    assert_error(&server.call(req).await, 403, "forbidden");
    let (status, got) = server.get("/documents/planted").await;
    assert_eq!(status, 404, "{got}");
    still_whole(&server).await;
}

/// A server bound to a free port with `limits`; the base URL and the stop switch.
async fn bound(
    limits: Limits,
) -> (TestServer, std::net::SocketAddr, tokio::sync::oneshot::Sender<()>) {
    let config =
        ServerConfig { limits, allowed_hosts: AllowedHosts::new(&[]), ..ServerConfig::default() };
    let server = TestServer::with_model(config, test_model());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(ckeep_server::serve(listener, Arc::clone(&server.state), async {
        let _ = stopped.await;
    }));
    (server, addr, stop)
}

/// `GET /health` on a connection of its own: the status line.
async fn health(addr: std::net::SocketAddr) -> String {
    tokio::task::spawn_blocking(move || {
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        s.write_all(b"GET /health HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n")
            .unwrap();
        let mut answer = String::new();
        s.read_to_string(&mut answer).unwrap();
        answer.lines().next().unwrap_or_default().to_string()
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn idle_and_half_sent_connections_neither_starve_others_nor_stay_open() {
    let limits = Limits { header_timeout: Duration::from_secs(1), ..Limits::default() };
    let (_server, addr, stop) = bound(limits).await;
    // 300 connections that send half a request and wait.
    let idle: Vec<std::net::TcpStream> = (0..300)
        .map(|_| {
            let mut s = std::net::TcpStream::connect(addr).unwrap();
            s.write_all(b"POST /search HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-le").unwrap();
            s
        })
        .collect();
    assert_eq!(health(addr).await, "HTTP/1.1 200 OK");
    // Each is closed once its headers are overdue: the read ends (at the server's close, or
    // its reset) instead of waiting for ever.
    let closed = tokio::task::spawn_blocking(move || {
        idle.into_iter()
            .map(|mut s| {
                let mut rest = Vec::new();
                let _ = s.read_to_end(&mut rest);
            })
            .count()
    })
    .await
    .unwrap();
    assert_eq!(closed, 300);
    assert_eq!(health(addr).await, "HTTP/1.1 200 OK");
    let _ = stop.send(());
}

#[tokio::test(flavor = "multi_thread")]
async fn connections_past_the_cap_wait_for_a_free_one() {
    let limits =
        Limits { header_timeout: Duration::from_secs(1), max_connections: 4, ..Limits::default() };
    let (_server, addr, stop) = bound(limits).await;
    let idle: Vec<std::net::TcpStream> =
        (0..4).map(|_| std::net::TcpStream::connect(addr).unwrap()).collect();
    // The fifth is accepted once the idle ones are dropped for sending nothing.
    assert_eq!(health(addr).await, "HTTP/1.1 200 OK");
    drop(idle);
    let _ = stop.send(());
}
