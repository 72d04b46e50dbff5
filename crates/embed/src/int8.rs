//! The encoder's linear layers in 8-bit integers (`--precision int8`): weights quantised once
//! per output row and block of 32 inputs, activations per token row and block as they arrive,
//! products summed exactly in i32.
//!
//! Why it can be faster: one integer instruction multiplies four times as many byte pairs as an
//! f32 FMA multiplies numbers, and a weight matrix is a quarter of the bytes. The kernel follows
//! the usual packed layout (fbgemm, oneDNN): weights in panels of 16 output columns × 4 inputs,
//! so four bytes of one token's activations, broadcast, meet 16 columns at once and every
//! accumulator holds finished outputs (no horizontal sums). It is dispatched at run time to the
//! best of: AVX-512 VNNI (`vpdpbusd`: multiply, sum by four and accumulate in one instruction),
//! AVX-512 BW and AVX2 (`vpmaddubsw`, `vpmaddwd`, `vpaddd`), or scalar code. What it gains
//! depends on the CPU; `docs/benchmarks/performance.md` has the measurements.
//!
//! `vpmaddubsw` multiplies unsigned by signed bytes and saturates pairs at 16 bits. Weights are
//! quantised to 7 bits, [−63, 63], and stored plus 64 as unsigned bytes; activations take the
//! full [−127, 127]. A pair then sums to at most 2·127·127 = 32,258, so nothing saturates and
//! the integer sums are exact, on every path alike, so a store's vectors do not depend on the
//! CPU that embedded them; the offset's share, 64·Σa, is subtracted once per block.
//!
//! `pulp`'s `V3`/`V4` tokens prove AVX2 or AVX-512 is there and make their intrinsics safe to
//! call. `pulp` has no VNNI token, so that path is the crate's one `unsafe` call: into a
//! function compiled for AVX-512 VNNI, after the CPU was seen to have it.

// Linear algebra in its own notation; `inline(always)` so code inlines into the AVX2 context.
#![allow(clippy::many_single_char_names, clippy::inline_always)]

use ckeep_index::simd;
#[cfg(target_arch = "x86_64")]
use pulp::x86::{V3, V4};
use rayon::prelude::*;
#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::{__m256, __m256i, __m512i};

/// Output columns per weight panel (two AVX2 registers of sums per token row).
const PANEL: usize = 16;
/// Token rows per kernel call: 4 rows × 2 registers = 8 integer accumulators.
const TILE_ROWS: usize = 4;
/// What 7-bit weights are stored plus, to make them unsigned bytes.
const OFFSET: i32 = 64;
/// Inputs per activation scale. A token's activations are quantised in blocks of 32 (as
/// llama.cpp's `Q8_0`), not as one row: BERT's hidden states have a few channels far larger than
/// the rest, and with one scale per row such a channel would set the step for all of them.
const BLOCK: usize = 32;
/// Groups of four inputs (one broadcast) per block.
const GROUPS_PER_BLOCK: usize = BLOCK / 4;

/// A linear layer's weights as int8, packed for the kernel.
pub(crate) struct QuantLinear {
    /// Panels of `PANEL` output columns; inside a panel, for every 4 inputs, 16 columns × 4
    /// bytes (64 bytes, one broadcast's worth).
    packed: Vec<[u8; 4 * PANEL]>,
    /// Per panel, block of inputs and output column (in that order): the weight scale
    /// (`w ≈ (q − 64) · scale`). Scales per block of 32 make up for the seventh bit.
    scale: Vec<f32>,
    inp: usize,
    out: usize,
}

/// Whether a layer of this shape can be quantised (the packing needs whole panels and blocks;
/// every BERT size has them).
pub(crate) fn supports(out: usize, inp: usize) -> bool {
    out.is_multiple_of(PANEL) && inp.is_multiple_of(BLOCK) && out > 0 && inp > 0
}

