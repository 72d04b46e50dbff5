//! What the store benchmarks share: the 100k-chunk collection, its queries, and timing.
#![allow(dead_code)] // each benchmark uses its part

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use ckeep_core::Document;
use ckeep_text::Loader;
use ckeep_text::load::{Format, Source};

pub const MODEL: &str = "all-MiniLM-L6-v2";

pub use ckeep_testkit::data_dir;

pub fn jsonl(path: &Path, prefix: &str) -> Vec<Document> {
    let docs = Loader::default()
        .load(&Source::File(path.to_path_buf(), Format::Jsonl))
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .documents;
    docs.into_iter()
        .map(|mut d| {
            d.id = format!("{prefix}/{}", d.id);
            d
        })
        .collect()
}

pub fn corpus(data: &Path) -> Vec<Document> {
    let mut docs = jsonl(&data.join("beir_scifact/corpus.jsonl"), "scifact");
    docs.extend(jsonl(&data.join("squad_dev/longdoc-v1.1.docs.jsonl"), "squad"));
    docs.extend(jsonl(&data.join("wikitext2_test/articles.jsonl"), "wikitext"));
    let raw = std::fs::read_to_string(data.join("wiki_vital_summaries_en/summaries_en-us.json"))
        .expect("wiki summaries");
    let map: serde_json::Map<String, serde_json::Value> = serde_json::from_str(&raw).unwrap();
    for (id, v) in &map {
        let text = v["extract"].as_str().unwrap_or("");
        if !text.trim().is_empty() {
            docs.push(Document::new(format!("wiki/{id}"), v["title"].as_str().unwrap_or(""), text));
        }
    }
    docs
}

pub fn queries(data: &Path) -> Vec<String> {
    let field = |path: PathBuf, name: &str, take: usize| -> Vec<String> {
        std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
            .lines()
            .take(take)
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()[name].to_string())
            .collect()
    };
    let mut q = field(data.join("beir_scifact/queries.jsonl"), "text", usize::MAX);
    q.extend(field(data.join("squad_dev/longdoc-v1.1.queries.jsonl"), "question", 1000));
    q
}

pub fn percentile(sorted: &[Duration], p: f64) -> f64 {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize].as_secs_f64() * 1e3
}

/// Median, 99th percentile (ms) and throughput (queries/s) of one pass over `queries`.
pub fn measure(queries: &[String], mut run: impl FnMut(&str)) -> (f64, f64, f64) {
    let mut times: Vec<Duration> = queries
        .iter()
        .map(|q| {
            let t = Instant::now();
            run(q);
            t.elapsed()
        })
        .collect();
    times.sort_unstable();
    let total: Duration = times.iter().sum();
    (percentile(&times, 0.5), percentile(&times, 0.99), times.len() as f64 / total.as_secs_f64())
}
