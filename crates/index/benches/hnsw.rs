//! HNSW against exact search: recall@10 and queries per second on random unit vectors
//! (`BENCH_N`, default 1,000,000, 384 dimensions like MiniLM; 0 skips them) and, when
//! `BENCH_VECTORS` names a JSON array of vectors (or `ckeep embed --json` output), on those real
//! vectors, the last 200 held out as queries. Sweeps the beam width; single-threaded searches, the
//! query set searched five times at each.
//!
//! `BENCH_RAW=NAME BENCH_RAW_DIR=DIR BENCH_DIM=D` reads `DIR/NAME.base.f32` and
//! `NAME.queries.f32` (raw little-endian, as `bench/million.sh` writes them) instead.
//!
//! `BENCH_DUMP=DIR` also writes each data set's base vectors, queries (raw little-endian f32)
//! and exact top-10 (u32) there, so `bench/hnsw_faiss.py` can run FAISS on the very same input.
//!
//! Run: `cargo bench -p ckeep-index --bench hnsw` (`BENCH_N=100000` for a quicker run), or
//! `bench/hnsw.sh` for real vectors and FAISS side by side.

use std::time::Instant;

use ckeep_index::{Codes, Hnsw, HnswParams, Quantization, dot, dot_rows};

const QUERIES: usize = 200;
const K: usize = 10;
/// Times the query set is searched at each beam width (as in `bench/hnsw_faiss.py`).
const PASSES: usize = 5;

fn random(n: usize, dim: usize, seed: u64) -> Vec<f32> {
    let mut s = seed;
    let mut out = Vec::with_capacity(n * dim);
    for _ in 0..n {
        let start = out.len();
        for _ in 0..dim {
            s = s.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            out.push(((s >> 33) as f32 / (1u64 << 31) as f32) - 0.5);
        }
        normalize(&mut out[start..]);
    }
    out
}

fn normalize(row: &mut [f32]) {
    let norm = row.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
    for x in row {
        *x /= norm;
    }
}

fn exact(data: &[f32], dim: usize, q: &[f32]) -> Vec<u32> {
    let mut scores = Vec::with_capacity(data.len() / dim);
    dot_rows(data, dim, q, &mut scores);
    let mut all: Vec<(u32, f32)> =
        scores.into_iter().enumerate().map(|(i, s)| (i as u32, s)).collect();
    all.select_nth_unstable_by(K, |a, b| b.1.total_cmp(&a.1));
    all.truncate(K);
    all.into_iter().map(|x| x.0).collect()
}

fn run(name: &str, data: &[f32], dim: usize, queries: &[f32]) {
    let n = data.len() / dim;
    let started = Instant::now();
    let graph = Hnsw::build(data, dim, HnswParams::default());
    let build = started.elapsed().as_secs_f64();
    let started = Instant::now();
    let truth: Vec<Vec<u32>> = queries.chunks_exact(dim).map(|q| exact(data, dim, q)).collect();
    let exact_qps = QUERIES as f64 / started.elapsed().as_secs_f64();
    println!(
        "{name}: {n} vectors x {dim}; build {build:.1} s on {} threads; exact scan {exact_qps:.1} queries/s",
        rayon::current_num_threads()
    );
    if let Some(dir) = std::env::var_os("BENCH_DUMP") {
        dump(std::path::Path::new(&dir), name, data, queries, &truth);
    }
    let efs = [32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384];
    sweep(queries, dim, &truth, &efs, exact_qps, |q, ef| graph.search(data, q, K, ef));
    // The same graph walked with int8 codes (a quarter of the float32 rows' memory), twice the
    // candidates rescored exactly: what the engine does for `--quantize int8`.
    let codes = Codes::encode(Quantization::Int8, data, dim).expect("int8 codes");
    let search = |q: &[f32], ef: usize| {
        let mut got: Vec<(u32, f32)> = graph
            .search_codes(&codes, q, 2 * K, ef)
            .expect("codes of the graph's rows")
            .into_iter()
            .map(|(i, _)| (i, dot(q, &data[i as usize * dim..(i as usize + 1) * dim])))
            .collect();
        got.sort_by(|a, b| b.1.total_cmp(&a.1));
        got.truncate(K);
        got
    };
    println!("  int8 codes walking the same graph, 2 x {K} candidates rescored:");
    sweep(queries, dim, &truth, &efs[..6], exact_qps, search);
}

