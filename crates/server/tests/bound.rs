//! A real server bound to 127.0.0.1 and real HTTP clients: authentication and limits over the
//! wire, concurrent readers beside a writer, and a shutdown that lets an in-flight write commit.
#![allow(clippy::many_single_char_names)] // short names for the clients of one test

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use ckeep_server::{AppState, Limits, ServerConfig};
use ckeep_store::{SqliteStore, StoreRead};
use serde_json::json;

use common::{minilm, scifact};

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
        ("GET", _) => {
            let mut r = agent.get(url);
            if let Some(a) = &auth {
                r = r.header("authorization", a);
            }
            r.call()
        }
        (_, Some(b)) => {
            let mut r = agent.post(url);
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
async fn readers_run_beside_a_writer_and_see_whole_documents() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let limits = Limits { max_body_bytes: 1 << 20, ..Limits::default() };
    let config = ServerConfig { token: Some("tok".into()), limits, ..ServerConfig::default() };
    let state = AppState::open(&store, Some(minilm()), config).unwrap();
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

    // Over the wire: no token, a body over the limit, health without a token.
    let b = base.clone();
    blocking(move || {
        let a = agent();
        let (s, e) = call(&a, "GET", &format!("{b}/stats"), None, None);
        assert_eq!((s, e["error"]["code"].as_str()), (401, Some("unauthorized")));
        // A body announced larger than the limit is refused before it is read.
        let head = format!(
            "POST /documents HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer tok\r\n\
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
    })
    .await;

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
async fn shutdown_lets_the_write_in_flight_commit() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let state = AppState::open(&store, Some(minilm()), ServerConfig::default()).unwrap();
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
    // Shut down while the batch is being embedded.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!write.is_finished(), "the write takes longer than this");
    server.shutdown().await;
    let (status, report) = write.await.unwrap();
    assert_eq!(status, 200, "{report}");
    assert_eq!(report["added"], 80);
    let s = SqliteStore::open(&store).unwrap();
    assert_eq!(s.document_ids().unwrap().len(), 80);
    assert!(s.check().unwrap().is_ok());
    // The port is closed.
    let b = base.clone();
    let refused = blocking(move || agent().get(format!("{b}/health")).call().is_err()).await;
    assert!(refused, "no longer listening");
}
