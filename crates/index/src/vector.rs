//! Vector kernels shared by exact search, HNSW and the model code: dot products compiled for the
//! widest instruction set the CPU offers, chosen at run time (the build targets the SSE2
//! baseline, so without dispatch every loop would be four lanes wide).

// The kernels must inline into the dispatched function to be compiled for its instruction set.
#![allow(clippy::inline_always)]

/// Runs `f` compiled for the best instruction set this CPU has (AVX-512 or AVX2/FMA where
/// present), so plain loops inside it auto-vectorise wider than the SSE2 baseline. `f` must
/// inline into `with_simd` for that to happen, hence the wrapper type with an `inline(always)`
/// body.
#[inline(always)]
pub fn simd<R>(f: impl FnOnce() -> R) -> R {
    struct Run<F>(F);
    impl<R, F: FnOnce() -> R> pulp::WithSimd for Run<F> {
        type Output = R;
        #[inline(always)]
        fn with_simd<S: pulp::Simd>(self, _: S) -> R {
            (self.0)()
        }
    }
    #[cfg(target_arch = "x86_64")]
    if !avx512_allowed()
        && let Some(avx2) = pulp::x86::V3::try_new()
    {
        return pulp::Simd::vectorize(avx2, Run(f));
    }
    pulp::Arch::new().dispatch(Run(f))
}

/// False when `CKEEP_SIMD=avx2` caps our own kernels at AVX2 on a CPU with AVX-512: how
/// `bench/embed_speed.sh` measures an AVX2-only host on an AVX-512 one. Read once. (faer's
/// matrix products choose for themselves and keep AVX-512.)
pub fn avx512_allowed() -> bool {
    static ALLOWED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ALLOWED.get_or_init(|| std::env::var_os("CKEEP_SIMD").is_none_or(|v| v != "avx2"))
}

/// `Σ aᵢbᵢ` with 32 independent accumulators: four AVX2 registers, enough to hide the latency
/// of the additions.
#[inline(always)]
fn dot_lanes(a: &[f32], b: &[f32]) -> f32 {
    const LANES: usize = 32;
    let mut acc = [0f32; LANES];
    let (ca, cb) = (a.chunks_exact(LANES), b.chunks_exact(LANES));
    let tail: f32 = ca.remainder().iter().zip(cb.remainder()).map(|(x, y)| x * y).sum();
    for (x, y) in ca.zip(cb) {
        for i in 0..LANES {
            acc[i] += x[i] * y[i];
        }
    }
    acc.iter().sum::<f32>() + tail
}

/// The dot product of two equally long vectors.
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    simd(
        #[inline(always)]
        || dot_lanes(a, b),
    )
}

/// The dot product of `q` with every `dim`-long row of `rows`, appended to `out`: one dispatch
/// for the whole block, so this is what a scan over many vectors should call. A plain loop, not
/// `extend(map(…))`: `Vec::extend`'s internal fold is not always inlined, and out of line it is
/// compiled for the SSE2 baseline with `dot_lanes` inside it (the scan ran 12 % slower so).
pub fn dot_rows(rows: &[f32], dim: usize, q: &[f32], out: &mut Vec<f32>) {
    out.reserve(rows.len() / dim.max(1));
    simd(
        #[inline(always)]
        || {
            for row in rows.chunks_exact(dim) {
                out.push(dot_lanes(row, q));
            }
        },
    );
}

/// `q`'s dot products with four rows at once: one pass over `q` for all four, and four
/// independent streams of row loads in flight, which is what a graph walk's scattered rows
/// need (FAISS's `fvec_inner_product_batch_4` does the same).
#[inline(always)]
fn dot4_lanes(q: &[f32], rows: [&[f32]; 4]) -> [f32; 4] {
    const LANES: usize = 16;
    let len = q.len();
    let rows = rows.map(|r| &r[..len]);
    let (qc, qt) = q.as_chunks::<LANES>();
    let [c0, c1, c2, c3] = rows.map(|r| &r.as_chunks::<LANES>().0[..qc.len()]);
    let (mut a0, mut a1, mut a2, mut a3) =
        ([0f32; LANES], [0f32; LANES], [0f32; LANES], [0f32; LANES]);
    for (c, x) in qc.iter().enumerate() {
        let (y0, y1, y2, y3) = (&c0[c], &c1[c], &c2[c], &c3[c]);
        for i in 0..LANES {
            a0[i] += x[i] * y0[i];
            a1[i] += x[i] * y1[i];
            a2[i] += x[i] * y2[i];
            a3[i] += x[i] * y3[i];
        }
    }
    let acc = [a0, a1, a2, a3];
    let tail = len - qt.len();
    std::array::from_fn(|r| {
        let rest: f32 = qt.iter().zip(&rows[r][tail..]).map(|(x, y)| x * y).sum();
        acc[r].iter().sum::<f32>() + rest
    })
}

