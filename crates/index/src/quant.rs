//! Compact vector codes for scanning large collections in a fraction of the RAM: int8 (a
//! quarter of float32) and binary (a thirty-second), each scored against a float query and
//! meant to be **rescored** exactly on the few best candidates, as Qdrant's scalar and binary
//! quantisation are (<https://qdrant.tech/documentation/guides/quantization/>).
//!
//! - **int8**: each vector is scaled by its own largest magnitude to `[-127, 127]`. The query
//!   is kept at 12 bits (`[-2047, 2047]`), so its rounding adds almost nothing to the codes'
//!   own; the products are exact `i32` sums (`vpmaddwd`), turned back into a cosine by the two
//!   scales.
//! - **binary**: one sign bit per dimension. Scoring is asymmetric — the float query against
//!   the bits, `Σ qᵢ·(±1)`, by one lookup per byte in a per-query table of 256 partial sums per
//!   byte position — which ranks far better than the Hamming distance between two sign
//!   vectors at the same memory.

// The kernels must inline into the dispatched function to be compiled for its instruction set.
#![allow(clippy::inline_always)]

use std::fmt;
use std::str::FromStr;

use rayon::prelude::*;

use crate::vector::simd;

mod walk;

pub(crate) use walk::Int8Query;

/// How a representation's vectors are held in memory for search.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Quantization {
    /// float32 (4 bytes per dimension): exact.
    #[default]
    None,
    /// One byte per dimension plus a scale per vector.
    Int8,
    /// One bit per dimension.
    Binary,
}

impl Quantization {
    /// Candidates rescored per result wanted when the user sets no oversampling. int8: the
    /// smallest with recall@10 ≥ 0.99 of the exact ranking on the tuning set of
    /// `bench/quantize.sh` (MiniLM vectors of SQuAD sentences: 0.9965 at 1), plus one, as its
    /// rescoring is cheap. Binary: the smallest with recall@10 ≥ 0.97 on the tuning queries of
    /// `bench/million.sh` (a million potion-base-8M vectors; claims and questions that the
    /// published figures do not use): 0.9080 at 5, 0.9590 at 10, 0.9725 at 15. Its recall
    /// there hardly moved with the collection's size (0.946–0.959 at 10 from 100k to 1M) but
    /// with the model (MiniLM reached 0.991 at 5), so one default must cover the harder model.
    pub fn default_oversample(self) -> usize {
        match self {
            Self::None => 1,
            Self::Int8 => 2,
            Self::Binary => 15,
        }
    }
}

impl fmt::Display for Quantization {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::None => "none",
            Self::Int8 => "int8",
            Self::Binary => "binary",
        })
    }
}

impl FromStr for Quantization {
    type Err = crate::Error;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "none" | "f32" | "float32" => Ok(Self::None),
            "int8" => Ok(Self::Int8),
            "binary" => Ok(Self::Binary),
            _ => Err(crate::Error::Parameter {
                name: "quantize",
                value: s.to_string(),
                expected: "none, int8 or binary",
            }),
        }
    }
}

/// Largest magnitude of the 12-bit query codes.
const QUERY_RANGE: f32 = 2047.0;

/// Binary rows pre-selected by Hamming distance per result wanted, before the per-byte table
/// scores them (chosen on the SQuAD tuning set of `bench/quantize.sh`: recall@10 at the
/// default oversampling unchanged there, 0.9910, and within 0.001 at every other, against
/// scoring every row; twice the queries per second).
const HAMMING_PRESELECT: usize = 8;

/// Rows scored per parallel task of [`Codes::scores`].
const ROWS_PER_TASK: usize = 8192;

/// The codes of a matrix's rows, in row order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Codes {
    kind: CodeKind,
    dim: usize,
    /// `len × stride` bytes.
    bytes: Vec<u8>,
    /// int8: each row's scale (cosine units per code step).
    scales: Vec<f32>,
}

