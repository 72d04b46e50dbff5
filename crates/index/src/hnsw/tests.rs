//! The graph against exact search: recall, codes, bytes, filters.

use super::*;

/// Deterministic pseudo-random unit vectors.
pub(super) fn random(n: usize, dim: usize, seed: u64) -> Vec<f32> {
    let mut s = seed;
    let mut out = Vec::with_capacity(n * dim);
    for _ in 0..n {
        let row: Vec<f32> = (0..dim)
            .map(|_| {
                s = s
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                ((s >> 33) as f32 / (1u64 << 31) as f32) - 0.5
            })
            .collect();
        let norm = row.iter().map(|x| x * x).sum::<f32>().sqrt();
        out.extend(row.iter().map(|x| x / norm));
    }
    out
}

fn exact(data: &[f32], dim: usize, q: &[f32], k: usize) -> Vec<u32> {
    exact_live(data, dim, q, k, &[])
}

/// The exact top `k` among rows not marked in `deleted`.
pub(super) fn exact_live(
    data: &[f32],
    dim: usize,
    q: &[f32],
    k: usize,
    deleted: &[bool],
) -> Vec<u32> {
    let mut all: Vec<(u32, f32)> = data
        .chunks_exact(dim)
        .enumerate()
        .filter(|(i, _)| !deleted.get(*i).copied().unwrap_or(false))
        .map(|(i, r)| (i as u32, dot(q, r)))
        .collect();
    all.sort_by(|a, b| b.1.total_cmp(&a.1));
    all.into_iter().take(k).map(|x| x.0).collect()
}

#[test]
fn recall_against_exact_search() {
    let (n, dim) = (5000, 32);
    let data = random(n, dim, 7);
    let g = Hnsw::build(&data, dim, HnswParams::default());
    let queries = random(100, dim, 99);
    let mut hit = 0;
    for q in queries.chunks_exact(dim) {
        let want = exact(&data, dim, q, 10);
        let got: Vec<u32> = g.search(&data, q, 10, 100).into_iter().map(|x| x.0).collect();
        hit += want.iter().filter(|w| got.contains(w)).count();
    }
    let recall = hit as f64 / 1000.0;
    assert!(recall >= 0.95, "recall@10 = {recall}");
}

#[test]
fn int8_codes_walk_the_float_graph_to_the_same_neighbours() {
    let (n, dim) = (5000, 32);
    let data = random(n, dim, 7);
    let g = Hnsw::build(&data, dim, HnswParams::default());
    let codes = crate::Codes::encode(crate::Quantization::Int8, &data, dim).unwrap();
    let queries = random(100, dim, 99);
    let mut hit = 0;
    for q in queries.chunks_exact(dim) {
        let want = exact(&data, dim, q, 10);
        // Twice the candidates, rescored exactly: what the engine does with int8 codes.
        let mut got: Vec<(u32, f32)> = g
            .search_codes(&codes, q, 20, 100)
            .unwrap()
            .into_iter()
            .map(|(i, _)| (i, dot(q, &data[i as usize * dim..(i as usize + 1) * dim])))
            .collect();
        got.sort_by(|a, b| b.1.total_cmp(&a.1));
        hit += want.iter().filter(|w| got[..10].iter().any(|g| g.0 == **w)).count();
    }
    let recall = hit as f64 / 1000.0;
    assert!(recall >= 0.95, "recall@10 through int8 codes = {recall}");
    let binary = crate::Codes::encode(crate::Quantization::Binary, &data, dim).unwrap();
    assert!(g.search_codes(&binary, &queries[..dim], 10, 100).is_none());
    let fewer = crate::Codes::encode(crate::Quantization::Int8, &data[dim..], dim).unwrap();
    assert!(g.search_codes(&fewer, &queries[..dim], 10, 100).is_none());
    assert!(g.search_codes(&codes, &queries[..dim - 1], 10, 100).is_none());
}

