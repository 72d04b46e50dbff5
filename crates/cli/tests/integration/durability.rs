//! `ckeep add` killed with SIGKILL in the middle of a large ingest: afterwards the store checks
//! out, every document is fully present or absent, and re-running the same add completes it.

use std::time::{Duration, Instant};

use ckeep_store::{SqliteStore, StoreRead};

use crate::{ckeep, data_dir, json};

/// The 10,033 Wikipedia summaries as JSONL.
fn wiki_jsonl(dir: &std::path::Path) -> std::path::PathBuf {
    let raw =
        std::fs::read_to_string(data_dir().join("wiki_vital_summaries_en/summaries_en-us.json"))
            .unwrap();
    let map: serde_json::Map<String, serde_json::Value> = serde_json::from_str(&raw).unwrap();
    let mut out = String::new();
    for (id, v) in &map {
        let line = serde_json::json!({"id": id, "title": v["title"], "text": v["extract"]});
        out.push_str(&line.to_string());
        out.push('\n');
    }
    let path = dir.join("wiki.jsonl");
    std::fs::write(&path, out).unwrap();
    path
}

fn documents(store: &std::path::Path) -> u64 {
    SqliteStore::open(store).and_then(|s| s.stats()).map_or(0, |s| s.documents)
}

#[test]
#[ignore = "real tier (scripts/test.sh): installed models and ../shared/data"]
fn sigkill_during_add_loses_nothing_acknowledged_and_rerun_completes() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = wiki_jsonl(dir.path());
    let corpus = corpus.to_str().unwrap();
    let store = dir.path().join("s");
    let reference = dir.path().join("ref");
    let full = json(&reference, &["add", corpus, "--chunker", "sentences"]);
    assert_eq!(full["added"], 10_033);

    let mut child = ckeep(&store).args(["add", corpus, "--chunker", "sentences"]).spawn().unwrap();
    let started = Instant::now();
    while documents(&store) == 0 {
        assert!(started.elapsed() < Duration::from_mins(2), "ingest never started");
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().unwrap(); // SIGKILL
    let status = child.wait().unwrap();
    assert!(!status.success(), "the ingest was killed before it finished");

    let killed = SqliteStore::open(&store).unwrap();
    let report = killed.check().unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
    let present = killed.stats().unwrap().documents;
    assert!(present > 0 && present < 10_033, "killed mid-way: {present} documents present");
    // Every present document is complete: same text and the same chunks as a clean ingest.
    let full_store = SqliteStore::open(&reference).unwrap();
    for id in killed.document_ids().unwrap() {
        let got = killed.document(&id).unwrap().unwrap();
        let want = full_store.document(&id).unwrap().unwrap();
        assert_eq!(got.document.text, want.document.text);
        assert_eq!(got.chunks, want.chunks, "{id}");
    }
    drop(killed);

    let rerun = json(&store, &["add", corpus]);
    assert_eq!(rerun["unchanged"].as_u64().unwrap(), present);
    assert_eq!(rerun["added"].as_u64().unwrap(), 10_033 - present);
    let done = SqliteStore::open(&store).unwrap();
    assert!(done.check().unwrap().is_ok());
    let (a, b) = (done.stats().unwrap(), full_store.stats().unwrap());
    assert_eq!((a.documents, a.chunks, &a.lexical), (b.documents, b.chunks, &b.lexical));
}

/// Documents of `store` without plain vectors (all of them before the model came).
fn lacking_vectors(store: &std::path::Path) -> usize {
    let store = SqliteStore::open(store).unwrap();
    store.documents_lacking(ckeep_store::Lacking::Vectors("plain")).unwrap().len()
}