#[derive(Debug, Clone, Copy, PartialEq, Default)]
enum CodeKind {
    #[default]
    Int8,
    Binary,
}

/// A query prepared for one kind of codes.
enum Prepared {
    /// 12-bit codes and their scale.
    Int8(Vec<i16>, f32),
    /// `table[byte position × 256 + byte]`: the query's sum over that byte's set bits, doubled,
    /// minus its sum over all eight dimensions — that byte's share of `Σ qᵢ·(±1)`; and the
    /// query's own sign bits, for the Hamming pre-selection.
    Binary(Vec<f32>, Vec<u8>),
}

impl Codes {
    /// Empty codes of `kind` for `dim`-dimensional rows; `None` for [`Quantization::None`].
    pub fn new(kind: Quantization, dim: usize) -> Option<Self> {
        let kind = match kind {
            Quantization::None => return None,
            Quantization::Int8 => CodeKind::Int8,
            Quantization::Binary => CodeKind::Binary,
        };
        Some(Self { kind, dim, bytes: Vec::new(), scales: Vec::new() })
    }

    /// The codes of every `dim`-long row of `rows`.
    pub fn encode(kind: Quantization, rows: &[f32], dim: usize) -> Option<Self> {
        let mut codes = Self::new(kind, dim)?;
        codes.reserve(rows.len() / dim.max(1));
        rows.chunks_exact(dim.max(1)).for_each(|r| codes.push(r));
        Some(codes)
    }

    /// Dimensions per row.
    pub fn dim(&self) -> usize {
        self.dim
    }

    fn stride(&self) -> usize {
        match self.kind {
            CodeKind::Int8 => self.dim,
            CodeKind::Binary => self.dim.div_ceil(8),
        }
    }

    /// Rows encoded.
    pub fn len(&self) -> usize {
        self.bytes.len().checked_div(self.stride()).unwrap_or(0)
    }

    /// Whether no row is encoded.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// Bytes held (codes and scales).
    pub fn memory(&self) -> usize {
        self.bytes.len() + 4 * self.scales.len()
    }

    /// Room for `rows` more rows.
    pub fn reserve(&mut self, rows: usize) {
        self.bytes.reserve(rows * self.stride());
        if self.kind == CodeKind::Int8 {
            self.scales.reserve(rows);
        }
    }

    /// The codes of the rows `keep` accepts, in order: how a reader drops the rows removed
    /// or replaced since it loaded them, without reading the others again.
    #[must_use]
    pub fn retain_rows(&self, keep: impl Fn(usize) -> bool) -> Self {
        let stride = self.stride().max(1);
        let mut out =
            Self { kind: self.kind, dim: self.dim, bytes: Vec::new(), scales: Vec::new() };
        for (i, row) in self.bytes.chunks_exact(stride).enumerate().filter(|(i, _)| keep(*i)) {
            out.bytes.extend_from_slice(row);
            if let Some(&scale) = self.scales.get(i) {
                out.scales.push(scale);
            }
        }
        out
    }

    /// Appends the rows of `other`, codes of the same kind and dimension (`false`, and
    /// nothing appended, if they are not): how rows read since join the ones loaded before.
    pub fn append(&mut self, other: &Self) -> bool {
        if other.is_empty() {
            return true;
        }
        if (self.kind, self.dim) != (other.kind, other.dim) {
            return false;
        }
        self.bytes.extend_from_slice(&other.bytes);
        self.scales.extend_from_slice(&other.scales);
        true
    }

    /// Appends row `r` of `other`, codes of the same kind and dimension (`false`, and nothing
    /// appended, if they are not): how a saved segment's rows are put together again.
    pub fn push_row_of(&mut self, other: &Self, r: usize) -> bool {
        let stride = self.stride();
        if (self.kind, self.dim) != (other.kind, other.dim) || r >= other.len() {
            return false;
        }
        self.bytes.extend_from_slice(&other.bytes[r * stride..(r + 1) * stride]);
        if let Some(&scale) = other.scales.get(r) {
            self.scales.push(scale);
        }
        true
    }

