//! A collection held as one large graph plus small segments (what a server under writes
//! searches): each graph walked with the full beam, against the large graph first and each
//! later walk stopped once it cannot beat the rows already found (`Hnsw::search_above`).
//! Reports time per query of both and their recall@10 against exact search over all rows,
//! for float32 rows and for int8 codes, paired: the two ways alternate query by query.
//!
//! Reads `DIR/million.base.f32` and `million.queries.f32` (256-dimensional potion-base-8M
//! vectors of real sentences, as `bench/segments.sh` writes them; `BENCH_RAW_DIR`, default
//! `target/quantize-bench`): the first `BENCH_BASE` rows (default 100,000) are the large
//! graph, the next `BENCH_SEGMENTS` × `BENCH_SEGMENT_ROWS` (default 4 × 5,000) the segments.
//! `BENCH_QUERIES=tune` searches `million.tune.f32` instead: the set the early stop's depth
//! was chosen on, kept apart from the reported one.
//!
//! Run: `cargo bench -p ckeep-index --bench segment_walks`.

use std::time::Instant;

use ckeep_index::{Codes, Hnsw, HnswParams, Quantization, dot_rows};

const DIM: usize = 256;
const K: usize = 10;
/// Rows each walk asks for: the int8 search's oversampled top 10 (2 × 10).
const ASKED: usize = 20;
const EF: usize = 128;
const PASSES: usize = 5;

fn env(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn read_f32(path: &str, rows: usize) -> Vec<f32> {
    let bytes =
        std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e} (run bench/segments.sh)"));
    let want = rows.min(bytes.len() / 4 / DIM) * DIM;
    bytes.chunks_exact(4).take(want).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect()
}

/// One graph and the rows (global row numbers start at `offset`) it was built over.
struct Part {
    offset: u32,
    data: Vec<f32>,
    codes: Codes,
    graph: Hnsw,
}

/// The best `K` global rows of `found` (global row, score).
fn top(mut found: Vec<(u32, f32)>) -> Vec<u32> {
    found.sort_by(|a, b| b.1.total_cmp(&a.1));
    found.into_iter().take(K).map(|f| f.0).collect()
}

/// The `k`-th best score of `found`, or −∞.
fn kth(found: &[(u32, f32)], k: usize) -> f32 {
    if found.len() < k {
        return f32::NEG_INFINITY;
    }
    let mut s: Vec<f32> = found.iter().map(|f| f.1).collect();
    s.select_nth_unstable_by(k - 1, |a, b| b.total_cmp(a));
    s[k - 1]
}

/// Every part walked for `q`, with `floor` shared (or not): the best `K` global rows.
fn search(parts: &[Part], q: &[f32], codes: bool, shared: bool) -> Vec<u32> {
    let mut found: Vec<(u32, f32)> = Vec::new();
    for p in parts {
        let floor = if shared { kth(&found, ASKED) } else { f32::NEG_INFINITY };
        let hits = if codes {
            p.graph.search_codes_above(&p.codes, q, ASKED, EF, floor).expect("int8 codes")
        } else {
            p.graph.search_above(&p.data, q, ASKED, EF, floor)
        };
        found.extend(hits.into_iter().map(|(r, s)| (r + p.offset, s)));
    }
    top(found)
}

fn main() {
    let dir = std::env::var("BENCH_RAW_DIR").unwrap_or_else(|_| {
        concat!(env!("CARGO_MANIFEST_DIR"), "/../../target/quantize-bench").into()
    });
    let (base, segments, seg_rows) =
        (env("BENCH_BASE", 100_000), env("BENCH_SEGMENTS", 4), env("BENCH_SEGMENT_ROWS", 5_000));
    let all = read_f32(&format!("{dir}/million.base.f32"), base + segments * seg_rows);
    let set = std::env::var("BENCH_QUERIES").unwrap_or_else(|_| "queries".into());
    let queries = read_f32(&format!("{dir}/million.{set}.f32"), 200);
    let started = Instant::now();
    let mut parts = Vec::new();
    let mut offset = 0;
    for rows in std::iter::once(base).chain(std::iter::repeat_n(seg_rows, segments)) {
        let data = all[offset * DIM..(offset + rows) * DIM].to_vec();
        let graph = Hnsw::build(&data, DIM, HnswParams::default());
        let codes = Codes::encode(Quantization::Int8, &data, DIM).expect("int8");
        parts.push(Part { offset: offset as u32, data, codes, graph });
        offset += rows;
    }
    println!(
        "{} rows: a graph of {base} and {segments} of {seg_rows}, built in {:.1} s; {} queries, k {K}, asked {ASKED}, ef {EF}",
        offset,
        started.elapsed().as_secs_f64(),
        queries.len() / DIM
    );
    let truth: Vec<Vec<u32>> = queries
        .chunks_exact(DIM)
        .map(|q| {
            let mut scores = Vec::new();
            dot_rows(&all, DIM, q, &mut scores);
            top(scores.into_iter().enumerate().map(|(i, s)| (i as u32, s)).collect())
        })
        .collect();
    for codes in [false, true] {
        let mut time = [0.0f64; 2];
        let mut hits = [0usize; 2];
        for _ in 0..PASSES {
            for (q, truth) in queries.chunks_exact(DIM).zip(&truth) {
                for (i, shared) in [false, true].into_iter().enumerate() {
                    let t = Instant::now();
                    let got = search(&parts, q, codes, shared);
                    time[i] += t.elapsed().as_secs_f64();
                    hits[i] += got.iter().filter(|r| truth.contains(r)).count();
                }
            }
        }
        let n = (PASSES * truth.len()) as f64;
        let kind = if codes { "int8" } else { "float32" };
        for (i, way) in ["every walk full", "later walks stop early"].into_iter().enumerate() {
            println!(
                "{kind} {way}: {:.3} ms per query, recall@10 {:.4}",
                time[i] / n * 1e3,
                hits[i] as f64 / (n * K as f64)
            );
        }
        println!("{kind} time early/full: {:.2}", time[1] / time[0]);
    }
}