impl QuantLinear {
    /// Quantises `[out, inp]` row-major weights: each output row's blocks of 32 inputs to
    /// [−63, 63] by their largest magnitude, stored plus 64.
    pub(crate) fn new(w: &[f32], out: usize, inp: usize) -> Self {
        debug_assert!(supports(out, inp) && w.len() == out * inp);
        let (groups, blocks) = (inp / 4, inp / BLOCK);
        let mut q = vec![0i8; out * inp];
        let mut scale = vec![0f32; out * blocks];
        for (o, (row, q)) in w.chunks_exact(inp).zip(q.chunks_exact_mut(inp)).enumerate() {
            let (panel, c) = (o / PANEL, o % PANEL);
            let blocks_of = row.as_chunks::<BLOCK>().0.iter().zip(q.as_chunks_mut::<BLOCK>().0);
            for (b, (w, q)) in blocks_of.enumerate() {
                scale[(panel * blocks + b) * PANEL + c] = quantize(w, q, 63.0);
            }
        }
        let mut packed = vec![[0u8; 4 * PANEL]; out / PANEL * groups];
        for (p, panel) in packed.chunks_exact_mut(groups).enumerate() {
            for (g, block) in panel.iter_mut().enumerate() {
                for c in 0..PANEL {
                    let row = (p * PANEL + c) * inp + g * 4;
                    for k in 0..4 {
                        // In [1, 127] by construction.
                        block[c * 4 + k] = (i32::from(q[row + k]) + OFFSET) as u8;
                    }
                }
            }
        }
        Self { packed, scale, inp, out }
    }

    /// `out = x · Wᵀ + b (+ residual)` for `x` `[n, inp]` row-major.
    pub(crate) fn forward(
        &self,
        x: &[f32],
        bias: &[f32],
        out: &mut [f32],
        residual: Option<&[f32]>,
    ) {
        let n = x.len() / self.inp;
        let (groups, blocks) = (self.inp / 4, self.inp / BLOCK);
        // Four quantised activations per i32, so one load broadcasts them.
        let mut xq = vec![0i32; n * groups];
        let mut xs = vec![0f32; n * blocks];
        let mut xo = vec![0i32; n * blocks];
        let rows = rows_per_task(n);
        xq.par_chunks_mut(rows * groups)
            .zip(xs.par_chunks_mut(rows * blocks))
            .zip(xo.par_chunks_mut(rows * blocks))
            .zip(x.par_chunks(rows * self.inp))
            .for_each(|(((q, s), o), x)| {
                simd(
                    #[inline(always)]
                    || quantize_activations(x, q, s, o),
                );
            });
        #[cfg(target_arch = "x86_64")]
        let avx512 = V4::try_new().filter(|_| ckeep_index::avx512_allowed());
        #[cfg(target_arch = "x86_64")]
        let avx2 = V3::try_new();
        #[cfg(target_arch = "x86_64")]
        let vnni = avx512.is_some() && std::arch::is_x86_feature_detected!("avx512vnni");
        out.par_chunks_mut(rows * self.out).enumerate().for_each(|(task, out)| {
            let first = task * rows;
            let count = out.len() / self.out;
            let job = Rows {
                xq: &xq[first * groups..(first + count) * groups],
                xs: &xs[first * blocks..(first + count) * blocks],
                xo: &xo[first * blocks..(first + count) * blocks],
                bias,
                residual: residual.map(|r| &r[first * self.out..(first + count) * self.out]),
            };
            #[cfg(target_arch = "x86_64")]
            if vnni {
                // SAFETY: the CPU has AVX-512 F, BW and VNNI (checked above), all that
                // `rows_vnni` is compiled for.
                #[allow(unsafe_code)]
                return unsafe { self.rows_vnni(&job, out) };
            }
            #[cfg(target_arch = "x86_64")]
            if let Some(simd) = avx512 {
                return simd.vectorize(
                    #[inline(always)]
                    || self.rows(&job, out, |a, panel| self.tile_avx512(simd, a, panel)),
                );
            }
            #[cfg(target_arch = "x86_64")]
            if let Some(simd) = avx2 {
                return simd.vectorize(
                    #[inline(always)]
                    || self.rows(&job, out, |a, panel| self.tile_avx2(simd, a, panel)),
                );
            }
            self.rows(&job, out, |a, panel| self.tile_scalar(a, panel));
        });
    }