    /// The codes as bytes (kind, dimension, rows, then codes and scales), to be kept with a
    /// store and read back by [`Codes::from_bytes`].
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut b = vec![u8::from(self.kind == CodeKind::Binary)];
        b.extend((self.dim as u64).to_le_bytes());
        b.extend((self.len() as u64).to_le_bytes());
        b.extend_from_slice(&self.bytes);
        for s in &self.scales {
            b.extend(s.to_le_bytes());
        }
        b
    }

    /// Codes from [`Codes::to_bytes`]; `None` when malformed.
    pub fn from_bytes(b: &[u8]) -> Option<Self> {
        let kind = match b.first()? {
            0 => CodeKind::Int8,
            1 => CodeKind::Binary,
            _ => return None,
        };
        let word = |at: usize| -> Option<usize> {
            usize::try_from(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?)).ok()
        };
        let (dim, rows) = (word(1)?, word(9)?);
        let mut codes = Self { kind, dim, bytes: Vec::new(), scales: Vec::new() };
        let code_bytes = rows.checked_mul(codes.stride())?;
        let scale_bytes = if kind == CodeKind::Int8 { rows.checked_mul(4)? } else { 0 };
        let body = b.get(17..)?;
        if body.len() != code_bytes.checked_add(scale_bytes)? {
            return None;
        }
        codes.bytes = body[..code_bytes].to_vec();
        codes.scales = body[code_bytes..]
            .chunks_exact(4)
            .map(|s| f32::from_le_bytes([s[0], s[1], s[2], s[3]]))
            .collect();
        Some(codes)
    }

    /// Appends the code of `row` (`dim` values; a NaN counts as 0).
    pub fn push(&mut self, row: &[f32]) {
        debug_assert_eq!(row.len(), self.dim);
        match self.kind {
            CodeKind::Int8 => {
                let (codes, scale) = quantize_row(row, 127.0);
                self.bytes.extend(codes.iter().map(|&c| c as i8 as u8));
                self.scales.push(scale);
            }
            CodeKind::Binary => {
                for byte in row.chunks(8) {
                    let bits = byte
                        .iter()
                        .enumerate()
                        .fold(0u8, |b, (i, &x)| b | (u8::from(x > 0.0) << i));
                    self.bytes.push(bits);
                }
            }
        }
    }

    fn prepare(&self, q: &[f32]) -> Prepared {
        match self.kind {
            CodeKind::Int8 => {
                let (codes, scale) = quantize_row(q, QUERY_RANGE);
                Prepared::Int8(codes, scale)
            }
            CodeKind::Binary => {
                let mut table = vec![0f32; self.stride() * 256];
                for (pos, dims) in q.chunks(8).enumerate() {
                    let all: f32 = dims.iter().sum();
                    for byte in 0..256usize {
                        let set: f32 = dims
                            .iter()
                            .enumerate()
                            .filter(|(i, _)| byte >> i & 1 == 1)
                            .map(|(_, x)| x)
                            .sum();
                        table[pos * 256 + byte] = 2.0 * set - all;
                    }
                }
                let mut bits = Self::new(Quantization::Binary, q.len()).unwrap_or_default();
                bits.push(q);
                Prepared::Binary(table, bits.bytes)
            }
        }
    }

    /// The approximate similarity of `q` (normalised, `dim` long) to every row, in row order,
    /// on all cores: for int8 an estimate of the cosine; for binary `Σ qᵢ·(±1)/√dim`, which
    /// ranks like the cosine but is not one.
    pub fn scores(&self, q: &[f32]) -> Vec<f32> {
        let prepared = self.prepare(q);
        let stride = self.stride().max(1);
        self.bytes
            .par_chunks(ROWS_PER_TASK * stride)
            .enumerate()
            .flat_map_iter(|(task, block)| {
                let first = task * ROWS_PER_TASK;
                let mut out = Vec::with_capacity(block.len() / stride);
                self.score_block(&prepared, block, first, &mut out);
                out
            })
            .collect()
    }

    /// Scores the rows of `block` (row `first` onwards), appending to `out`.
    fn score_block(&self, prepared: &Prepared, block: &[u8], first: usize, out: &mut Vec<f32>) {
        let stride = self.stride();
        match prepared {
            Prepared::Int8(q, q_scale) => {
                let scales = &self.scales[first..];
                let q_scale = *q_scale;
                #[cfg(target_arch = "x86_64")]
                {
                    use pulp::x86::{V3, V4};
                    if crate::vector::avx512_allowed()
                        && let Some(simd) = V4::try_new()
                    {
                        return simd.vectorize(
                            #[inline(always)]
                            || {
                                each_int8_row(block, stride, scales, q_scale, out, |row| {
                                    x86::dot_avx512(simd, row, q)
                                });
                            },
                        );
                    }
                    if let Some(simd) = V3::try_new() {
                        return simd.vectorize(
                            #[inline(always)]
                            || {
                                each_int8_row(block, stride, scales, q_scale, out, |row| {
                                    x86::dot_avx2(simd, row, q)
                                });
                            },
                        );
                    }
                }
                simd(
                    #[inline(always)]
                    || each_int8_row(block, stride, scales, q_scale, out, |row| dot_i8_i16(row, q)),
                );
            }
            Prepared::Binary(table, _) => {
                let norm = 1.0 / (self.dim.max(1) as f32).sqrt();
                let table = &table[..stride * 256];
                for row in block.chunks_exact(stride) {
                    out.push(lookup_sum(row, table) * norm);
                }
            }
        }
    }

    /// The `n` rows of best approximate score among those `keep` accepts, best first, as
    /// `(row, approximate score)`.
    /// Each parallel task keeps only its block's best `n`, so a scan never holds a score per
    /// row of the whole collection.
    pub fn nearest(
        &self,
        q: &[f32],
        n: usize,
        keep: impl Fn(usize) -> bool + Sync,
    ) -> Vec<(u32, f32)> {
        if n == 0 {
            return Vec::new();
        }
        let prepared = self.prepare(q);
        let stride = self.stride().max(1);
        let mut all: Vec<(u32, f32)> = self
            .bytes
            .par_chunks(ROWS_PER_TASK * stride)
            .enumerate()
            .flat_map_iter(|(task, block)| {
                let first = task * ROWS_PER_TASK;
                if let Prepared::Binary(table, bits) = &prepared
                    && block.len() / stride > n.saturating_mul(HAMMING_PRESELECT)
                {
                    return self.binary_block(table, bits, block, first, n, &keep);
                }
                let mut scores = Vec::with_capacity(block.len() / stride);
                self.score_block(&prepared, block, first, &mut scores);
                let kept = scores
                    .into_iter()
                    .enumerate()
                    .map(|(i, s)| ((first + i) as u32, s))
                    .filter(|&(row, _)| keep(row as usize))
                    .collect();
                best(kept, n)
            })
            .collect();
        all = best(all, n);
        all.sort_unstable_by(rank);
        all
    }
}

