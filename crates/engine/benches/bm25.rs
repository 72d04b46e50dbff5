//! BM25-only ingest throughput and query latency, on real corpora, with `SQLite` FTS5 (the
//! fastbookRAG experiment's BM25) measured beside it in the same run.
//!
//! Corpora (from `CKEEP_DATA`, default `../shared/data`):
//! - `SQuAD` v1.1 dev long documents: 48 whole Wikipedia articles (1.6 MB), queried with the first
//!   2,000 `SQuAD` questions;
//! - 10,033 Wikipedia vital-article summaries (4.9 MB), queried with their (non-empty) descriptions.
//!
//! For each corpus: ingest into a fresh on-disk store (load → chunk → analyse → `SQLite`, one
//! transaction per batch), best of 3 runs; then every query once, top-10 chunks with their text,
//! reporting p50/p99 latency. FTS5 gets the same chunks (`porter unicode61` tokenizer, built in
//! one transaction) and the same queries as an OR of their terms, `ORDER BY rank LIMIT 10`.
//!
//! Run: `cargo bench -p ckeep-engine --bench bm25`.

use std::path::Path;
use std::time::{Duration, Instant};

use ckeep_core::Document;
use ckeep_engine::{Engine, SearchRequest};
use ckeep_store::{SqliteStore, StoreRead};
use ckeep_text::load::{Format, Source};
use ckeep_text::{ChunkerSpec, Loader};

const RUNS: usize = 3;

struct Corpus {
    name: &'static str,
    docs: Vec<Document>,
    queries: Vec<String>,
}

use ckeep_testkit::data_dir;