/// A BM25 store given a model later (`add --model` without inputs), killed with SIGKILL while
/// it embeds: the store stays a clean BM25 store, the rerun embeds only what is left, and dense
/// search then answers exactly as on a store built with the model from the start.
#[test]
#[ignore = "real tier (scripts/test.sh): installed models and ../shared/data"]
fn a_bm25_store_gains_a_model_and_survives_sigkill_while_embedding() {
    const DOCS: usize = 1000;
    const MODEL: &str = "all-MiniLM-L6-v2";
    let dir = tempfile::tempdir().unwrap();
    let all = std::fs::read_to_string(wiki_jsonl(dir.path())).unwrap();
    let corpus = dir.path().join("wiki1000.jsonl");
    let lines: Vec<&str> = all.lines().take(DOCS).collect();
    std::fs::write(&corpus, lines.join("\n") + "\n").unwrap();
    let corpus = corpus.to_str().unwrap();
    let store = dir.path().join("s");
    json(&store, &["add", corpus]);

    let mut child = ckeep(&store).args(["add", "--model", MODEL]).spawn().unwrap();
    let started = Instant::now();
    while lacking_vectors(&store) == DOCS {
        assert!(started.elapsed() < Duration::from_mins(3), "embedding never started");
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().unwrap(); // SIGKILL
    assert!(!child.wait().unwrap().success(), "killed before it finished");
    let left = lacking_vectors(&store);
    assert!(left > 0, "killed mid-way");
    let killed = SqliteStore::open(&store).unwrap();
    assert!(killed.check().unwrap().is_ok());
    assert_eq!(killed.manifest().unwrap().model, None, "still a BM25 store to readers");
    drop(killed);
    let (code, err) = crate::fails(&store, &["search", "river", "--mode", "dense"]);
    assert_eq!(code, 2);
    assert!(err.contains("ckeep add --model"), "{err}");

    let rerun = json(&store, &["add", "--model", MODEL]);
    assert_eq!(rerun["derived"][0]["documents"], left, "only what was left: {rerun}");
    assert_eq!(lacking_vectors(&store), 0);
    let again = json(&store, &["add", "--model", MODEL]);
    assert!(again["derived"].is_null() || again["derived"] == serde_json::json!([]), "{again}");

    let fresh = dir.path().join("fresh");
    json(&fresh, &["add", corpus, "--model", MODEL]);
    let (a, b) = (SqliteStore::open(&store).unwrap(), SqliteStore::open(&fresh).unwrap());
    assert!(a.check().unwrap().is_ok());
    let (ma, mb) = (a.manifest().unwrap(), b.manifest().unwrap());
    assert_eq!(
        (&ma.model, &ma.model_fingerprint, &ma.representations),
        (&mb.model, &mb.model_fingerprint, &mb.representations)
    );
    for query in ["the longest river in Africa", "quantum mechanics", "Renaissance painters"] {
        let results = |s: &std::path::Path| {
            let res = json(s, &["search", query, "--mode", "dense", "-k", "10"]);
            res["results"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| (r["doc_id"].clone(), r["spans"].clone(), r["score"].as_f64().unwrap()))
                .collect::<Vec<_>>()
        };
        let (got, want) = (results(&store), results(&fresh));
        assert_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(&want) {
            assert_eq!((&g.0, &g.1), (&w.0, &w.1), "{query}");
            assert!((g.2 - w.2).abs() < 1e-6, "{query}: {} vs {}", g.2, w.2);
        }
    }
}

/// `ckeep serve` (BM25 only, so the fast tier runs it) killed with SIGKILL while four clients
/// add documents over HTTP: after a restart the store checks clean and holds every document
/// whose add was acknowledged (200), whole, whatever was in flight.
#[test]
fn sigkill_during_concurrent_http_writes_loses_nothing_acknowledged() {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};

    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    let (mut child, base) = crate::serve(&store);
    let text = |c: usize, i: usize| format!("Client {c} wrote document {i}. 第{i}号文档。");
    let acknowledged = Arc::new(Mutex::new(Vec::new()));
    let (count, stop) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicBool::new(false)));
    let clients: Vec<_> = (0..4)
        .map(|c| {
            let (base, acknowledged) = (base.clone(), Arc::clone(&acknowledged));
            let (count, stop) = (Arc::clone(&count), Arc::clone(&stop));
            std::thread::spawn(move || {
                let agent = crate::agent();
                for i in 0.. {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let doc = serde_json::json!({"id": format!("c{c}-{i}"), "text": text(c, i)});
                    match agent.post(format!("{base}/documents")).send_json(&doc) {
                        Ok(res) if res.status() == 200 => {
                            acknowledged.lock().unwrap().push((c, i));
                            count.fetch_add(1, Ordering::SeqCst);
                        }
                        // Refused or cut off by the kill: not acknowledged.
                        _ => break,
                    }
                }
            })
        })
        .collect();
    // Killed once writes are well under way (a condition, not a clock).
    while count.load(Ordering::SeqCst) < 200 {
        std::thread::yield_now();
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    stop.store(true, Ordering::SeqCst);
    for client in clients {
        client.join().unwrap();
    }
    let killed = SqliteStore::open(&store).unwrap();
    assert!(killed.check().unwrap().is_ok(), "the store checks clean after the kill");
    let acknowledged = acknowledged.lock().unwrap().clone();
    assert!(acknowledged.len() >= 200);
    for (c, i) in acknowledged {
        let id = format!("c{c}-{i}");
        let doc = killed.document(&id).unwrap().unwrap_or_else(|| panic!("{id} was acknowledged"));
        assert_eq!(doc.document.text, text(c, i));
    }
    // The server starts again on the same store.
    drop(killed);
    let (mut again, base) = crate::serve(&store);
    let res = crate::agent().get(format!("{base}/health")).call().unwrap();
    assert_eq!(res.status(), 200);
    again.kill().unwrap();
    again.wait().unwrap();
}