impl Codes {
    /// A block's best `n` binary rows, in two steps: the `n × HAMMING_PRESELECT` whose sign
    /// bits differ least from the query's (a popcount per 64 dimensions), then those scored
    /// by the per-byte table. The table ranks far better than Hamming distance, Hamming is
    /// several times faster to compute; together they rank like the table at nearly the
    /// speed of the popcounts.
    fn binary_block(
        &self,
        table: &[f32],
        bits: &[u8],
        block: &[u8],
        first: usize,
        n: usize,
        keep: &(impl Fn(usize) -> bool + Sync),
    ) -> Vec<(u32, f32)> {
        let stride = self.stride();
        let mut distances: Vec<(u32, u32)> = Vec::with_capacity(block.len() / stride);
        simd(
            #[inline(always)]
            || {
                for (i, row) in block.chunks_exact(stride).enumerate() {
                    distances.push(((first + i) as u32, hamming(row, bits)));
                }
            },
        );
        distances.retain(|&(row, _)| keep(row as usize));
        let pre = n.saturating_mul(HAMMING_PRESELECT);
        if distances.len() > pre {
            distances.select_nth_unstable_by_key(pre - 1, |&(row, d)| (d, row));
            distances.truncate(pre);
        }
        let norm = 1.0 / (self.dim.max(1) as f32).sqrt();
        let scored = distances
            .into_iter()
            .map(|(row, _)| {
                let at = (row as usize - first) * stride;
                (row, lookup_sum(&block[at..at + stride], table) * norm)
            })
            .collect();
        best(scored, n)
    }
}

