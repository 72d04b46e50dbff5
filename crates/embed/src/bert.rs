//! A BERT encoder for inference on the CPU, written for throughput:
//!
//! - sequences are **packed** (no padding at all): every linear layer is one large matrix
//!   product over all tokens of a batch, with Q, K and V fused into one weight;
//! - matrix products use `faer` (runtime-dispatched, AVX2+FMA at most), attention runs per
//!   sequence and head on strided views of the fused QKV matrix, sequences in parallel;
//! - GELU's `erf` and softmax's `exp` are vectorisable polynomial approximations (absolute error
//!   below 5e-7), instead of scalar libm calls;
//! - buffers are allocated once per batch, not per operation.

// Linear algebra reads best in its own notation (x, h, n, q, k, v); and `inline(always)` is
// the point here: code must inline into the SIMD-dispatched functions to be compiled for AVX2.
#![allow(clippy::many_single_char_names, clippy::inline_always)]

use ckeep_index::simd;
use faer::linalg::matmul::matmul;
use faer::{Accum, MatMut, MatRef, Par};
use rayon::prelude::*;
use serde::Deserialize;

use crate::int8::{self, QuantLinear};
use crate::{Error, Result};

/// The `config.json` fields a BERT encoder needs.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct Config {
    pub hidden_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    pub intermediate_size: usize,
    #[serde(default = "default_act")]
    pub hidden_act: String,
    #[serde(default = "default_eps")]
    pub layer_norm_eps: f64,
    pub max_position_embeddings: usize,
}

fn default_act() -> String {
    "gelu".into()
}

fn default_eps() -> f64 {
    1e-12
}

#[derive(Debug, Clone, Copy)]
pub(crate) enum Activation {
    /// `x·Φ(x)` with the exact (erf) normal CDF, BERT's `gelu`.
    Gelu,
    /// The tanh approximation (`gelu_new`, `gelu_pytorch_tanh`).
    GeluTanh,
    Relu,
}

pub(crate) struct Linear {
    /// `[out, in]`, row-major, as stored (empty once quantised).
    pub w: Vec<f32>,
    pub b: Vec<f32>,
    pub out: usize,
    pub inp: usize,
    /// The int8 form, which replaces `w` under `--precision int8`.
    pub int8: Option<QuantLinear>,
}

impl Linear {
    pub(crate) fn new(w: Vec<f32>, b: Vec<f32>, out: usize, inp: usize) -> Self {
        Self { w, b, out, inp, int8: None }
    }

    /// Replaces the f32 weights by int8 ones (the caller checked the shape).
    fn quantize(&mut self) {
        if self.int8.is_none() {
            let w = std::mem::take(&mut self.w);
            self.int8 = Some(QuantLinear::new(&w, self.out, self.inp));
        }
    }
}

pub(crate) struct Norm {
    pub w: Vec<f32>,
    pub b: Vec<f32>,
}

pub(crate) struct Layer {
    /// Query, key and value fused into one `[3·hidden, hidden]` product.
    pub qkv: Linear,
    pub attn_out: Linear,
    pub ln1: Norm,
    pub inter: Linear,
    pub out: Linear,
    pub ln2: Norm,
}

/// The token embedding table: f32 rows, or 4-bit Q4_0 blocks (llama.cpp's layout: per 32
/// weights an f16 scale and 16 bytes of nibbles) dequantised one row at a time as tokens are
/// looked up. A multilingual vocabulary of 250,000 pieces is 384 MB as f32 and 54 MB as Q4_0,
/// and a lookup is a copy either way, so the quantised table costs no speed.
pub(crate) enum WordTable {
    /// `[vocab, hidden]`, row-major.
    F32(Vec<f32>),
    /// `[vocab, hidden]` in Q4_0 blocks, row after row.
    Q4(Vec<u8>),
}

