//! A real server bound to 127.0.0.1 and real HTTP clients: authentication and limits over the
//! wire, concurrent readers beside a writer, and a shutdown that lets an in-flight write commit.
#![allow(clippy::many_single_char_names)] // short names for the clients of one test

use std::sync::Arc;
use std::time::{Duration, Instant};

use ckeep_server::{AppState, Limits, ServerConfig};
use ckeep_store::{SqliteStore, StoreRead};
use serde_json::json;

use crate::common::{Gated, minilm, scifact};

struct Running {
    base: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    served: tokio::task::JoinHandle<std::io::Result<()>>,
}

async fn start(state: Arc<AppState>) -> Running {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let served = tokio::spawn(ckeep_server::serve(listener, state, async {
        let _ = stopped.await;
    }));
    Running { base, stop: Some(stop), served }
}

impl Running {
    async fn shutdown(mut self) {
        let _ = self.stop.take().unwrap().send(());
        self.served.await.unwrap().unwrap();
    }
}

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_mins(2)))
        .build()
        .into()
}

/// Sends `body` (JSON) with the token; returns status and parsed JSON.
fn call(
    agent: &ureq::Agent,
    method: &str,
    url: &str,
    token: Option<&str>,
    body: Option<&serde_json::Value>,
) -> (u16, serde_json::Value) {
    let auth = token.map(|t| format!("Bearer {t}"));
    let mut res = match (method, body) {
        ("GET" | "DELETE", _) => {
            let mut r = if method == "GET" { agent.get(url) } else { agent.delete(url) };
            if let Some(a) = &auth {
                r = r.header("authorization", a);
            }
            r.call()
        }
        (_, Some(b)) => {
            let mut r = if method == "PUT" { agent.put(url) } else { agent.post(url) };
            if let Some(a) = &auth {
                r = r.header("authorization", a);
            }
            r.send_json(b)
        }
        _ => panic!("unsupported call"),
    }
    .unwrap();
    let status = res.status().as_u16();
    let text = res.body_mut().with_config().limit(64 << 20).read_to_string().unwrap();
    (status, serde_json::from_str(&text).unwrap_or(serde_json::Value::Null))
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(f).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "real tier (scripts/test.sh): installed models and ../shared/data"]
async fn readers_run_beside_a_writer_and_see_whole_documents() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let limits = Limits { max_body_bytes: 1 << 20, ..Limits::default() };
    let config = ServerConfig { token: Some("tok".into()), limits, ..ServerConfig::default() };
    let state = AppState::open(&store.display().to_string(), Some(minilm()), config).unwrap();
    let server = start(Arc::clone(&state)).await;
    let base = server.base.clone();
    let docs = scifact(60);
    let first: Vec<serde_json::Value> = docs[..20].to_vec();

    let (b, d) = (base.clone(), first.clone());
    let (status, added) = blocking(move || {
        call(
            &agent(),
            "POST",
            &format!("{b}/documents"),
            Some("tok"),
            Some(&json!({"documents": d})),
        )
    })
    .await;
    assert_eq!(status, 200, "{added}");

    // Eight readers query while the writer adds the other 40 documents one by one. Every read
    // succeeds, and every document a result names is whole: its text is the stored one.
    let started = Instant::now();
    let writer = {
        let (b, rest) = (base.clone(), docs[20..].to_vec());
        tokio::task::spawn_blocking(move || {
            let a = agent();
            let mut acknowledged = Vec::new();
            for d in rest {
                let (s, r) = call(&a, "POST", &format!("{b}/documents"), Some("tok"), Some(&d));
                assert_eq!(s, 200, "{r}");
                acknowledged.push(d["id"].as_str().unwrap().to_string());
            }
            acknowledged
        })
    };
    let mut readers = Vec::new();
    for r in 0..8 {
        let (b, docs) = (base.clone(), docs.clone());
        readers.push(tokio::task::spawn_blocking(move || {
            let a = agent();
            let mut n = 0;
            while n < 15 {
                let q = docs[(r * 7 + n) % docs.len()]["title"].as_str().unwrap();
                let body =
                    json!({"query": q, "mode": "hybrid", "level": "doc", "k": 5, "expand": "doc"});
                let (s, res) = call(&a, "POST", &format!("{b}/search"), Some("tok"), Some(&body));
                assert_eq!(s, 200, "{res}");
                for hit in res["results"].as_array().unwrap() {
                    let want = docs.iter().find(|d| d["id"] == hit["doc_id"]).unwrap();
                    assert_eq!(hit["text"], want["text"], "a whole document, never part of one");
                }
                n += 1;
            }
            n
        }));
    }
    let acknowledged = writer.await.unwrap();
    for r in readers {
        assert_eq!(r.await.unwrap(), 15);
    }
    eprintln!("120 searches beside 40 writes in {:.1} s", started.elapsed().as_secs_f64());
    server.shutdown().await;
    let s = SqliteStore::open(&store).unwrap();
    let stored = s.document_ids().unwrap();
    for id in &acknowledged {
        assert!(stored.contains(id), "acknowledged `{id}` is stored");
    }
    assert_eq!(stored.len(), 60);
    assert!(s.check().unwrap().is_ok());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "real tier (scripts/test.sh): installed models and ../shared/data"]