/// Bits in which `a` and `b` differ.
#[inline(always)]
fn hamming(a: &[u8], b: &[u8]) -> u32 {
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: u32 =
        ca.remainder().iter().zip(cb.remainder()).map(|(x, y)| (x ^ y).count_ones()).sum();
    ca.zip(cb).fold(tail, |sum, (x, y)| {
        let x = u64::from_le_bytes(x.try_into().unwrap_or_default());
        let y = u64::from_le_bytes(y.try_into().unwrap_or_default());
        sum + (x ^ y).count_ones()
    })
}

/// Best score first, ties by row.
fn rank(a: &(u32, f32), b: &(u32, f32)) -> std::cmp::Ordering {
    b.1.total_cmp(&a.1).then(a.0.cmp(&b.0))
}

/// The best `n` of `all`, in no particular order.
fn best(mut all: Vec<(u32, f32)>, n: usize) -> Vec<(u32, f32)> {
    if all.len() > n {
        all.select_nth_unstable_by(n - 1, rank);
        all.truncate(n);
    }
    all
}

/// `Σ table[pos][row[pos]]`, eight positions at a time into independent sums: one chain of
/// dependent additions would wait on each one's latency.
#[inline(always)]
fn lookup_sum(row: &[u8], table: &[f32]) -> f32 {
    const LANES: usize = 8;
    let mut acc = [0f32; LANES];
    let chunks = row.chunks_exact(LANES);
    let mut tail = 0.0;
    for (i, &byte) in chunks.remainder().iter().enumerate() {
        tail += table[(row.len() - row.len() % LANES + i) * 256 + usize::from(byte)];
    }
    for (c, bytes) in chunks.enumerate() {
        let base = c * LANES * 256;
        for i in 0..LANES {
            acc[i] += table[base + i * 256 + usize::from(bytes[i])];
        }
    }
    acc.iter().sum::<f32>() + tail
}

/// `Σ aᵢbᵢ` of int8 codes and 12-bit query codes, exact: each product fits 19 bits, so a
/// 32-bit sum holds rows of up to 4,096 dimensions before it could overflow (and wraps, not
/// panics, past that). 32 independent lanes let it compile to `vpmaddwd`.
#[inline(always)]
fn dot_i8_i16(a: &[u8], b: &[i16]) -> i32 {
    const LANES: usize = 32;
    let mut acc = [0i32; LANES];
    let (ca, cb) = (a.chunks_exact(LANES), b.chunks_exact(LANES));
    let tail: i32 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(&x, &y)| i32::from(x as i8) * i32::from(y))
        .fold(0, i32::wrapping_add);
    for (x, y) in ca.zip(cb) {
        for i in 0..LANES {
            acc[i] = acc[i].wrapping_add(i32::from(x[i] as i8) * i32::from(y[i]));
        }
    }
    acc.iter().fold(tail, |s, &x| s.wrapping_add(x))
}