/// Weights per Q4_0 block.
pub(crate) const Q4_BLOCK: usize = 32;
/// Bytes per Q4_0 block: the f16 scale, then 16 bytes of two nibbles each.
pub(crate) const Q4_BLOCK_BYTES: usize = 18;

/// Dequantises Q4_0 blocks into `out` (`out.len()` weights): weight `j` of a block is the low
/// nibble of byte `j`, weight `j + 16` its high nibble, each `(q − 8) · scale`.
pub(crate) fn dequantize_q4(blocks: &[u8], out: &mut [f32]) {
    for (block, w) in blocks.chunks_exact(Q4_BLOCK_BYTES).zip(out.chunks_exact_mut(Q4_BLOCK)) {
        let d = half::f16::from_le_bytes([block[0], block[1]]).to_f32();
        let (lo, hi) = w.split_at_mut(Q4_BLOCK / 2);
        for (j, q) in block[2..].iter().enumerate() {
            lo[j] = (f32::from(q & 0x0F) - 8.0) * d;
            hi[j] = (f32::from(q >> 4) - 8.0) * d;
        }
    }
}

impl WordTable {
    /// Rows in a table of `hidden`-wide rows.
    fn rows(&self, hidden: usize) -> usize {
        match self {
            WordTable::F32(w) => w.len() / hidden,
            WordTable::Q4(b) => b.len() / (hidden / Q4_BLOCK * Q4_BLOCK_BYTES),
        }
    }

    /// Writes row `id` into `out` (`hidden` values).
    fn row_into(&self, id: usize, out: &mut [f32]) {
        let h = out.len();
        match self {
            WordTable::F32(w) => out.copy_from_slice(&w[id * h..(id + 1) * h]),
            WordTable::Q4(b) => {
                let row_bytes = h / Q4_BLOCK * Q4_BLOCK_BYTES;
                dequantize_q4(&b[id * row_bytes..(id + 1) * row_bytes], out);
            }
        }
    }
}

/// BERT weights ready for [`Bert::forward`].
pub(crate) struct Bert {
    pub hidden: usize,
    pub heads: usize,
    pub eps: f32,
    pub act: Activation,
    pub max_positions: usize,
    pub word: WordTable,
    /// `[max_positions, hidden]`.
    pub pos: Vec<f32>,
    /// The first token type's row (every input is one segment).
    pub token_type: Vec<f32>,
    pub emb_ln: Norm,
    pub layers: Vec<Layer>,
}

/// Tensors of a safetensors file by name, as f32, with their shapes.
struct Weights<'a> {
    tensors: safetensors::SafeTensors<'a>,
    prefix: &'static str,
    path: &'a str,
}

impl Weights<'_> {
    fn get(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>> {
        let full = format!("{}{name}", self.prefix);
        let bad = |message: String| Error::ModelFile { path: self.path.to_string(), message };
        let t = self.tensors.tensor(&full).map_err(|_| bad(format!("no tensor `{full}`")))?;
        if t.shape() != shape {
            return Err(bad(format!(
                "`{full}` has shape {:?}, config.json says {shape:?}",
                t.shape()
            )));
        }
        crate::tensor_f32(&t).map_err(|e| bad(format!("`{full}`: {e}")))
    }

    /// A `LayerNorm` under either naming (`weight`/`bias` or the older `gamma`/`beta`).
    fn norm(&self, name: &str, h: usize) -> Result<Norm> {
        let has = |n: &str| self.tensors.tensor(&format!("{}{name}.{n}", self.prefix)).is_ok();
        let (w, b) = if has("weight") { ("weight", "bias") } else { ("gamma", "beta") };
        Ok(Norm {
            w: self.get(&format!("{name}.{w}"), &[h])?,
            b: self.get(&format!("{name}.{b}"), &[h])?,
        })
    }

    fn linear(&self, name: &str, out: usize, inp: usize) -> Result<Linear> {
        Ok(Linear::new(
            self.get(&format!("{name}.weight"), &[out, inp])?,
            self.get(&format!("{name}.bias"), &[out])?,
            out,
            inp,
        ))
    }
}