    /// One tile's products (`TILE_ROWS` token rows × one panel): per block, the exact integer
    /// sum times the block's activation and weight scales, summed in f32.
    fn tile_scalar(&self, a: Tile<'_>, panel: usize) -> [[f32; PANEL]; TILE_ROWS] {
        let (groups, blocks) = (self.inp / 4, self.inp / BLOCK);
        let weights = &self.packed[panel * groups..(panel + 1) * groups];
        let w_scales = &self.scale[panel * blocks * PANEL..(panel + 1) * blocks * PANEL];
        let mut acc = [[0f32; PANEL]; TILE_ROWS];
        for (b, weights) in weights.chunks_exact(GROUPS_PER_BLOCK).enumerate() {
            for (r, acc) in acc.iter_mut().enumerate() {
                let mut sums = [-a.xo[r * blocks + b]; PANEL];
                for (g, w) in weights.iter().enumerate() {
                    let x = a.xq[r * groups + b * GROUPS_PER_BLOCK + g].to_le_bytes();
                    for (c, sum) in sums.iter_mut().enumerate() {
                        for (k, &x) in x.iter().enumerate() {
                            *sum += i32::from(x as i8) * i32::from(w[c * 4 + k]);
                        }
                    }
                }
                let scale = a.xs[r * blocks + b];
                let w_scale = &w_scales[b * PANEL..(b + 1) * PANEL];
                for ((acc, &sum), &w_scale) in acc.iter_mut().zip(&sums).zip(w_scale) {
                    *acc += sum as f32 * (scale * w_scale);
                }
            }
        }
        acc
    }

    /// The same with AVX2: per 4 inputs and token row one broadcast, and per 8 columns
    /// `vpmaddubsw`, `vpmaddwd`, `vpaddd`; per block, the offset's subtraction and one FMA.
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    fn tile_avx2(&self, simd: V3, a: Tile<'_>, panel: usize) -> [[f32; PANEL]; TILE_ROWS] {
        let (groups, blocks) = (self.inp / 4, self.inp / BLOCK);
        let weights = &self.packed[panel * groups..(panel + 1) * groups];
        let w_scales = &self.scale[panel * blocks * PANEL..(panel + 1) * blocks * PANEL];
        let (avx, avx2, fma) = (simd.avx, simd.avx2, simd.fma);
        let ones = avx._mm256_set1_epi16(1);
        let mut acc = [[avx._mm256_setzero_ps(); 2]; TILE_ROWS];
        for (b, weights) in weights.chunks_exact(GROUPS_PER_BLOCK).enumerate() {
            let mut sums = [[avx._mm256_setzero_si256(); 2]; TILE_ROWS];
            for (g, block) in weights.iter().enumerate() {
                let (lo, hi) = block.split_at(32);
                let w: [__m256i; 2] = [
                    pulp::cast(<[u8; 32]>::try_from(lo).unwrap_or([0; 32])),
                    pulp::cast(<[u8; 32]>::try_from(hi).unwrap_or([0; 32])),
                ];
                for (r, sums) in sums.iter_mut().enumerate() {
                    let x = avx._mm256_set1_epi32(a.xq[r * groups + b * GROUPS_PER_BLOCK + g]);
                    for (sum, &w) in sums.iter_mut().zip(&w) {
                        let pairs = avx2._mm256_maddubs_epi16(w, x);
                        *sum = avx2._mm256_add_epi32(*sum, avx2._mm256_madd_epi16(pairs, ones));
                    }
                }
            }
            let (lo, hi) = w_scales[b * PANEL..(b + 1) * PANEL].split_at(8);
            let w_scale: [__m256; 2] = [
                pulp::cast(<[f32; 8]>::try_from(lo).unwrap_or([0.0; 8])),
                pulp::cast(<[f32; 8]>::try_from(hi).unwrap_or([0.0; 8])),
            ];
            for (r, (acc, sums)) in acc.iter_mut().zip(&sums).enumerate() {
                let scale = avx._mm256_set1_ps(a.xs[r * blocks + b]);
                let offset = avx._mm256_set1_epi32(a.xo[r * blocks + b]);
                for ((acc, &sum), &w_scale) in acc.iter_mut().zip(sums).zip(&w_scale) {
                    let exact = avx._mm256_cvtepi32_ps(avx2._mm256_sub_epi32(sum, offset));
                    *acc = fma._mm256_fmadd_ps(exact, avx._mm256_mul_ps(scale, w_scale), *acc);
                }
            }
        }
        acc.map(|[lo, hi]| pulp::cast([lo, hi]))
    }