/// The dot products of `q` with the rows `ids` of `data` (row-major, `dim` wide), into `out`
/// (cleared first), four rows at a time under one dispatch.
pub fn dot_rows_at(data: &[f32], dim: usize, q: &[f32], ids: &[u32], out: &mut Vec<f32>) {
    out.clear();
    let row = |i: u32| &data[i as usize * dim..(i as usize + 1) * dim];
    simd(
        #[inline(always)]
        || {
            let (fours, rest) = ids.as_chunks::<4>();
            for four in fours {
                out.extend_from_slice(&dot4_lanes(q, four.map(row)));
            }
            for &i in rest {
                out.push(dot_lanes(row(i), q));
            }
        },
    );
}

/// Rows scored per parallel task of [`dot_all`].
const ROWS_PER_TASK: usize = 4096;

/// The dot product of `q` with every `dim`-long row of `rows`, in row order, scanned on all
/// cores: the exact search's kernel.
pub fn dot_all(rows: &[f32], dim: usize, q: &[f32]) -> Vec<f32> {
    use rayon::prelude::*;
    rows.par_chunks(ROWS_PER_TASK * dim.max(1))
        .flat_map_iter(|block| {
            let mut out = Vec::with_capacity(ROWS_PER_TASK);
            dot_rows(block, dim, q, &mut out);
            out
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dot_matches_the_plain_sum_at_every_length() {
        for len in [0, 1, 7, 31, 32, 33, 384, 389] {
            let a: Vec<f32> = (0..len).map(|i| (i as f32 * 0.37).sin()).collect();
            let b: Vec<f32> = (0..len).map(|i| (i as f32 * 0.11).cos()).collect();
            let plain: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
            assert!((dot(&a, &b) - plain).abs() < 1e-4, "length {len}");
        }
    }

    #[test]
    fn the_parallel_scan_equals_the_sequential_one() {
        let rows: Vec<f32> = (0..9000 * 4).map(|i| ((i * 37) % 101) as f32 / 101.0).collect();
        let q = [0.5, -1.0, 0.25, 2.0];
        let mut want = Vec::new();
        dot_rows(&rows, 4, &q, &mut want);
        assert_eq!(dot_all(&rows, 4, &q), want);
    }

    #[test]
    fn rows_picked_by_id_score_as_one_by_one() {
        let (dim, n) = (37, 11);
        let data: Vec<f32> = (0..dim * n).map(|i| ((i * 53) % 97) as f32 / 97.0 - 0.5).collect();
        let q: Vec<f32> = (0..dim).map(|i| (i as f32 * 0.3).cos()).collect();
        for ids in [&[][..], &[3], &[0, 10, 4, 4], &[9, 1, 2, 3, 5, 6, 7, 8, 0]] {
            let mut got = vec![7.0];
            dot_rows_at(&data, dim, &q, ids, &mut got);
            let want: Vec<f32> =
                ids.iter().map(|&i| dot(&q, &data[i as usize * dim..][..dim])).collect();
            assert_eq!(got.len(), want.len());
            for (g, w) in got.iter().zip(&want) {
                assert!((g - w).abs() < 1e-5, "{ids:?}: {g} against {w}");
            }
        }
    }

    #[test]
    fn rows_are_scored_in_order() {
        let rows: Vec<f32> = (0..12).map(|i| i as f32).collect();
        let mut out = vec![-1.0];
        dot_rows(&rows, 3, &[1.0, 0.0, 1.0], &mut out);
        assert_eq!(out, [-1.0, 2.0, 8.0, 14.0, 20.0]);
    }
}