async fn shutdown_lets_the_write_in_flight_commit() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let model = Gated::new(minilm());
    let gate = Arc::clone(&model.gate);
    let state =
        AppState::open(&store.display().to_string(), Some(model), ServerConfig::default()).unwrap();
    let server = start(Arc::clone(&state)).await;
    let base = server.base.clone();
    let docs = scifact(80);
    let write = {
        let b = base.clone();
        tokio::task::spawn_blocking(move || {
            call(
                &agent(),
                "POST",
                &format!("{b}/documents"),
                None,
                Some(&json!({"documents": docs})),
            )
        })
    };
    // Shut down while the batch is being embedded: it is held at the gate until the server
    // has stopped listening.
    let entered = Arc::clone(&gate);
    blocking(move || entered.entered()).await;
    let stopping = tokio::spawn(server.shutdown());
    let b = base.clone();
    blocking(move || {
        while agent().get(format!("{b}/health")).call().is_ok() {
            std::thread::yield_now();
        }
    })
    .await;
    assert!(!write.is_finished(), "the write is held at the gate");
    gate.open();
    let (status, report) = write.await.unwrap();
    assert_eq!(status, 200, "{report}");
    assert_eq!(report["added"], 80);
    stopping.await.unwrap();
    let s = SqliteStore::open(&store).unwrap();
    assert_eq!(s.document_ids().unwrap().len(), 80);
    assert!(s.check().unwrap().is_ok());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "real tier (scripts/test.sh): installed models and ../shared/data"]
async fn every_endpoint_answers_over_the_wire() {
    let dir = tempfile::tempdir().unwrap();
    let limits = Limits { max_body_bytes: 1 << 20, ..Limits::default() };
    let config = ServerConfig { token: Some("tok".into()), limits, ..ServerConfig::default() };
    let state =
        AppState::open(&dir.path().join("store").display().to_string(), Some(minilm()), config)
            .unwrap();
    let server = start(state).await;
    let b = server.base.clone();
    let docs = json!({"documents": scifact(20)});
    let (status, added) = blocking({
        let b = b.clone();
        move || call(&agent(), "POST", &format!("{b}/documents"), Some("tok"), Some(&docs))
    })
    .await;
    assert_eq!(status, 200, "{added}");
    // Over the wire: no token, a body over the limit, health without a token.
    blocking(move || {
        let a = agent();
        let (s, e) = call(&a, "GET", &format!("{b}/stats"), None, None);
        assert_eq!((s, e["error"]["code"].as_str()), (401, Some("unauthorized")));
        // A body announced larger than the limit is refused before it is read.
        let head = format!(
            "POST /documents HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer tok\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{{",
            2 << 20
        );
        let mut tcp = std::net::TcpStream::connect(b.trim_start_matches("http://")).unwrap();
        tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        std::io::Write::write_all(&mut tcp, head.as_bytes()).unwrap();
        let mut answer = String::new();
        let _ = std::io::Read::read_to_string(&mut tcp, &mut answer);
        assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
        assert!(answer.contains("body_too_large"), "{answer}");
        assert_eq!(call(&a, "GET", &format!("{b}/health"), None, None).0, 200);
        // Every other endpoint over the wire, and the caller's mistakes.
        let t = Some("tok");
        let (s, spec) = call(&a, "GET", &format!("{b}/openapi.json"), None, None);
        assert_eq!((s, spec["openapi"].as_str()), (200, Some("3.1.0")));
        let put = json!({"text": "Tardigrades survive vacuum.", "metadata": {"t": 1}});
        assert_eq!(call(&a, "PUT", &format!("{b}/documents/x/y"), t, Some(&put)).0, 200);
        let (s, got) = call(&a, "GET", &format!("{b}/documents/x/y?spans=0-11"), t, None);
        assert_eq!((s, got["spans"][0]["text"].as_str()), (200, Some("Tardigrades")));
        let (s, list) = call(&a, "GET", &format!("{b}/documents?limit=1"), t, None);
        assert_eq!((s, list["total"].as_u64()), (200, Some(21)));
        let pair =
            json!({"a": "Tardigrades survive vacuum.", "b": "Water bears live through space."});
        let (s, sim) = call(&a, "POST", &format!("{b}/similar"), t, Some(&pair));
        assert!(s == 200 && sim["chunk_pair"].as_f64().unwrap() > 0.3, "{sim}");
        assert_eq!(call(&a, "DELETE", &format!("{b}/documents/x/y"), t, None).0, 204);
        let code =
            |(s, e): (u16, serde_json::Value)| (s, e["error"]["code"].as_str().map(str::to_string));
        let e = code(call(&a, "DELETE", &format!("{b}/documents/x/y"), t, None));
        assert_eq!(e, (404, Some("not_found".into())));
        let e = code(call(&a, "GET", &format!("{b}/search"), t, None));
        assert_eq!(e, (405, Some("method_not_allowed".into())));
        let e =
            code(call(&a, "POST", &format!("{b}/search"), t, Some(&json!({"query": "x", "k": 0}))));
        assert_eq!(e, (422, Some("invalid_parameter".into())));
        let mut res = a
            .post(format!("{b}/search"))
            .header("authorization", "Bearer tok")
            .header("content-type", "application/json")
            .send("{\"query\": ")
            .unwrap();
        assert_eq!(res.status(), 400);
        assert!(res.body_mut().read_to_string().unwrap().contains("invalid_json"));
        let res = a
            .post(format!("{b}/search"))
            .header("authorization", "Bearer tok")
            .header("content-type", "text/plain")
            .send("query")
            .unwrap();
        assert_eq!(res.status(), 415);
    })
    .await;

    server.shutdown().await;
}