    /// The same with AVX-512 (BW): a panel's 16 columns × 4 inputs are one 64-byte register,
    /// so each broadcast meets the whole panel in one `vpmaddubsw`, `vpmaddwd`, `vpaddd`: half
    /// the instructions of AVX2 for the same integer sums, so the same vectors.
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    fn tile_avx512(&self, simd: V4, a: Tile<'_>, panel: usize) -> [[f32; PANEL]; TILE_ROWS] {
        let (groups, blocks) = (self.inp / 4, self.inp / BLOCK);
        let weights = &self.packed[panel * groups..(panel + 1) * groups];
        let w_scales = &self.scale[panel * blocks * PANEL..(panel + 1) * blocks * PANEL];
        let (f, bw) = (simd.avx512f, simd.avx512bw);
        let ones = f._mm512_set1_epi16(1);
        let mut acc = [f._mm512_setzero_ps(); TILE_ROWS];
        for (b, weights) in weights.chunks_exact(GROUPS_PER_BLOCK).enumerate() {
            let mut sums = [f._mm512_setzero_si512(); TILE_ROWS];
            for (g, block) in weights.iter().enumerate() {
                let w: __m512i = pulp::cast(*block);
                for (r, sum) in sums.iter_mut().enumerate() {
                    let x = f._mm512_set1_epi32(a.xq[r * groups + b * GROUPS_PER_BLOCK + g]);
                    let pairs = bw._mm512_maddubs_epi16(w, x);
                    *sum = f._mm512_add_epi32(*sum, bw._mm512_madd_epi16(pairs, ones));
                }
            }
            let w_scale = <[f32; PANEL]>::try_from(&w_scales[b * PANEL..(b + 1) * PANEL])
                .unwrap_or([0.0; PANEL]);
            let w_scale = pulp::cast(w_scale);
            for (r, (acc, &sum)) in acc.iter_mut().zip(&sums).enumerate() {
                let scale = f._mm512_set1_ps(a.xs[r * blocks + b]);
                let offset = f._mm512_set1_epi32(a.xo[r * blocks + b]);
                let exact = f._mm512_cvtepi32_ps(f._mm512_sub_epi32(sum, offset));
                *acc = f._mm512_fmadd_ps(exact, f._mm512_mul_ps(scale, w_scale), *acc);
            }
        }
        acc.map(pulp::cast)
    }