/// Recall@10 against `truth` and single-threaded queries/s of `search` at each beam width,
/// widening until recall reaches 0.99.
fn sweep(
    queries: &[f32],
    dim: usize,
    truth: &[Vec<u32>],
    efs: &[usize],
    exact_qps: f64,
    search: impl Fn(&[f32], usize) -> Vec<(u32, f32)>,
) {
    for &ef in efs {
        let started = Instant::now();
        let mut found = 0;
        for (q, want) in queries.chunks_exact(dim).zip(truth) {
            let got = search(q, ef);
            found += want.iter().filter(|w| got.iter().any(|g| g.0 == **w)).count();
        }
        // Further passes over the same queries, so the rate is not a 50 ms sample.
        for _ in 1..PASSES {
            for q in queries.chunks_exact(dim) {
                std::hint::black_box(search(q, ef));
            }
        }
        let qps = (PASSES * QUERIES) as f64 / started.elapsed().as_secs_f64();
        let recall = found as f64 / (QUERIES * K) as f64;
        println!(
            "  ef {ef:>5}: recall@10 {recall:.4}, {qps:.0} queries/s ({:.1}x exact)",
            qps / exact_qps
        );
        if recall >= 0.99 {
            break;
        }
    }
}

fn dump(dir: &std::path::Path, name: &str, data: &[f32], queries: &[f32], truth: &[Vec<u32>]) {
    std::fs::create_dir_all(dir).expect("BENCH_DUMP directory");
    let floats = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    std::fs::write(dir.join(format!("{name}.base.f32")), floats(data)).expect("write");
    std::fs::write(dir.join(format!("{name}.queries.f32")), floats(queries)).expect("write");
    let ids: Vec<u8> = truth.iter().flatten().flat_map(|x| x.to_le_bytes()).collect();
    std::fs::write(dir.join(format!("{name}.truth.u32")), ids).expect("write");
}

fn read_f32(path: &str) -> Vec<f32> {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect()
}

fn main() {
    // Raw little-endian vectors and queries, as `bench/million.sh` prepares them.
    if let Ok(name) = std::env::var("BENCH_RAW") {
        let dir = std::env::var("BENCH_RAW_DIR").expect("BENCH_RAW_DIR");
        let dim: usize =
            std::env::var("BENCH_DIM").ok().and_then(|v| v.parse().ok()).unwrap_or(384);
        let mut data = read_f32(&format!("{dir}/{name}.base.f32"));
        let mut queries = read_f32(&format!("{dir}/{name}.queries.f32"));
        data.chunks_exact_mut(dim).for_each(normalize);
        queries.chunks_exact_mut(dim).for_each(normalize);
        queries.truncate(QUERIES * dim);
        run(&name, &data, dim, &queries);
        return;
    }
    let n = std::env::var("BENCH_N").ok().and_then(|v| v.parse().ok()).unwrap_or(1_000_000);
    if n > 0 {
        run("random", &random(n, 384, 1), 384, &random(QUERIES, 384, 2));
    }
    if let Ok(path) = std::env::var("BENCH_VECTORS") {
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path).expect("BENCH_VECTORS"))
                .expect("JSON vectors");
        // A bare array of vectors, or `ckeep embed --json` output.
        let rows: Vec<Vec<f32>> =
            serde_json::from_value(json.get("vectors").cloned().unwrap_or(json))
                .expect("an array of vectors");
        let dim = rows[0].len();
        let mut data: Vec<f32> = rows.concat();
        data.chunks_exact_mut(dim).for_each(normalize);
        let (base, queries) = data.split_at(data.len() - QUERIES * dim);
        run("real", base, dim, queries);
    }
}