/// Appends each row's int8 score, `dot` giving its integer product with the query. Generic,
/// not `dyn`: the kernel must inline into the function dispatched for its instruction set.
#[inline(always)]
fn each_int8_row(
    block: &[u8],
    stride: usize,
    scales: &[f32],
    q_scale: f32,
    out: &mut Vec<f32>,
    dot: impl Fn(&[u8]) -> i32,
) {
    for (row, scale) in block.chunks_exact(stride).zip(scales) {
        out.push(dot(row) as f32 * scale * q_scale);
    }
}

/// The int8 product with explicit instructions: the compiler widened each product to 32 bits
/// and multiplied with `vpmulld`, where `vpmovsxbw` + `vpmaddwd` do two products per lane.
/// The sums are exact integers, so every path gives the same scores.
#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::{__m128i, __m256i, __m512i};

    use pulp::x86::{V3, V4};

    /// The scalar sum over the dimensions past the last whole step.
    #[inline(always)]
    fn tail(row: &[u8], q: &[i16], from: usize) -> i32 {
        row[from..]
            .iter()
            .zip(&q[from..])
            .fold(0i32, |s, (&x, &y)| s.wrapping_add(i32::from(x as i8) * i32::from(y)))
    }

    /// AVX2, 32 dimensions per step in two registers.
    #[inline(always)]
    pub(super) fn dot_avx2(simd: V3, row: &[u8], q: &[i16]) -> i32 {
        let avx2 = simd.avx2;
        let mut acc = [simd.avx._mm256_setzero_si256(); 2];
        let steps = row.len().min(q.len()) / 32;
        for (r, w) in row.chunks_exact(32).zip(q.chunks_exact(32)).take(steps) {
            let r: [__m128i; 2] = pulp::cast(<[u8; 32]>::try_from(r).unwrap_or([0; 32]));
            let w: [__m256i; 2] = pulp::cast(<[i16; 32]>::try_from(w).unwrap_or([0; 32]));
            for k in 0..2 {
                let wide = avx2._mm256_cvtepi8_epi16(r[k]);
                acc[k] = avx2._mm256_add_epi32(acc[k], avx2._mm256_madd_epi16(wide, w[k]));
            }
        }
        let lanes: [i32; 8] = pulp::cast(avx2._mm256_add_epi32(acc[0], acc[1]));
        lanes.iter().fold(tail(row, q, steps * 32), |s, &x| s.wrapping_add(x))
    }

    /// AVX-512 (BW), 32 dimensions per step in one register.
    #[inline(always)]
    pub(super) fn dot_avx512(simd: V4, row: &[u8], q: &[i16]) -> i32 {
        let (f, bw) = (simd.avx512f, simd.avx512bw);
        let mut acc = [f._mm512_setzero_si512(); 2];
        let steps = row.len().min(q.len()) / 32;
        for (i, (r, w)) in row.chunks_exact(32).zip(q.chunks_exact(32)).take(steps).enumerate() {
            let r: __m256i = pulp::cast(<[u8; 32]>::try_from(r).unwrap_or([0; 32]));
            let w: __m512i = pulp::cast(<[i16; 32]>::try_from(w).unwrap_or([0; 32]));
            let wide = bw._mm512_cvtepi8_epi16(r);
            acc[i % 2] = f._mm512_add_epi32(acc[i % 2], bw._mm512_madd_epi16(wide, w));
        }
        let lanes: [i32; 16] = pulp::cast(f._mm512_add_epi32(acc[0], acc[1]));
        lanes.iter().fold(tail(row, q, steps * 32), |s, &x| s.wrapping_add(x))
    }
}