    /// [`Self::rows`] with the VNNI tile, compiled for the instructions it needs.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    fn rows_vnni(&self, job: &Rows<'_>, out: &mut [f32]) {
        self.rows(job, out, |a, panel| self.tile_vnni(a, panel));
    }

    /// The same with AVX-512 VNNI: `vpdpbusd` multiplies the 64 byte pairs, sums them by four
    /// and adds them to the sums in one instruction, where `vpmaddubsw`, `vpmaddwd` and
    /// `vpaddd` take three. The sums are the same integers, so the vectors are the same.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    fn tile_vnni(&self, a: Tile<'_>, panel: usize) -> [[f32; PANEL]; TILE_ROWS] {
        use std::arch::x86_64::{
            _mm512_cvtepi32_ps, _mm512_dpbusd_epi32, _mm512_fmadd_ps, _mm512_mul_ps,
            _mm512_set1_epi32, _mm512_set1_ps, _mm512_setzero_ps, _mm512_setzero_si512,
            _mm512_sub_epi32,
        };
        let (groups, blocks) = (self.inp / 4, self.inp / BLOCK);
        let weights = &self.packed[panel * groups..(panel + 1) * groups];
        let w_scales = &self.scale[panel * blocks * PANEL..(panel + 1) * blocks * PANEL];
        let mut acc = [_mm512_setzero_ps(); TILE_ROWS];
        for (b, weights) in weights.chunks_exact(GROUPS_PER_BLOCK).enumerate() {
            let mut sums = [_mm512_setzero_si512(); TILE_ROWS];
            for (g, block) in weights.iter().enumerate() {
                let w: __m512i = pulp::cast(*block);
                for (r, sum) in sums.iter_mut().enumerate() {
                    let x = _mm512_set1_epi32(a.xq[r * groups + b * GROUPS_PER_BLOCK + g]);
                    *sum = _mm512_dpbusd_epi32(*sum, w, x);
                }
            }
            let w_scale = <[f32; PANEL]>::try_from(&w_scales[b * PANEL..(b + 1) * PANEL])
                .unwrap_or([0.0; PANEL]);
            let w_scale = pulp::cast(w_scale);
            for (r, (acc, &sum)) in acc.iter_mut().zip(&sums).enumerate() {
                let scale = _mm512_set1_ps(a.xs[r * blocks + b]);
                let offset = _mm512_set1_epi32(a.xo[r * blocks + b]);
                let exact = _mm512_cvtepi32_ps(_mm512_sub_epi32(sum, offset));
                *acc = _mm512_fmadd_ps(exact, _mm512_mul_ps(scale, w_scale), *acc);
            }
        }
        acc.map(pulp::cast)
    }

    /// Walks a task's rows panel by panel (a panel's weights stay in L1 across the tiles) and
    /// writes `product + bias (+ residual)`. Rows past the end of a short last tile
    /// read zeros and are not written.
    #[inline(always)]
    fn rows(
        &self,
        job: &Rows<'_>,
        out: &mut [f32],
        tile: impl Fn(Tile<'_>, usize) -> [[f32; PANEL]; TILE_ROWS],
    ) {
        let (groups, blocks) = (self.inp / 4, self.inp / BLOCK);
        let n = out.len() / self.out;
        for first in (0..n).step_by(TILE_ROWS) {
            let rows = TILE_ROWS.min(n - first);
            let padded: (Vec<i32>, Vec<f32>, Vec<i32>);
            let mut a = Tile {
                xq: &job.xq[first * groups..],
                xs: &job.xs[first * blocks..],
                xo: &job.xo[first * blocks..],
            };
            if rows < TILE_ROWS {
                // Only the last tile is short, so this runs once.
                let pad = |v: &[i32], len| [v, &vec![0; len - v.len()]].concat();
                let xs = [a.xs, &vec![0.0; TILE_ROWS * blocks - a.xs.len()]].concat();
                padded = (pad(a.xq, TILE_ROWS * groups), xs, pad(a.xo, TILE_ROWS * blocks));
                a = Tile { xq: &padded.0, xs: &padded.1, xo: &padded.2 };
            }
            for panel in 0..self.out / PANEL {
                let cols = panel * PANEL..(panel + 1) * PANEL;
                let bias = &job.bias[cols.clone()];
                let products = tile(a, panel);
                for (r, products) in products.iter().take(rows).enumerate() {
                    let at = (first + r) * self.out + cols.start;
                    let o = &mut out[at..at + PANEL];
                    for c in 0..PANEL {
                        o[c] = products[c] + bias[c];
                    }
                    if let Some(res) = job.residual {
                        for (o, r) in o.iter_mut().zip(&res[at..at + PANEL]) {
                            *o += r;
                        }
                    }
                }
            }
        }
    }
}