impl Bert {
    /// Reads the weights of a BERT model (tensor names with or without a `bert.` prefix).
    pub(crate) fn load(bytes: &[u8], config: &Config, path: &str) -> Result<Self> {
        let bad = |message: String| Error::ModelFile { path: path.to_string(), message };
        let tensors = safetensors::SafeTensors::deserialize(bytes)
            .map_err(|e| bad(format!("corrupt or not safetensors: {e}")))?;
        let prefix = if tensors.tensor("bert.embeddings.word_embeddings.weight").is_ok() {
            "bert."
        } else {
            ""
        };
        let w = Weights { tensors, prefix, path };
        let h = config.hidden_size;
        if config.num_attention_heads == 0 || !h.is_multiple_of(config.num_attention_heads) {
            return Err(bad(format!(
                "hidden size {h} is not a multiple of {} heads",
                config.num_attention_heads
            )));
        }
        let act = match config.hidden_act.as_str() {
            "gelu" => Activation::Gelu,
            "gelu_new" | "gelu_pytorch_tanh" | "gelu_fast" => Activation::GeluTanh,
            "relu" => Activation::Relu,
            other => {
                return Err(Error::Unsupported {
                    path: path.into(),
                    message: format!("activation `{other}`"),
                });
            }
        };
        let word_shape = w
            .tensors
            .tensor(&format!("{prefix}embeddings.word_embeddings.weight"))
            .map_err(|_| bad("no word embeddings; is this a BERT model?".into()))?
            .shape()
            .to_vec();
        let types = w
            .tensors
            .tensor(&format!("{prefix}embeddings.token_type_embeddings.weight"))
            .map_or(0, |t| t.shape()[0]);
        let mut layers = Vec::with_capacity(config.num_hidden_layers);
        for i in 0..config.num_hidden_layers {
            let p = format!("encoder.layer.{i}");
            let (q, k, v) = (
                w.linear(&format!("{p}.attention.self.query"), h, h)?,
                w.linear(&format!("{p}.attention.self.key"), h, h)?,
                w.linear(&format!("{p}.attention.self.value"), h, h)?,
            );
            let qkv = Linear::new([q.w, k.w, v.w].concat(), [q.b, k.b, v.b].concat(), 3 * h, h);
            layers.push(Layer {
                qkv,
                attn_out: w.linear(&format!("{p}.attention.output.dense"), h, h)?,
                ln1: w.norm(&format!("{p}.attention.output.LayerNorm"), h)?,
                inter: w.linear(&format!("{p}.intermediate.dense"), config.intermediate_size, h)?,
                out: w.linear(&format!("{p}.output.dense"), h, config.intermediate_size)?,
                ln2: w.norm(&format!("{p}.output.LayerNorm"), h)?,
            });
        }
        Ok(Self {
            hidden: h,
            heads: config.num_attention_heads,
            eps: config.layer_norm_eps as f32,
            act,
            max_positions: config.max_position_embeddings,
            word: WordTable::F32(w.get("embeddings.word_embeddings.weight", &word_shape)?),
            pos: w.get(
                "embeddings.position_embeddings.weight",
                &[config.max_position_embeddings, h],
            )?,
            token_type: if types > 0 {
                w.get("embeddings.token_type_embeddings.weight", &[types, h])?[..h].to_vec()
            } else {
                vec![0.0; h]
            },
            emb_ln: w.norm("embeddings.LayerNorm", h)?,
            layers,
        })
    }

