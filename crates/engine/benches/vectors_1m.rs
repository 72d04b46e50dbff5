//! A million real text vectors for the scale benchmarks (`bench/million.sh`): windows of 8, 16,
//! 32 and 64 words (each overlapping the previous by half) over every English text of the
//! 100k-chunk collection (`SciFact`, `SQuAD`, `WikiText-2`, Wikipedia summaries) — a
//! small-to-big index at four sizes — embedded with potion-base-8M (static, so a million
//! embed in seconds). Queries, held out from the collection: the first 100 `SciFact` claims and
//! 100 `SQuAD` questions, which the figures we publish use; and a disjoint tuning set (claims
//! and questions 500-599 of each), the only queries a default such as binary oversampling may
//! be chosen on.
//!
//! Writes `BENCH_DIR/million.base.f32`, `million.queries.f32` and `million.tune.f32` (raw
//! little-endian, 256 dimensions, normalised) unless they exist; `BENCH_ROWS` caps the
//! collection (default 1,000,000).
//!
//! Run: `bench/million.sh` (needs `ckeep model pull potion-base-8M`).

use std::io::Write;
use std::path::Path;
use std::time::Instant;

use ckeep_embed::{Embedder, InputKind};
use rayon::prelude::*;

mod common;

use common::{corpus, data_dir, queries};

const MODEL: &str = "potion-base-8M";
const QUERIES_PER_SET: usize = 100;
/// Where each source's tuning queries start: far from the reported first hundred.
const TUNING_FROM: usize = 500;

/// Windows of `size` words starting every `size / 2` words (one window for shorter texts).
fn windows(words: &[&str], size: usize, out: &mut Vec<String>) {
    let step = (size / 2).max(1);
    let mut start = 0;
    loop {
        let end = (start + size).min(words.len());
        out.push(words[start..end].join(" "));
        if end == words.len() {
            break;
        }
        start += step;
    }
}

fn write_rows(path: &Path, rows: &[Vec<f32>]) {
    let mut file = std::io::BufWriter::new(std::fs::File::create(path).expect("create"));
    for row in rows {
        for x in row {
            file.write_all(&x.to_le_bytes()).expect("write");
        }
    }
    file.flush().expect("flush");
}

fn embed(model: &dyn Embedder, texts: &[String], kind: InputKind) -> Vec<Vec<f32>> {
    texts
        .par_chunks(4096)
        .flat_map_iter(|batch| {
            let refs: Vec<&str> = batch.iter().map(String::as_str).collect();
            let (mut vectors, _) = model.embed(&refs, kind).expect("embed");
            for v in &mut vectors {
                ckeep_embed::normalize(v);
            }
            vectors
        })
        .collect()
}

fn main() {
    let dir = std::env::var("BENCH_DIR").unwrap_or_else(|_| "target/quantize-bench".into());
    let dir = Path::new(&dir);
    std::fs::create_dir_all(dir).expect("BENCH_DIR");
    let (base, held) = (dir.join("million.base.f32"), dir.join("million.queries.f32"));
    let tune = dir.join("million.tune.f32");
    if base.is_file() && held.is_file() && tune.is_file() {
        eprintln!("{} exists; delete it to embed again", base.display());
        return;
    }
    let rows: usize =
        std::env::var("BENCH_ROWS").ok().and_then(|v| v.parse().ok()).unwrap_or(1_000_000);
    let data = data_dir();
    let mut texts = Vec::new();
    for doc in corpus(&data) {
        let words: Vec<&str> = doc.text.split_whitespace().collect();
        if words.is_empty() {
            continue;
        }
        for size in [8, 16, 32, 64] {
            windows(&words, size, &mut texts);
        }
    }
    let total = texts.len();
    // Every k-th window, so a cap keeps all four sizes and every source.
    if total > rows {
        let keep = rows as f64 / total as f64;
        texts = texts
            .into_iter()
            .enumerate()
            .filter(|(i, _)| ((i + 1) as f64 * keep).floor() > (*i as f64 * keep).floor())
            .map(|(_, t)| t)
            .collect();
    }
    let all_queries = queries(&data);
    let squad = all_queries.len() - 1000;
    let mut held_out: Vec<String> = all_queries[..QUERIES_PER_SET].to_vec();
    held_out.extend(all_queries[squad..squad + QUERIES_PER_SET].iter().cloned());
    let mut tuning: Vec<String> = all_queries[TUNING_FROM..TUNING_FROM + QUERIES_PER_SET].to_vec();
    tuning.extend(
        all_queries[squad + TUNING_FROM..squad + TUNING_FROM + QUERIES_PER_SET].iter().cloned(),
    );
    let model = ckeep_embed::load(MODEL).expect("ckeep model pull potion-base-8M");
    let started = Instant::now();
    let vectors = embed(model.as_ref(), &texts, InputKind::Document);
    eprintln!(
        "{} windows of {total} ({} dimensions) embedded with {MODEL} in {:.1} s",
        vectors.len(),
        vectors[0].len(),
        started.elapsed().as_secs_f64()
    );
    write_rows(&base, &vectors);
    write_rows(&held, &embed(model.as_ref(), &held_out, InputKind::Query));
    write_rows(&tune, &embed(model.as_ref(), &tuning, InputKind::Query));
}
