//! Quantised scans against the exact float32 scan: recall@10 of the exact ranking after
//! rescoring the best `oversample × 10` candidates exactly, queries per second on one thread
//! and on all, and memory per vector, for int8 and binary codes.
//!
//! Reads each `BENCH_DIR/NAME.base.f32` and `NAME.queries.f32` (raw little-endian, as
//! `bench/quantize.sh` writes them) for every name in `BENCH_SETS` (space-separated),
//! `BENCH_DIM` dimensions (default 384), and writes the exact top-10 of each query to
//! `NAME.truth.u32`, so `bench/quantize_faiss.py` runs FAISS against the same ground truth.
//! Where a `NAME.tune.f32` of tuning queries exists, their recall is printed beside each
//! oversampling: defaults are chosen on those, never on the queries the figures report.
//!
//! Run: `bench/quantize.sh` (it prepares the vectors).

use std::time::Instant;

use ckeep_index::{Codes, Quantization, dot, dot_all};

const K: usize = 10;

fn read_f32(path: &str) -> Vec<f32> {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect()
}

/// The exact top-`K` of `q`: every row scored, the best kept.
fn exact_top(data: &[f32], dim: usize, q: &[f32]) -> Vec<u32> {
    best(dot_all(data, dim, q).into_iter().enumerate().map(|(i, s)| (i as u32, s)).collect(), K)
}

fn best(mut all: Vec<(u32, f32)>, k: usize) -> Vec<u32> {
    let order = |a: &(u32, f32), b: &(u32, f32)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
    if all.len() > k {
        all.select_nth_unstable_by(k - 1, order);
        all.truncate(k);
    }
    all.sort_unstable_by(order);
    all.into_iter().map(|x| x.0).collect()
}

/// The codes' best `oversample × K`, rescored exactly with the float rows, best `K` kept.
fn rescored_top(codes: &Codes, data: &[f32], q: &[f32], oversample: usize) -> Vec<u32> {
    let dim = codes.dim();
    let candidates = codes.nearest(q, oversample * K, |_| true);
    let rescored = candidates
        .into_iter()
        .map(|(row, _)| (row, dot(&data[row as usize * dim..(row as usize + 1) * dim], q)))
        .collect();
    best(rescored, K)
}

/// Queries per second of `search` over all queries, in a pool of `threads`.
fn qps(threads: usize, queries: &[f32], dim: usize, search: impl Fn(&[f32]) + Sync) -> f64 {
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("pool");
    pool.install(|| {
        let started = Instant::now();
        queries.chunks_exact(dim).for_each(&search);
        (queries.len() / dim) as f64 / started.elapsed().as_secs_f64()
    })
}

/// recall@10 of the rescored codes against `truth`, the exact top-10 of each query.
fn recall(codes: &Codes, data: &[f32], queries: &[f32], truth: &[u32], oversample: usize) -> f64 {
    let mut found = 0;
    for (q, want) in queries.chunks_exact(codes.dim()).zip(truth.chunks_exact(K)) {
        let got = rescored_top(codes, data, q, oversample);
        found += want.iter().filter(|w| got.contains(w)).count();
    }
    found as f64 / truth.len() as f64
}

fn run(dir: &str, name: &str, dim: usize) {
    let data = read_f32(&format!("{dir}/{name}.base.f32"));
    let queries = read_f32(&format!("{dir}/{name}.queries.f32"));
    let truth: Vec<u32> =
        queries.chunks_exact(dim).flat_map(|q| exact_top(&data, dim, q)).collect();
    let tune_path = format!("{dir}/{name}.tune.f32");
    let tuning = std::path::Path::new(&tune_path).is_file().then(|| {
        let queries = read_f32(&tune_path);
        let truth: Vec<u32> =
            queries.chunks_exact(dim).flat_map(|q| exact_top(&data, dim, q)).collect();
        (queries, truth)
    });
    let bytes: Vec<u8> = truth.iter().flat_map(|x| x.to_le_bytes()).collect();
    std::fs::write(format!("{dir}/{name}.truth.u32"), bytes).expect("write the truth");
    let n = data.len() / dim;
    let threads = rayon::current_num_threads();
    let exact1 = qps(1, &queries, dim, |q| drop(exact_top(&data, dim, q)));
    let exact_all = qps(threads, &queries, dim, |q| drop(exact_top(&data, dim, q)));
    println!(
        "{name}: {n} vectors x {dim}, {} queries; float32 scan: {exact1:.1} q/s (1 thread), {exact_all:.1} q/s ({threads}), {} bytes/vector",
        queries.len() / dim,
        4 * dim
    );
    for kind in [Quantization::Int8, Quantization::Binary] {
        let started = Instant::now();
        let codes = Codes::encode(kind, &data, dim).expect("a quantisation");
        let encode = started.elapsed().as_secs_f64();
        let per_vector = codes.memory() as f64 / n as f64;
        println!(
            "  {kind}: encoded in {encode:.2} s, {per_vector:.0} bytes/vector ({:.1}x less)",
            (4 * dim) as f64 / per_vector
        );
        for oversample in [1, 2, 3, 5, 7, 10, 15, 20] {
            let reported = recall(&codes, &data, &queries, &truth, oversample);
            let tuned = tuning.as_ref().map_or(String::new(), |(queries, truth)| {
                format!(
                    " (tuning queries {:.4})",
                    recall(&codes, &data, queries, truth, oversample)
                )
            });
            let one = qps(1, &queries, dim, |q| drop(rescored_top(&codes, &data, q, oversample)));
            let all = qps(threads, &queries, dim, |q| {
                drop(rescored_top(&codes, &data, q, oversample));
            });
            let default = if oversample == kind.default_oversample() { " (default)" } else { "" };
            println!(
                "    oversample {oversample:>2}{default}: recall@10 {reported:.4}{tuned}; {one:.1} q/s 1 thread ({:.2}x float32), {all:.1} q/s {threads} ({:.2}x)",
                one / exact1,
                all / exact_all
            );
        }
    }
}

fn main() {
    let dir = std::env::var("BENCH_DIR").unwrap_or_else(|_| "target/quantize-bench".into());
    let dim = std::env::var("BENCH_DIM").ok().and_then(|v| v.parse().ok()).unwrap_or(384);
    let sets = std::env::var("BENCH_SETS").unwrap_or_default();
    if sets.trim().is_empty() {
        eprintln!("quantize bench: set BENCH_SETS (bench/quantize.sh does); skipped");
    }
    for name in sets.split_whitespace() {
        run(&dir, name, dim);
    }
}