    /// Switches every layer's matrix products to int8 (see [`crate::int8`]); attention,
    /// normalisation and activations stay f32. Returns false, changing nothing, when a layer's
    /// shape cannot be packed.
    pub(crate) fn quantize(&mut self) -> bool {
        let linears = |l: &Layer| [&l.qkv, &l.attn_out, &l.inter, &l.out].map(|l| (l.out, l.inp));
        if !self.layers.iter().flat_map(linears).all(|(out, inp)| int8::supports(out, inp)) {
            return false;
        }
        for layer in &mut self.layers {
            for linear in [&mut layer.qkv, &mut layer.attn_out, &mut layer.inter, &mut layer.out] {
                linear.quantize();
            }
        }
        true
    }

    /// Hidden states of every token of every sequence, packed: `[Σ len, hidden]` row-major, the
    /// rows of sequence `i` following those of sequence `i − 1`.
    pub(crate) fn forward(&self, seqs: &[Vec<u32>]) -> Result<Vec<f32>> {
        let h = self.hidden;
        let lens: Vec<usize> = seqs.iter().map(Vec::len).collect();
        let n: usize = lens.iter().sum();
        let vocab = self.word.rows(h);
        let mut x = vec![0f32; n * h];
        let rows = x.chunks_exact_mut(h);
        for (row, (t, &id)) in rows.zip(seqs.iter().flat_map(|s| s.iter().enumerate())) {
            let id = id as usize;
            if id >= vocab || t >= self.max_positions {
                return Err(Error::Tokenizer(format!(
                    "token {id} at position {t} is outside the model"
                )));
            }
            self.word.row_into(id, row);
            let p = &self.pos[t * h..(t + 1) * h];
            for j in 0..h {
                // (word + position) + type, the order sentence-transformers adds them in.
                row[j] = row[j] + p[j] + self.token_type[j];
            }
        }
        layer_norm(&mut x, &self.emb_ln, self.eps);
        let mut qkv = vec![0f32; n * 3 * h];
        let mut ctx = vec![0f32; n * h];
        let inter_size = self.layers.first().map_or(0, |l| l.inter.out);
        let mut inter = vec![0f32; n * inter_size];
        let mut y = vec![0f32; n * h];
        for layer in &self.layers {
            linear(&x, &layer.qkv, &mut qkv, None);
            self.attention(&qkv, &lens, &mut ctx);
            linear(&ctx, &layer.attn_out, &mut y, Some(&x));
            layer_norm(&mut y, &layer.ln1, self.eps);
            std::mem::swap(&mut x, &mut y);
            linear(&x, &layer.inter, &mut inter, None);
            activate(&mut inter, self.act);
            linear(&inter, &layer.out, &mut y, Some(&x));
            layer_norm(&mut y, &layer.ln2, self.eps);
            std::mem::swap(&mut x, &mut y);
        }
        Ok(x)
    }

    /// Scaled dot-product attention of every sequence and head; writes `ctx` `[n, hidden]`.
    fn attention(&self, qkv: &[f32], lens: &[usize], ctx: &mut [f32]) {
        let h = self.hidden;
        let d = h / self.heads;
        let scale = 1.0 / (d as f32).sqrt();
        // Each sequence's rows of qkv and ctx, split off so sequences run in parallel.
        let mut jobs = Vec::with_capacity(lens.len());
        let (mut q_rest, mut c_rest) = (qkv, ctx);
        for &len in lens {
            let (q, qr) = q_rest.split_at(len * 3 * h);
            let (c, cr) = std::mem::take(&mut c_rest).split_at_mut(len * h);
            jobs.push((len, q, c));
            (q_rest, c_rest) = (qr, cr);
        }
        jobs.into_par_iter().for_each_init(Vec::new, |scores, (len, q, c)| {
            scores.resize(len * len, 0.0);
            let all = MatRef::from_row_major_slice(q, len, 3 * h);
            let mut out = MatMut::from_row_major_slice_mut(c, len, h);
            for head in 0..self.heads {
                let qh = all.submatrix(0, head * d, len, d);
                let kh = all.submatrix(0, h + head * d, len, d);
                let vh = all.submatrix(0, 2 * h + head * d, len, d);
                let s = MatMut::from_row_major_slice_mut(scores.as_mut_slice(), len, len);
                matmul(s, Accum::Replace, qh, kh.transpose(), scale, Par::Seq);
                simd(
                    #[inline(always)]
                    || {
                        for row in scores.chunks_exact_mut(len) {
                            softmax(row);
                        }
                    },
                );
                let p = MatRef::from_row_major_slice(scores.as_slice(), len, len);
                let dst = out.as_mut().submatrix_mut(0, head * d, len, d);
                matmul(dst, Accum::Replace, p, vh, 1.0, Par::Seq);
            }
        });
    }
}