/// `row` scaled by its largest magnitude to `[-range, range]` and rounded, with the scale that
/// undoes it. A zero row (or one of NaNs) gets zero codes.
fn quantize_row(row: &[f32], range: f32) -> (Vec<i16>, f32) {
    let max = row.iter().filter(|x| x.is_finite()).fold(0f32, |m, x| m.max(x.abs()));
    if max == 0.0 {
        return (vec![0; row.len()], 0.0);
    }
    let scale = max / range;
    let codes = row
        .iter()
        .map(|&x| if x.is_finite() { (x / scale).round().clamp(-range, range) as i16 } else { 0 })
        .collect();
    (codes, scale)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dot;

    fn unit_rows(n: usize, dim: usize, seed: u64) -> Vec<f32> {
        let mut s = seed;
        let mut out = Vec::with_capacity(n * dim);
        for _ in 0..n {
            let start = out.len();
            for _ in 0..dim {
                s = s
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                out.push(((s >> 33) as f32 / (1u64 << 31) as f32) - 0.5);
            }
            let norm = out[start..].iter().map(|x| x * x).sum::<f32>().sqrt();
            out[start..].iter_mut().for_each(|x| *x /= norm);
        }
        out
    }

    #[test]
    fn codes_read_back_from_bytes_and_rows_copy_between_them() {
        let data = unit_rows(20, 12, 5);
        for kind in [Quantization::Int8, Quantization::Binary] {
            let codes = Codes::encode(kind, &data, 12).unwrap();
            let bytes = codes.to_bytes();
            assert_eq!(Codes::from_bytes(&bytes).as_ref(), Some(&codes), "{kind}");
            for cut in [0, 5, 17, bytes.len() - 1] {
                assert_eq!(Codes::from_bytes(&bytes[..cut]), None, "{kind} cut at {cut}");
            }
            let mut some = Codes::new(kind, 12).unwrap();
            assert!(some.push_row_of(&codes, 3) && some.push_row_of(&codes, 7));
            assert_eq!(some, codes.retain_rows(|r| r == 3 || r == 7));
            assert!(!some.push_row_of(&codes, 20), "past the rows");
            let other = Codes::encode(kind, &unit_rows(2, 8, 1), 8).unwrap();
            assert!(!some.push_row_of(&other, 0), "another dimension");
            assert_eq!(some.len(), 2);
        }
    }

    #[test]
    fn names_parse_and_print() {
        for q in [Quantization::None, Quantization::Int8, Quantization::Binary] {
            assert_eq!(q.to_string().parse::<Quantization>().unwrap(), q);
        }
        assert!("int4".parse::<Quantization>().is_err());
        assert!(Codes::new(Quantization::None, 4).is_none());
    }

    #[test]
    fn retained_rows_are_the_codes_of_those_rows() {
        let dim = 40;
        let rows = unit_rows(9, dim, 5);
        for kind in [Quantization::Int8, Quantization::Binary] {
            let all = Codes::encode(kind, &rows, dim).unwrap();
            let odd = all.retain_rows(|i| i % 2 == 1);
            let kept: Vec<f32> = rows
                .chunks_exact(dim)
                .enumerate()
                .filter(|(i, _)| i % 2 == 1)
                .flat_map(|(_, r)| r.to_vec())
                .collect();
            assert_eq!(odd, Codes::encode(kind, &kept, dim).unwrap(), "{kind}");
            assert_eq!(odd.len(), 4);
            // Appending the even rows after the odd ones gives the codes of that order.
            let mut joined = odd.clone();
            assert!(joined.append(&all.retain_rows(|i| i % 2 == 0)));
            let even = rows.chunks_exact(dim).step_by(2).flat_map(<[f32]>::to_vec);
            let reordered: Vec<f32> = kept.iter().copied().chain(even).collect();
            assert_eq!(joined, Codes::encode(kind, &reordered, dim).unwrap(), "{kind}");
            let other = Codes::encode(kind, &rows[..dim / 2], dim / 2).unwrap();
            assert!(!joined.append(&other), "{kind}: another dimension is refused");
            assert_eq!(joined.len(), 9);
        }
    }

    #[test]
    fn int8_scores_are_within_a_hundredth_of_the_cosine() {
        let dim = 389; // not a multiple of the 32 lanes
        let rows = unit_rows(500, dim, 3);
        let codes = Codes::encode(Quantization::Int8, &rows, dim).unwrap();
        assert_eq!(codes.len(), 500);
        assert_eq!(codes.memory(), 500 * (dim + 4));
        let q = unit_rows(1, dim, 4);
        for (row, approx) in rows.chunks_exact(dim).zip(codes.scores(&q)) {
            let exact = dot(row, &q);
            assert!((exact - approx).abs() < 0.01, "{exact} vs {approx}");
        }
    }

    #[test]
    fn binary_scores_are_the_signed_sum_of_the_query() {
        let dim = 20; // a partial last byte
        let rows = unit_rows(50, dim, 5);
        let codes = Codes::encode(Quantization::Binary, &rows, dim).unwrap();
        assert_eq!(codes.memory(), 50 * 3);
        let q = unit_rows(1, dim, 6);
        for (row, approx) in rows.chunks_exact(dim).zip(codes.scores(&q)) {
            let signed: f32 =
                row.iter().zip(&q).map(|(x, y)| if *x > 0.0 { *y } else { -*y }).sum();
            assert!((signed / (dim as f32).sqrt() - approx).abs() < 1e-5);
        }
    }

    #[test]
    fn the_parallel_scan_equals_block_by_block_scoring() {
        let dim = 16;
        let rows = unit_rows(20_000, dim, 7);
        let q = unit_rows(1, dim, 8);
        for kind in [Quantization::Int8, Quantization::Binary] {
            let codes = Codes::encode(kind, &rows, dim).unwrap();
            let mut one = Vec::new();
            codes.score_block(&codes.prepare(&q), &codes.bytes, 0, &mut one);
            assert_eq!(codes.scores(&q), one, "{kind}");
        }
    }

    #[test]
    fn nearest_finds_the_exact_neighbours_and_honours_the_filter() {
        let dim = 64;
        let rows = unit_rows(2000, dim, 9);
        let q = rows[dim * 42..dim * 43].to_vec();
        for kind in [Quantization::Int8, Quantization::Binary] {
            let codes = Codes::encode(kind, &rows, dim).unwrap();
            assert_eq!(codes.nearest(&q, 5, |_| true)[0].0, 42, "{kind}");
            let odd = codes.nearest(&q, 5, |i| i % 2 == 1);
            assert_eq!(odd.len(), 5);
            assert!(odd.iter().all(|(i, _)| i % 2 == 1));
            assert!(odd.windows(2).all(|w| w[0].1 >= w[1].1));
            assert!(codes.nearest(&q, 0, |_| true).is_empty());
        }
    }

    #[test]
    #[cfg(target_arch = "x86_64")]
    fn every_int8_kernel_gives_the_scalar_sum() {
        let mut s = 5u64;
        let mut next = || {
            s = s.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            (s >> 40) as u32
        };
        for len in [0, 1, 31, 32, 33, 64, 255, 384, 389] {
            let row: Vec<u8> = (0..len).map(|_| (next() % 255) as u8).collect();
            let q: Vec<i16> = (0..len).map(|_| (next() % 4095) as i16 - 2047).collect();
            let want = dot_i8_i16(&row, &q);
            if let Some(simd) = pulp::x86::V3::try_new() {
                assert_eq!(simd.vectorize(|| x86::dot_avx2(simd, &row, &q)), want, "avx2 {len}");
            }
            if let Some(simd) = pulp::x86::V4::try_new() {
                let got = simd.vectorize(|| x86::dot_avx512(simd, &row, &q));
                assert_eq!(got, want, "avx512 {len}");
            }
        }
    }

    #[test]
    fn zero_and_nan_rows_score_zero() {
        let codes = Codes::encode(Quantization::Int8, &[0.0, 0.0, f32::NAN, 1.0], 2).unwrap();
        assert_eq!(codes.scores(&[0.6, 0.8]), [0.0, 0.8]);
    }
}
