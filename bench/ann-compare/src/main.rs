//! ckeep's HNSW and the hnsw_rs crate on the same unit vectors (files written by
//! `BENCH_DUMP=DIR cargo bench -p ckeep-index --bench hnsw`), same parameters (M 16,
//! ef_construction 200, dot-product distance), both built on all cores and searched on one.
//!
//! Usage: ann-compare DIR NAME DIM [N]   (N: use only the first N base vectors)

use std::time::Instant;

use anndists::dist::DistDot;
use ckeep_index::{Hnsw as Ours, HnswParams, dot_rows};
use hnsw_rs::prelude::Hnsw;

const K: usize = 10;

fn floats(path: &str) -> Vec<f32> {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect()
}

fn exact(base: &[f32], dim: usize, q: &[f32]) -> Vec<usize> {
    let mut scores = Vec::new();
    dot_rows(base, dim, q, &mut scores);
    let mut all: Vec<(usize, f32)> = scores.into_iter().enumerate().collect();
    all.select_nth_unstable_by(K, |a, b| b.1.total_cmp(&a.1));
    all.truncate(K);
    all.into_iter().map(|x| x.0).collect()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (dir, name, dim) = (&args[1], &args[2], args[3].parse::<usize>().unwrap());
    let mut base = floats(&format!("{dir}/{name}.base.f32"));
    if let Some(n) = args.get(4).map(|n| n.parse::<usize>().unwrap()) {
        base.truncate(n * dim);
    }
    let n = base.len() / dim;
    let queries = floats(&format!("{dir}/{name}.queries.f32"));
    let truth: Vec<Vec<usize>> = queries.chunks_exact(dim).map(|q| exact(&base, dim, q)).collect();

    let t = Instant::now();
    let ours = Ours::build(&base, dim, HnswParams::default());
    let ours_build = t.elapsed().as_secs_f64();
    let rows: Vec<Vec<f32>> = base.chunks_exact(dim).map(<[f32]>::to_vec).collect();
    let with_id: Vec<(&Vec<f32>, usize)> = rows.iter().zip(0..).collect();
    let t = Instant::now();
    let theirs = Hnsw::<f32, DistDot>::new(16, n, 16, 200, DistDot {});
    theirs.parallel_insert(&with_id);
    let theirs_build = t.elapsed().as_secs_f64();
    println!(
        "{name}: {n} vectors x {dim}; build ckeep {ours_build:.1} s, hnsw_rs {theirs_build:.1} s ({:.2}x)",
        theirs_build / ours_build
    );
    println!("| ef | ckeep recall@10 | ckeep q/s | hnsw_rs recall@10 | hnsw_rs q/s | q/s ratio ckeep/hnsw_rs |");
    println!("|---|---|---|---|---|---|");
    for ef in [32, 64, 128, 256, 512, 1024] {
        let recall = |found: &[Vec<usize>]| {
            let hit: usize = found
                .iter()
                .zip(&truth)
                .map(|(f, t)| t.iter().filter(|x| f.contains(x)).count())
                .sum();
            hit as f64 / (K * truth.len()) as f64
        };
        let t = Instant::now();
        let ours_found: Vec<Vec<usize>> = queries
            .chunks_exact(dim)
            .map(|q| ours.search(&base, q, K, ef).into_iter().map(|r| r.0 as usize).collect())
            .collect();
        let ours_qps = truth.len() as f64 / t.elapsed().as_secs_f64();
        let t = Instant::now();
        let theirs_found: Vec<Vec<usize>> = queries
            .chunks_exact(dim)
            .map(|q| theirs.search(q, K, ef).into_iter().map(|r| r.d_id).collect())
            .collect();
        let theirs_qps = truth.len() as f64 / t.elapsed().as_secs_f64();
        println!(
            "| {ef} | {:.4} | {ours_qps:.0} | {:.4} | {theirs_qps:.0} | {:.2} |",
            recall(&ours_found),
            recall(&theirs_found),
            ours_qps / theirs_qps
        );
    }
}