/// Rows per parallel task of the element-wise passes.
const ROWS_PER_TASK: usize = 64;

/// `out = x · Wᵀ + b (+ residual)`, all row-major.
fn linear(x: &[f32], l: &Linear, out: &mut [f32], residual: Option<&[f32]>) {
    if let Some(q) = &l.int8 {
        return q.forward(x, &l.b, out, residual);
    }
    let n = x.len() / l.inp;
    let block = ROWS_PER_TASK * l.out;
    out.par_chunks_mut(block).enumerate().for_each(|(i, rows)| {
        simd(
            #[inline(always)]
            || match residual {
                Some(r) => {
                    let r = &r[i * block..i * block + rows.len()];
                    for (row, r) in rows.chunks_exact_mut(l.out).zip(r.chunks_exact(l.out)) {
                        for ((o, b), r) in row.iter_mut().zip(&l.b).zip(r) {
                            *o = b + r;
                        }
                    }
                }
                None => rows.chunks_exact_mut(l.out).for_each(|row| row.copy_from_slice(&l.b)),
            },
        );
    });
    let a = MatRef::from_row_major_slice(x, n, l.inp);
    let w = MatRef::from_row_major_slice(&l.w, l.out, l.inp).transpose();
    let dst = MatMut::from_row_major_slice_mut(out, n, l.out);
    let par = Par::rayon(0);
    matmul(dst, Accum::Add, a, w, 1.0, par);
}

fn layer_norm(x: &mut [f32], norm: &Norm, eps: f32) {
    let h = norm.w.len();
    x.par_chunks_mut(ROWS_PER_TASK * h).for_each(|rows| {
        simd(
            #[inline(always)]
            || {
                for row in rows.chunks_exact_mut(h) {
                    let mean = lane_sum(row, |v| v) / h as f32;
                    let var = lane_sum(row, |v| (v - mean) * (v - mean)) / h as f32;
                    let inv = 1.0 / (var + eps).sqrt();
                    for ((v, w), b) in row.iter_mut().zip(&norm.w).zip(&norm.b) {
                        *v = (*v - mean) * inv * w + b;
                    }
                }
            },
        );
    });
}

/// `Σ f(v)` with eight independent accumulators, so the loop vectorises.
#[inline(always)]
fn lane_sum(row: &[f32], f: impl Fn(f32) -> f32) -> f32 {
    let mut lanes = [0f32; 8];
    let mut chunks = row.chunks_exact(8);
    for c in &mut chunks {
        for i in 0..8 {
            lanes[i] += f(c[i]);
        }
    }
    lanes.iter().sum::<f32>() + chunks.remainder().iter().map(|v| f(*v)).sum::<f32>()
}

fn activate(x: &mut [f32], act: Activation) {
    x.par_chunks_mut(16 * 1024).for_each(|block| {
        simd(
            #[inline(always)]
            || match act {
                Activation::Gelu => {
                    for v in block.iter_mut() {
                        *v = 0.5 * *v * (1.0 + erf(*v * std::f32::consts::FRAC_1_SQRT_2));
                    }
                }
                Activation::GeluTanh => {
                    for v in block.iter_mut() {
                        let u = 0.797_884_6 * (*v + 0.044_715 * *v * *v * *v);
                        *v = 0.5 * *v * (1.0 + tanh(u));
                    }
                }
                Activation::Relu => {
                    for v in block.iter_mut() {
                        *v = v.max(0.0);
                    }
                }
            },
        );
    });
}

