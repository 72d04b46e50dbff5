//! Load test for `ckeep serve`: N clients query for a fixed time while one more client adds
//! documents; then every acknowledged document is read back. Stops by itself.
//!
//! ```text
//! cargo run --release -p ckeep-server --example load -- \
//!     --url http://127.0.0.1:7700 --queries queries.jsonl --docs new_docs.jsonl \
//!     [--clients 32] [--seconds 60] [--batch 5] [--pid SERVER_PID] [--token T]
//! ```
//! `--queries`: JSONL with `text` (BEIR queries); `--docs`: JSONL with `_id`/`id`, `text`,
//! optional `title` (BEIR corpus). With `--pid`, the server's resident memory is sampled each
//! second. With `--visible-after`, that long after each acknowledged write one more client
//! searches densely for the batch's first document by its opening text and counts whether it is
//! found (how fresh dense search is under writes). Prints one JSON report on stdout.
#![allow(clippy::missing_panics_doc)]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

struct Args {
    url: String,
    token: Option<String>,
    queries: String,
    docs: String,
    clients: usize,
    seconds: u64,
    batch: usize,
    pid: Option<u32>,
    strategy: String,
    visible_after: Option<Duration>,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        url: "http://127.0.0.1:7700".into(),
        token: None,
        queries: String::new(),
        docs: String::new(),
        clients: 32,
        seconds: 60,
        batch: 5,
        pid: None,
        strategy: "mode=hybrid,level=doc,k=10".into(),
        visible_after: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--url" => a.url = value()?,
            "--token" => a.token = Some(value()?),
            "--queries" => a.queries = value()?,
            "--docs" => a.docs = value()?,
            "--clients" => a.clients = value()?.parse().map_err(|e| format!("--clients: {e}"))?,
            "--seconds" => a.seconds = value()?.parse().map_err(|e| format!("--seconds: {e}"))?,
            "--batch" => a.batch = value()?.parse().map_err(|e| format!("--batch: {e}"))?,
            "--pid" => a.pid = Some(value()?.parse().map_err(|e| format!("--pid: {e}"))?),
            "--strategy" => a.strategy = value()?,
            "--visible-after" => {
                let s: f64 = value()?.parse().map_err(|e| format!("--visible-after: {e}"))?;
                a.visible_after = Some(
                    Duration::try_from_secs_f64(s).map_err(|e| format!("--visible-after: {e}"))?,
                );
            }
            other => return Err(format!("unknown flag {other}")),
        }
    }
    if a.queries.is_empty() || a.docs.is_empty() {
        return Err("--queries and --docs are required".into());
    }
    Ok(a)
}

fn jsonl(path: &str) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{path}: {e}"))
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_mins(2)))
        .build()
        .into()
}

/// POSTs JSON; returns the status (0: transport error) and the body.
fn post(agent: &ureq::Agent, url: &str, token: Option<&str>, body: &Value) -> (u16, String) {
    let (status, body, _) = post_timed(agent, url, token, body);
    (status, body)
}

/// [`post`], plus the answer's `Server-Timing` metrics (name, milliseconds).
fn post_timed(
    agent: &ureq::Agent,
    url: &str,
    token: Option<&str>,
    body: &Value,
) -> (u16, String, Vec<(String, f64)>) {
    let mut req = agent.post(url);
    if let Some(t) = token {
        req = req.header("authorization", &format!("Bearer {t}"));
    }
    match req.send_json(body) {
        Ok(mut res) => {
            let status = res.status().as_u16();
            let timing = res
                .headers()
                .get("server-timing")
                .and_then(|v| v.to_str().ok())
                .map(server_timing)
                .unwrap_or_default();
            let body =
                res.body_mut().with_config().limit(64 << 20).read_to_string().unwrap_or_default();
            (status, body, timing)
        }
        Err(e) => (0, e.to_string(), Vec::new()),
    }
}

/// `wait;dur=0.1, embed;dur=0.05, search;dur=1.3` as (name, milliseconds) pairs.
fn server_timing(header: &str) -> Vec<(String, f64)> {
    header
        .split(',')
        .filter_map(|metric| {
            let mut parts = metric.trim().split(';');
            let name = parts.next()?.to_string();
            let dur = parts.find_map(|p| p.trim().strip_prefix("dur="))?.parse().ok()?;
            Some((name, dur))
        })
        .collect()
}

/// p50/p90/p99 of `values` (sorted here).
fn percentiles(mut values: Vec<f64>) -> Value {
    values.sort_by(f64::total_cmp);
    json!({
        "p50": percentile(&values, 0.5),
        "p90": percentile(&values, 0.9),
        "p99": percentile(&values, 0.99),
    })
}

fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// For each acknowledged write `(id, opening text, when)`, `after` past its acknowledgement:
/// whether a dense search for its opening text finds it among the documents of the top 10
/// chunks. Returns
/// (checked, found).
fn freshness_checks(
    writes: &std::sync::mpsc::Receiver<(String, String, Instant)>,
    url: &str,
    token: Option<&str>,
    after: Duration,
) -> (usize, usize) {
    let agent = agent();
    let (mut checked, mut found) = (0, 0);
    for (id, opening, at) in writes {
        std::thread::sleep((at + after).saturating_duration_since(Instant::now()));
        let body = json!({"query": opening, "strategy": "mode=dense,k=10"});
        let (status, answer) = post(&agent, url, token, &body);
        if status != 200 {
            continue;
        }
        checked += 1;
        let ids: Vec<String> = serde_json::from_str::<Value>(&answer)
            .ok()
            .and_then(|v| v["results"].as_array().cloned())
            .unwrap_or_default()
            .iter()
            .filter_map(|r| r["doc_id"].as_str().map(str::to_string))
            .collect();
        found += usize::from(ids.contains(&id));
    }
    (checked, found)
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

#[allow(clippy::too_many_lines)]
fn main() {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("load: {e}");
            std::process::exit(2);
        }
    };
    let queries: Arc<Vec<String>> = Arc::new(
        jsonl(&args.queries)
            .iter()
            .filter_map(|q| q["text"].as_str().map(str::to_string))
            .collect(),
    );
    let docs = jsonl(&args.docs);
    let stop = Arc::new(AtomicBool::new(false));
    let latencies: Arc<Mutex<Vec<f64>>> = Arc::default();
    // The server's own account of each query: (wait, embed, search) in ms.
    let server_side: Arc<Mutex<Vec<[f64; 3]>>> = Arc::default();
    let failures: Arc<Mutex<Vec<String>>> = Arc::default();
    let started = Instant::now();
    let deadline = started + Duration::from_secs(args.seconds);

    let memory = args.pid.map(|pid| {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            let mut samples = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                if let Some(kib) = rss_kib(pid) {
                    samples.push(kib);
                }
                std::thread::sleep(Duration::from_secs(1));
            }
            samples
        })
    });

    let clients: Vec<_> = (0..args.clients)
        .map(|c| {
            let (queries, latencies, failures, server_side) = (
                Arc::clone(&queries),
                Arc::clone(&latencies),
                Arc::clone(&failures),
                Arc::clone(&server_side),
            );
            let (url, token, strategy) =
                (format!("{}/search", args.url), args.token.clone(), args.strategy.clone());
            std::thread::spawn(move || {
                let agent = agent();
                let mut mine = Vec::new();
                let mut timings = Vec::new();
                let mut i = c * 7919;
                while Instant::now() < deadline {
                    let q = &queries[i % queries.len()];
                    i += 1;
                    let t = Instant::now();
                    let (status, body, timing) = post_timed(
                        &agent,
                        &url,
                        token.as_deref(),
                        &json!({"query": q, "strategy": strategy}),
                    );
                    mine.push(t.elapsed().as_secs_f64() * 1000.0);
                    if status != 200 {
                        failures.lock().unwrap().push(format!("search {status}: {body}"));
                    }
                    let ms = |name: &str| timing.iter().find(|(n, _)| n == name).map(|(_, d)| *d);
                    if let (Some(w), Some(e), Some(s)) = (ms("wait"), ms("embed"), ms("search")) {
                        timings.push([w, e, s]);
                    }
                }
                latencies.lock().unwrap().extend(mine);
                server_side.lock().unwrap().extend(timings);
            })
        })
        .collect();

    let (written, checks) = std::sync::mpsc::channel::<(String, String, Instant)>();
    let freshness = args.visible_after.map(|after| {
        let (url, token) = (format!("{}/search", args.url), args.token.clone());
        std::thread::spawn(move || freshness_checks(&checks, &url, token.as_deref(), after))
    });
    let ingest = {
        let (failures, url, token) =
            (Arc::clone(&failures), format!("{}/documents", args.url), args.token.clone());
        let batch = args.batch.max(1);
        std::thread::spawn(move || {
            let agent = agent();
            let mut acknowledged: Vec<(String, String)> = Vec::new();
            let mut latencies = Vec::new();
            // The documents, then again under new ids, until the time is up.
            let rounds = (0..)
                .take_while(|_| !docs.is_empty())
                .flat_map(|round| docs.chunks(batch).map(move |c| (round, c)));
            for (round, chunk) in rounds {
                if Instant::now() >= deadline {
                    break;
                }
                let documents: Vec<Value> = chunk
                    .iter()
                    .map(|d| {
                        let id = d.get("_id").or_else(|| d.get("id")).cloned().unwrap_or_default();
                        let id = id.as_str().map_or_else(|| id.to_string(), str::to_string);
                        json!({
                            "id": if round == 0 { id } else { format!("{id}-r{round}") },
                            "title": d.get("title").cloned().unwrap_or_else(|| json!("")),
                            "text": d["text"],
                        })
                    })
                    .collect();
                let t = Instant::now();
                let (status, body) =
                    post(&agent, &url, token.as_deref(), &json!({"documents": documents}));
                latencies.push(t.elapsed().as_secs_f64() * 1000.0);
                if status == 200 {
                    let first = &documents[0];
                    let text = first["text"].as_str().unwrap_or_default();
                    let opening: String = text.chars().take(200).collect();
                    let id = first["id"].as_str().unwrap_or_default().to_string();
                    let _ = written.send((id, opening, Instant::now()));
                    for d in &documents {
                        acknowledged.push((
                            d["id"].as_str().unwrap_or_default().to_string(),
                            d["text"].as_str().unwrap_or_default().to_string(),
                        ));
                    }
                } else {
                    failures.lock().unwrap().push(format!("ingest {status}: {body}"));
                }
            }
            (acknowledged, latencies)
        })
    };

    for c in clients {
        c.join().expect("client thread");
    }
    let (acknowledged, mut ingest_ms) = ingest.join().expect("ingest thread");
    let (checked, visible) =
        freshness.map(|f| f.join().expect("freshness thread")).unwrap_or_default();
    let elapsed = started.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    let rss = memory.map(|m| m.join().expect("memory thread")).unwrap_or_default();

    // Every acknowledged document is there, byte for byte.
    let agent = agent();
    let mut missing = 0;
    for (id, text) in &acknowledged {
        let mut req = agent.get(format!("{}/documents/{}", args.url, encode(id)));
        if let Some(t) = &args.token {
            req = req.header("authorization", &format!("Bearer {t}"));
        }
        let ok = req.call().ok().and_then(|mut r| {
            (r.status() == 200).then(|| r.body_mut().read_json::<Value>().ok()).flatten()
        });
        if ok.is_none_or(|v| v["text"].as_str() != Some(text.as_str())) {
            missing += 1;
        }
    }

    let mut lat = latencies.lock().unwrap().clone();
    lat.sort_by(f64::total_cmp);
    ingest_ms.sort_by(f64::total_cmp);
    let failures = failures.lock().unwrap().clone();
    let server_side = server_side.lock().unwrap().clone();
    let stage = |i: usize| percentiles(server_side.iter().map(|t| t[i]).collect());
    let report = json!({
        "clients": args.clients,
        "seconds": elapsed,
        "strategy": args.strategy,
        "queries": lat.len(),
        "queries_per_second": lat.len() as f64 / elapsed,
        "latency_ms": {"p50": percentile(&lat, 0.5), "p90": percentile(&lat, 0.9), "p99": percentile(&lat, 0.99), "max": lat.last()},
        // From each answer's Server-Timing: waiting for a reader, embedding the query, and
        // the search itself (what the index costs, without the model or the queue).
        "server_ms": (!server_side.is_empty()).then(|| json!({
            "wait": stage(0),
            "embed": stage(1),
            "search": stage(2),
        })),
        "failed_requests": failures.len(),
        "failures_sample": failures.iter().take(5).collect::<Vec<_>>(),
        "ingest": {
            "documents_acknowledged": acknowledged.len(),
            "requests": ingest_ms.len(),
            "documents_per_second": acknowledged.len() as f64 / elapsed,
            "latency_ms": {"p50": percentile(&ingest_ms, 0.5), "p99": percentile(&ingest_ms, 0.99)},
            "missing_after_run": missing,
        },
        "dense_freshness": args.visible_after.map(|after| json!({
            "seconds_after_acknowledgement": after.as_secs_f64(),
            "checked": checked,
            "found": visible,
        })),
        "server_rss_mib": (!rss.is_empty()).then(|| json!({
            "first": rss[0] as f64 / 1024.0,
            "max": *rss.iter().max().unwrap_or(&0) as f64 / 1024.0,
            "last": *rss.last().unwrap_or(&0) as f64 / 1024.0,
            "every_10s": rss.iter().step_by(10).map(|k| (*k as f64 / 1024.0).round()).collect::<Vec<_>>(),
        })),
    });
    println!("{}", serde_json::to_string_pretty(&report).unwrap_or_default());
    if !failures.is_empty() || missing > 0 {
        std::process::exit(1);
    }
}

/// Percent-encodes a document id for a path (keeping `/`, which the route accepts).
fn encode(id: &str) -> String {
    id.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}
