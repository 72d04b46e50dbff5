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