/// One task's share: its token rows' quantised activations, their scales and offset shares,
/// the layer's bias (kept once, in the f32 layer) and the residual rows.
struct Rows<'a> {
    xq: &'a [i32],
    xs: &'a [f32],
    xo: &'a [i32],
    bias: &'a [f32],
    residual: Option<&'a [f32]>,
}

/// Quantised activations from a tile's first row on: four per i32, and per block the scale
/// and 64·Σ (what the weights' offset adds to the sums).
#[derive(Clone, Copy)]
struct Tile<'a> {
    xq: &'a [i32],
    xs: &'a [f32],
    xo: &'a [i32],
}

/// Rows per parallel task: 64 for throughput, fewer for a short batch (a query of 9 tokens
/// still uses every thread), always whole tiles.
fn rows_per_task(n: usize) -> usize {
    let threads = rayon::current_num_threads().max(1);
    n.div_ceil(threads).next_multiple_of(TILE_ROWS).clamp(TILE_ROWS, 64)
}

/// Quantises token rows block by block: `q` gets four values per i32, `scales` one per block,
/// `offsets` the block's 64·Σ. Inlined into [`simd`]: compiled for the SSE2 baseline, every
/// `round` would be a library call. Fixed-size blocks, so every loop unrolls and vectorises.
#[inline(always)]
fn quantize_activations(x: &[f32], q: &mut [i32], scales: &mut [f32], offsets: &mut [i32]) {
    let blocks = x.as_chunks::<BLOCK>().0.iter().zip(q.as_chunks_mut::<GROUPS_PER_BLOCK>().0);
    for (((x, q), s), o) in blocks.zip(scales).zip(offsets) {
        let mut bytes = [0i8; BLOCK];
        *s = quantize(x, &mut bytes, 127.0);
        *o = OFFSET * bytes.iter().map(|&b| i32::from(b)).sum::<i32>();
        *q = pulp::cast(bytes);
    }
}

