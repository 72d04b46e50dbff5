//! `ckeep serve` as users run it: a real process on a free port, a token file, documents added
//! over HTTP, SIGTERM, and a clean exit with everything committed.

use std::io::{BufRead, BufReader};
use std::process::Stdio;

use crate::{agent, ckeep, fails, json};

#[test]
fn serve_answers_over_http_and_stops_cleanly_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    let token = dir.path().join("token");
    std::fs::write(&token, "t0ken\n").unwrap();
    let mut child = ckeep(&store)
        .args(["--json", "serve", "--addr", "127.0.0.1:0", "--log-format", "json", "--token-file"])
        .arg(&token)
        .env_remove("CKEEP_LOG")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let base = crate::listening(&mut child);

    let a = agent();
    let doc = serde_json::json!({"id": "n1", "text": "Owls hunt at night. Larks sing at dawn."});
    let res = a.post(format!("{base}/documents")).send_json(&doc).unwrap();
    assert_eq!(res.status(), 401, "the token is required");
    let mut res = a
        .post(format!("{base}/documents"))
        .header("authorization", "Bearer t0ken")
        .send_json(&doc)
        .unwrap();
    assert_eq!(res.status(), 200, "{}", res.body_mut().read_to_string().unwrap());
    let mut res = a
        .post(format!("{base}/search"))
        .header("authorization", "Bearer t0ken")
        .send_json(serde_json::json!({"query": "owls at night"}))
        .unwrap();
    let request_id = res.headers()["x-request-id"].to_str().unwrap().to_string();
    let found: serde_json::Value = res.body_mut().read_json().unwrap();
    assert_eq!(found["results"][0]["doc_id"], "n1");
    assert_eq!(found["results"][0]["spans"], serde_json::json!([[0, 39]]));
    // The log has one JSON line for that request, under the id the client was given.
    let mut logs = BufReader::new(child.stderr.take().unwrap());
    let logged = loop {
        let mut line = String::new();
        assert!(logs.read_line(&mut line).unwrap() > 0, "the log ended without the request");
        let Ok(entry) = serde_json::from_str::<serde_json::Value>(&line) else { continue };
        if entry["fields"]["request_id"] == request_id.as_str() {
            break entry;
        }
    };
    assert_eq!(logged["fields"]["route"], "/search", "{logged}");
    assert_eq!(logged["fields"]["status"], 200, "{logged}");
    assert!(logged["fields"]["latency_ms"].as_f64().is_some(), "{logged}");

    let killed = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = child.wait().unwrap();
    assert!(status.success(), "exit status after SIGTERM: {status}");
    // It said what stopping does, and how to cut it short.
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut logs, &mut rest).unwrap();
    assert!(rest.contains("ckeep serve: stopping (finishing requests, saving the vector index; Ctrl-C again stops at once)"), "{rest}");
    let shown = json(&store, &["show", "n1"]);
    assert_eq!(shown["text"], "Owls hunt at night. Larks sing at dawn.");
    json(&store, &["check"]);
}

#[test]
fn serve_refuses_bad_settings_before_it_listens() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    let empty = dir.path().join("empty");
    std::fs::write(&empty, "\n").unwrap();
    let (code, err) = fails(&store, &["serve", "--token-file", empty.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("is empty"), "{err}");
    let (code, err) = fails(&store, &["serve", "--timeout", "0"]);
    assert_eq!(code, 2, "{err}");
    let (code, err) = fails(&store, &["serve", "--addr", "not-an-address"]);
    assert_eq!(code, 2, "{err}");
    // A port that is taken.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let (code, err) = fails(&store, &["serve", "--addr", &addr]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("cannot listen on"), "{err}");
}

/// A stderr nobody drains (a stalled supervisor, `2>&1 | less`) fills its pipe after about
/// 64 KB; the server's log lines must then be dropped and counted, never block the server.
#[test]
fn a_stderr_nobody_reads_never_stops_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    let doc = dir.path().join("owls.txt");
    std::fs::write(&doc, "Owls hunt at night. Larks sing at dawn.").unwrap();
    crate::ok(&store, &["add", doc.to_str().unwrap()]);
    let mut child = ckeep(&store)
        .args(["--json", "serve", "--addr", "127.0.0.1:0"])
        .env_remove("CKEEP_LOG")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Held open and never read: the pipe fills.
    let _stderr = child.stderr.take().unwrap();
    let base = crate::listening(&mut child);
    let a = agent();
    let query = serde_json::json!({"query": "owls at night"});
    for i in 0..2_000 {
        let res = a.post(format!("{base}/search")).send_json(&query).unwrap();
        assert_eq!(res.status(), 200, "request {i}");
    }
    assert_eq!(a.get(format!("{base}/health")).call().unwrap().status(), 200);
    let metrics = a.get(format!("{base}/metrics")).call().unwrap().body_mut().read_to_string();
    let metrics = metrics.unwrap();
    let dropped: u64 = metrics
        .lines()
        .find_map(|l| l.strip_prefix("ckeep_log_lines_dropped_total "))
        .expect("the drop counter in /metrics")
        .parse()
        .unwrap();
    // About 64 KB of lines fit the pipe and 1,024 the queue; the rest of 2,000 are dropped.
    assert!(dropped > 0, "{metrics}");
    child.kill().unwrap();
    child.wait().unwrap();
}

/// Beyond loopback without a token is refused before anything listens, unless the operator
/// says so; a server answers only the hosts it serves.
#[test]
fn serve_refuses_an_open_port_without_a_token_and_unknown_hosts() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    let (code, err) = fails(&store, &["serve", "--addr", "0.0.0.0:0"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--insecure-no-token") && err.contains("--token-file"), "{err}");
    let (mut child, base) = crate::serve_with(&store, &["--allow-host", "search.example"]);
    let a = agent();
    let status = |host: &str| {
        a.get(format!("{base}/health")).header("host", host).call().unwrap().status().as_u16()
    };
    assert_eq!(status("search.example:7700"), 200);
    assert_eq!(status("localhost"), 200);
    assert_eq!(status("evil.example"), 403);
    child.kill().unwrap();
    child.wait().unwrap();
}