#[test]
fn bytes_round_trip_and_garbage_is_refused() {
    let data = random(300, 8, 1);
    let g = Hnsw::build(&data, 8, HnswParams::default());
    let back = Hnsw::from_bytes(&g.to_bytes()).unwrap();
    assert_eq!(back.links, g.links);
    assert_eq!(back.search(&data, &data[..8], 5, 50), g.search(&data, &data[..8], 5, 50));
    assert!(Hnsw::from_bytes(b"not a graph").is_none());
    let mut cut = g.to_bytes();
    cut.truncate(cut.len() / 2);
    assert!(Hnsw::from_bytes(&cut).is_none());
}

#[test]
fn empty_and_single() {
    let g = Hnsw::build(&[], 4, HnswParams::default());
    assert!(g.search(&[], &[1.0, 0.0, 0.0, 0.0], 3, 10).is_empty());
    let one = [1.0, 0.0, 0.0, 0.0];
    let g = Hnsw::build(&one, 4, HnswParams::default());
    assert_eq!(g.search(&one, &one, 3, 10), [(0, 1.0)]);
}

#[test]
fn a_filtered_walk_returns_only_kept_rows_and_finds_them() {
    let (n, dim) = (5000, 32);
    let data = random(n, dim, 7);
    let g = Hnsw::build(&data, dim, HnswParams::default());
    let queries = random(100, dim, 99);
    // Half the rows kept (every other one): the walk must still pass through the others.
    let kept = |row: u32| row.is_multiple_of(2);
    let dropped: Vec<bool> = (0..n as u32).map(|r| !kept(r)).collect();
    let mut hit = 0;
    for q in queries.chunks_exact(dim) {
        let want = exact_live(&data, dim, q, 10, &dropped);
        let got = g.search_filtered(&data, q, 10, 100, kept);
        assert_eq!(got.len(), 10);
        assert!(got.iter().all(|&(row, _)| kept(row)), "a row the filter rejects came back");
        hit += want.iter().filter(|w| got.iter().any(|g| g.0 == **w)).count();
    }
    let recall = hit as f64 / 1000.0;
    assert!(recall >= 0.95, "filtered recall@10 = {recall}");
    // A filter that keeps a single row finds it; one that keeps none finds nothing.
    let q = &queries[..dim];
    assert_eq!(g.search_filtered(&data, q, 10, 100, |r| r == 4321).len(), 1);
    assert!(g.search_filtered(&data, q, 10, 100, |_| false).is_empty());
    let codes = crate::Codes::encode(crate::Quantization::Int8, &data, dim).unwrap();
    let through_codes = g.search_codes_filtered(&codes, q, 10, 100, kept).unwrap();
    assert!(through_codes.iter().all(|&(row, _)| kept(row)));
    assert_eq!(through_codes.len(), 10);
}

#[test]
fn a_walk_given_a_floor_stops_early_yet_keeps_the_rows_above_it() {
    let dim = 16;
    let (data, queries) = (random(3000, dim, 11), random(50, dim, 12));
    let g = Hnsw::build(&data, dim, HnswParams::default());
    let (mut above, mut kept, mut shorter) = (0u32, 0u32, 0u32);
    for q in queries.chunks_exact(dim) {
        let full = g.search(&data, q, 10, 128);
        assert_eq!(g.search_above(&data, q, 10, 128, f32::NEG_INFINITY), full);
        // A floor at the exact 5th best: rows found elsewhere already fill a top 5.
        let truth = exact(&data, dim, q, 5);
        let floor = dot(q, &data[truth[4] as usize * dim..][..dim]);
        let early = g.search_above(&data, q, 10, 128, floor);
        for &(row, score) in full.iter().filter(|f| f.1 >= floor) {
            above += 1;
            kept += u32::from(early.contains(&(row, score)));
        }
        // The walk ended before its beam was spent: its 10th row may be worse.
        shorter += u32::from(early.last().map(|e| e.1) < full.last().map(|f| f.1));
    }
    assert!(above >= 200 && f64::from(kept) >= 0.98 * f64::from(above), "{kept} of {above}");
    assert!(shorter > 0, "a floor never shortened a walk");
}