/// Quantises a block to [−levels, levels] by its largest magnitude; returns the scale
/// (`x ≈ q · scale`), rounding half to even. All-zero input, or input with an infinity or a
/// NaN, gets scale 0 and zeros.
///
/// Written to vectorise, without a compare or branch per value: the largest magnitude is the
/// largest bit pattern once the sign bit is cleared (NaN and infinity compare above every
/// finite value), and a value is rounded and turned into an integer by adding 1.5 · 2²³ (the
/// addition rounds to the nearest integer and leaves it in the low mantissa bits). Rust's
/// saturating `as i32` and `round` compiled to scalar code here, and this pass cost as much as
/// the matrix products it feeds.
#[inline(always)]
fn quantize<const N: usize>(x: &[f32; N], q: &mut [i8; N], levels: f32) -> f32 {
    const MAGIC: f32 = 12_582_912.0;
    let largest = x.iter().fold(0u32, |m, v| m.max(v.to_bits() & 0x7FFF_FFFF));
    let max = f32::from_bits(largest);
    if max == 0.0 || !max.is_finite() {
        *q = [0; N];
        return 0.0;
    }
    let inv = levels / max;
    for (q, v) in q.iter_mut().zip(x) {
        // |v · inv| ≤ levels < 2²², where the trick is exact.
        *q = ((v * inv + MAGIC).to_bits() as i32 - MAGIC.to_bits() as i32) as i8;
    }
    max / levels
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pseudo-random values in [−1, 1) with a few large outliers, as transformer activations.
    fn values(n: usize, seed: u64) -> Vec<f32> {
        let mut s = seed;
        (0..n)
            .map(|i| {
                s = s
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                let v = ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0;
                if i % 97 == 0 { v * 20.0 } else { v }
            })
            .collect()
    }

    /// `x` as the kernel sees it: quantised in blocks and scaled back.
    fn dequantized(x: &[f32], levels: f32) -> Vec<f32> {
        let mut q = [0i8; BLOCK];
        x.as_chunks::<BLOCK>()
            .0
            .iter()
            .flat_map(|block| {
                let s = quantize(block, &mut q, levels);
                q.iter().map(|&q| f32::from(q) * s).collect::<Vec<_>>()
            })
            .collect()
    }

    /// Every SIMD tile this CPU can run gives the scalar reference's sums: the integer sums
    /// are exact in each, so a store's vectors do not depend on the CPU that embedded them.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn every_simd_tile_equals_the_scalar_reference() {
        let (out, inp) = (32, 384);
        let layer = QuantLinear::new(&values(out * inp, 1), out, inp);
        let x = values(TILE_ROWS * inp, 2);
        let mut xq = vec![0i32; TILE_ROWS * inp / 4];
        let mut xs = vec![0f32; TILE_ROWS * inp / BLOCK];
        let mut xo = vec![0i32; TILE_ROWS * inp / BLOCK];
        quantize_activations(&x, &mut xq, &mut xs, &mut xo);
        let a = Tile { xq: &xq, xs: &xs, xo: &xo };
        let vnni = V4::try_new().is_some() && std::arch::is_x86_feature_detected!("avx512vnni");
        for panel in 0..2 {
            let want = layer.tile_scalar(a, panel);
            let mut tiles = Vec::new();
            if let Some(simd) = V3::try_new() {
                tiles.push(("avx2", simd.vectorize(|| layer.tile_avx2(simd, a, panel))));
            }
            if let Some(simd) = V4::try_new() {
                tiles.push(("avx512", simd.vectorize(|| layer.tile_avx512(simd, a, panel))));
            }
            if vnni {
                // SAFETY: AVX-512 F, BW and VNNI were detected just above.
                #[allow(unsafe_code)]
                tiles.push(("vnni", unsafe { layer.tile_vnni(a, panel) }));
            }
            for (name, got) in tiles {
                for (w, g) in want.iter().flatten().zip(got.iter().flatten()) {
                    // Exact integer sums; only the f32 sum of blocks may round differently.
                    assert!((w - g).abs() <= 1e-5 * w.abs().max(1.0), "{name}: {w} != {g}");
                }
            }
        }
    }

    #[test]
    fn products_equal_f32_products_of_the_quantised_values_at_every_batch_size() {
        let (out, inp) = (48, 96);
        let (w, b) = (values(out * inp, 3), values(out, 4));
        let layer = QuantLinear::new(&w, out, inp);
        let wd = dequantized(&w, 63.0);
        for n in [1, 3, 4, 5, 9, 70, 131] {
            let x = values(n * inp, 5 + n as u64);
            let xd = dequantized(&x, 127.0);
            let residual = values(n * out, 6);
            let mut got = vec![0f32; n * out];
            layer.forward(&x, &b, &mut got, Some(&residual));
            for t in 0..n {
                for o in 0..out {
                    let dot: f64 = (0..inp)
                        .map(|k| f64::from(xd[t * inp + k]) * f64::from(wd[o * inp + k]))
                        .sum();
                    let want = dot + f64::from(b[o] + residual[t * out + o]);
                    let got = f64::from(got[t * out + o]);
                    assert!((want - got).abs() < 1e-4 * want.abs().max(1.0), "n {n} [{t},{o}]");
                }
            }
        }
    }

    #[test]
    fn zero_and_non_finite_blocks_quantise_to_zero() {
        let mut q = [1i8; 4];
        assert_eq!(quantize(&[0.0; 4], &mut q, 127.0).to_bits(), 0);
        assert_eq!(q, [0; 4]);
        assert_eq!(quantize(&[1.0, f32::NAN, f32::INFINITY, 0.0], &mut q, 127.0).to_bits(), 0);
        assert_eq!(q, [0; 4]);
        q = [1; 4];
        assert_eq!(quantize(&[1.0, f32::NAN, 0.5, 0.0], &mut q, 127.0).to_bits(), 0);
        assert_eq!(q, [0; 4]);
        assert!((quantize(&[-2.0, 1.0, 0.0, 0.5], &mut q, 127.0) - 2.0 / 127.0).abs() < 1e-9);
        assert_eq!(q, [-127, 64, 0, 32]);
    }
}