fn squad(data: &Path) -> Corpus {
    let path = data.join("squad_dev/longdoc-v1.1.docs.jsonl");
    let docs =
        Loader::default().load(&Source::File(path, Format::Jsonl)).expect("SQuAD docs").documents;
    let queries = std::fs::read_to_string(data.join("squad_dev/longdoc-v1.1.queries.jsonl"))
        .expect("SQuAD queries")
        .lines()
        .take(2000)
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["question"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    Corpus { name: "squad-longdoc (48 articles)", docs, queries }
}

fn wiki(data: &Path) -> Corpus {
    let raw = std::fs::read_to_string(data.join("wiki_vital_summaries_en/summaries_en-us.json"))
        .expect("wiki summaries");
    let map: serde_json::Map<String, serde_json::Value> = serde_json::from_str(&raw).unwrap();
    let mut docs = Vec::new();
    let mut queries = Vec::new();
    for (id, v) in &map {
        docs.push(Document::new(
            id.clone(),
            v["title"].as_str().unwrap_or(""),
            v["extract"].as_str().unwrap_or(""),
        ));
        if let Some(d) = v["description"].as_str().filter(|d| !d.trim().is_empty()) {
            queries.push(d.to_string());
        }
    }
    docs.retain(|d| !d.text.trim().is_empty());
    Corpus { name: "wiki-vital-summaries (10,033)", docs, queries }
}

fn ingest(corpus: &Corpus, chunker: &ChunkerSpec, dir: &Path) -> (Duration, u64, u64) {
    let _ = std::fs::remove_dir_all(dir);
    let mut engine = Engine::new(SqliteStore::open_or_create(dir).unwrap());
    let started = Instant::now();
    let mut ingest = engine.writer().ingest(chunker).unwrap();
    for d in &corpus.docs {
        ingest.add(d.clone()).unwrap();
    }
    let report = ingest.finish().unwrap();
    (started.elapsed(), report.bytes, report.chunks)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn latency(mut times: Vec<Duration>) -> (Duration, Duration, f64) {
    times.sort_unstable();
    let total: Duration = times.iter().sum();
    (percentile(&times, 0.5), percentile(&times, 0.99), times.len() as f64 / total.as_secs_f64())
}

/// The same chunks in an FTS5 table, built in one transaction.
fn fts5(store: &SqliteStore, dir: &Path) -> (rusqlite::Connection, Duration) {
    let path = dir.join("fts5.sqlite");
    let _ = std::fs::remove_file(&path);
    let mut conn = rusqlite::Connection::open(&path).unwrap();
    conn.pragma_update(None, "journal_mode", "WAL").unwrap();
    conn.execute_batch("CREATE VIRTUAL TABLE fts USING fts5(text, tokenize = 'porter unicode61')")
        .unwrap();
    let mut texts = Vec::new();
    for id in store.document_ids().unwrap() {
        let doc = store.document(&id).unwrap().unwrap().document;
        for c in store.chunks_of(&id).unwrap().into_iter().filter(|c| c.chunk.leaf) {
            texts.push(c.chunk.span.slice(&doc.text).to_string());
        }
    }
    let started = Instant::now();
    let tx = conn.transaction().unwrap();
    {
        let mut ins = tx.prepare("INSERT INTO fts (text) VALUES (?1)").unwrap();
        for t in &texts {
            ins.execute([t]).unwrap();
        }
    }
    tx.commit().unwrap();
    (conn, started.elapsed())
}

fn fts5_query(q: &str) -> Option<String> {
    let terms: Vec<String> = q
        .split(|c: char| !c.is_alphanumeric())
        .filter(|t| !t.is_empty())
        .map(|t| format!("\"{}\"", t.to_lowercase()))
        .collect();
    (!terms.is_empty()).then(|| terms.join(" OR "))
}

fn main() {
    let data = data_dir();
    let tmp = tempfile::tempdir().unwrap();
    let chunkers: [ChunkerSpec; 2] = ["paragraphs".parse().unwrap(), "sentences".parse().unwrap()];
    println!(
        "BM25-only ingest and query, {} cores, best of {RUNS} ingest runs",
        std::thread::available_parallelism().map_or(1, std::num::NonZero::get)
    );
    println!();
    println!(
        "| corpus | chunker | MB | chunks | ingest s | MB/s | chunks/s | FTS5 build s | ckeep p50 ms | ckeep p99 ms | ckeep q/s | FTS5 p50 ms | FTS5 p99 ms | FTS5 q/s | p50 ratio FTS5/ckeep |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for corpus in [squad(&data), wiki(&data)] {
        for chunker in &chunkers {
            let dir = tmp.path().join("store");
            let (best, bytes, chunks) =
                (0..RUNS).map(|_| ingest(&corpus, chunker, &dir)).min_by_key(|r| r.0).unwrap();
            let engine = Engine::new(SqliteStore::open(&dir).unwrap());
            let times: Vec<Duration> = corpus
                .queries
                .iter()
                .map(|q| {
                    let t = Instant::now();
                    let res = engine.search(&SearchRequest::new(q.clone())).unwrap();
                    std::hint::black_box(res);
                    t.elapsed()
                })
                .collect();
            let (p50, p99, qps) = latency(times);
            let (conn, fts_build) = fts5(engine.store(), tmp.path());
            let mut stmt = conn.prepare("SELECT rowid, text, bm25(fts) FROM fts WHERE fts MATCH ?1 ORDER BY rank LIMIT 10").unwrap();
            let fts_times: Vec<Duration> = corpus
                .queries
                .iter()
                .filter_map(|q| fts5_query(q))
                .map(|q| {
                    let t = Instant::now();
                    let rows: Vec<(i64, String, f64)> = stmt
                        .query_map([q], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                        .unwrap()
                        .map(Result::unwrap)
                        .collect();
                    std::hint::black_box(rows);
                    t.elapsed()
                })
                .collect();
            let (f50, f99, fqps) = latency(fts_times);
            let mb = bytes as f64 / 1e6;
            let secs = best.as_secs_f64();
            println!(
                "| {} | {chunker} | {mb:.2} | {chunks} | {secs:.2} | {:.2} | {:.0} | {:.2} | {:.2} | {:.2} | {qps:.0} | {:.2} | {:.2} | {fqps:.0} | {:.2} |",
                corpus.name,
                mb / secs,
                chunks as f64 / secs,
                fts_build.as_secs_f64(),
                p50.as_secs_f64() * 1e3,
                p99.as_secs_f64() * 1e3,
                f50.as_secs_f64() * 1e3,
                f99.as_secs_f64() * 1e3,
                f50.as_secs_f64() / p50.as_secs_f64(),
            );
        }
    }
    println!();
    println!(
        "queries: SQuAD = first 2,000 dev questions; wiki = the non-empty article descriptions."
    );
    println!(
        "ckeep latency includes analysis, postings reads, scoring, top-10 and fetching chunk text."
    );
}