/// Softmax in place. Separate passes with lane-wise accumulators, so each one vectorises
/// (a single loop with a running float sum stays scalar).
#[inline(always)]
fn softmax(row: &mut [f32]) {
    let mut lanes = [f32::NEG_INFINITY; 8];
    let mut chunks = row.chunks_exact(8);
    for c in &mut chunks {
        for i in 0..8 {
            lanes[i] = lanes[i].max(c[i]);
        }
    }
    let max = chunks.remainder().iter().chain(&lanes).copied().fold(f32::NEG_INFINITY, f32::max);
    for v in row.iter_mut() {
        *v = exp(*v - max);
    }
    let inv = 1.0 / lane_sum(row, |v| v);
    for v in row.iter_mut() {
        *v *= inv;
    }
}

/// `eˣ` by range reduction and Cephes' polynomial (relative error ≈ 1e-7), branch-free so loops
/// over it vectorise.
#[inline(always)]
fn exp(x: f32) -> f32 {
    const SHIFT: f32 = 12_582_912.0; // 1.5·2²³: adding it rounds to an integer in the low bits.
    let x = x.clamp(-87.3, 88.3);
    let t = x * std::f32::consts::LOG2_E + SHIFT;
    let n = t - SHIFT;
    let r = x - n * 0.693_359_4 + n * 2.121_944_4e-4;
    let mut p = 1.987_569_1e-4_f32;
    p = p * r + 1.398_199_9e-3;
    p = p * r + 8.333_452e-3;
    p = p * r + 4.166_579_6e-2;
    p = p * r + 0.166_666_65;
    p = p * r + 0.5;
    let e = p * r * r + r + 1.0;
    let bits = (t.to_bits().wrapping_sub(SHIFT.to_bits()) as i32 + 127) << 23;
    e * f32::from_bits(bits as u32)
}

/// `erf` by Abramowitz & Stegun 7.1.26 (1.5e-7 in exact arithmetic, 5e-7 in f32).
#[inline(always)]
fn erf(x: f32) -> f32 {
    let a = x.abs();
    let t = 1.0 / (1.0 + 0.327_591_1 * a);
    let poly = t
        * (0.254_829_6
            + t * (-0.284_496_74 + t * (1.421_413_7 + t * (-1.453_152_1 + t * 1.061_405_4))));
    let y = 1.0 - poly * exp(-a * a);
    y.copysign(x)
}

#[inline(always)]
fn tanh(x: f32) -> f32 {
    let e = exp(2.0 * x.clamp(-15.0, 15.0));
    (e - 1.0) / (e + 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fast_math_is_accurate() {
        for i in -2000..=2000 {
            let x = i as f32 / 100.0;
            let (e, want) = (exp(x), x.exp());
            assert!(((e - want) / want).abs() < 3e-7, "exp({x}) = {e}, want {want}");
            let want = libm_erf(f64::from(x));
            if x.abs() > 5.0 {
                continue;
            }
            assert!((f64::from(erf(x)) - want).abs() < 5e-7, "erf({x}) = {} want {want}", erf(x));
        }
        assert!(exp(-200.0) < 1e-37 && exp(200.0).is_finite());
    }

    /// erf by its Taylor series / continued fraction in f64, for checking.
    fn libm_erf(x: f64) -> f64 {
        if x.abs() > 6.0 {
            return x.signum();
        }
        // Σ (-1)^n x^(2n+1) / (n! (2n+1)) · 2/√π converges for |x| ≤ 6 in f64 with enough terms.
        let mut sum = 0.0;
        let mut term = x;
        for n in 0..200 {
            sum += term / f64::from(2 * n + 1);
            term *= -x * x / f64::from(n + 1);
        }
        sum * 2.0 / std::f64::consts::PI.sqrt()
    }
}
