//! A learned pair score: logistic regression over what pair similarity already computes —
//! whole-text cosine, the chunk-pair score, the best chunk pair's cosine, the length ratio and
//! the lexical overlap — fitted on labelled pairs (`ckeep pairs --learn`), saved as JSON, and
//! applied by `similar --pair-model`. Features are standardised with the training pairs'
//! means and deviations; the fit is Newton's method with a small L2 penalty (six parameters,
//! so it converges in a few steps and needs no learning rate).

use std::collections::HashSet;

use ckeep_index::Analyzer;
use serde::{Deserialize, Serialize};

use crate::similar::PairScore;
use crate::{Error, Result};

/// The features, in order.
pub const FEATURES: [&str; 5] =
    ["whole_cosine", "chunk_pair", "top_pair_cosine", "length_ratio", "lexical_overlap"];
/// What a saved model file says it is.
const KIND: &str = "ckeep-pair-logistic";
/// L2 penalty on the weights (standardised features), against separable training sets.
const L2: f64 = 1e-3;

/// One pair's features.
pub type Features = [f64; 5];

/// The features of texts `a` and `b` scored `score`.
pub fn features(score: &PairScore, a: &str, b: &str) -> Features {
    let (la, lb) = (a.chars().count() as f64, b.chars().count() as f64);
    let length_ratio = if la.max(lb) == 0.0 { 1.0 } else { la.min(lb) / la.max(lb) };
    // CJK bigrams and Latin words alike, so the overlap means the same in every script.
    let terms = |t: &str| Analyzer::Cjk.terms(t).into_iter().collect::<HashSet<String>>();
    let (ta, tb) = (terms(a), terms(b));
    let union = ta.union(&tb).count();
    let overlap = if union == 0 { 0.0 } else { ta.intersection(&tb).count() as f64 / union as f64 };
    [
        f64::from(score.whole),
        f64::from(score.chunk_pair),
        score.top.first().map_or(f64::from(score.whole), |p| f64::from(p.cosine)),
        length_ratio,
        overlap,
    ]
}

/// A fitted model, as saved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairModel {
    /// `ckeep-pair-logistic`.
    pub kind: String,
    /// The features' names, in order.
    pub features: Vec<String>,
    /// Training means, per feature.
    pub mean: Vec<f64>,
    /// Training standard deviations, per feature (1 where a feature was constant).
    pub scale: Vec<f64>,
    /// Weights of the standardised features.
    pub weights: Vec<f64>,
    /// The intercept.
    pub bias: f64,
    /// Probability at or above which a pair is a duplicate (chosen on the training pairs).
    pub threshold: f64,
    /// The embedding model the features were computed with.
    pub model: String,
    /// The pair scorer's chunker and top-k.
    pub chunker: String,
    /// Chunk pairs averaged.
    pub top_k: usize,
    /// Pairs it was fitted on.
    pub trained_on: usize,
}

impl PairModel {
    /// Fits the model on `x` with `labels` (the embedding model, chunker and top-k are
    /// recorded so the model is applied only to features made the same way).
    pub fn fit(x: &[Features], labels: &[bool], scorer: &crate::PairScorer) -> Result<Self> {
        if x.len() != labels.len() || !labels.contains(&true) || !labels.contains(&false) {
            return Err(Error::Invalid(
                "learning a pair score needs labelled pairs of both kinds".into(),
            ));
        }
        let n = x.len() as f64;
        let mean: Vec<f64> = (0..5).map(|f| x.iter().map(|r| r[f]).sum::<f64>() / n).collect();
        let scale: Vec<f64> = (0..5)
            .map(|f| {
                let var = x.iter().map(|r| (r[f] - mean[f]).powi(2)).sum::<f64>() / n;
                if var > 1e-12 { var.sqrt() } else { 1.0 }
            })
            .collect();
        let z: Vec<[f64; 6]> = x
            .iter()
            .map(|r| {
                let mut row = [1.0; 6];
                for f in 0..5 {
                    row[f + 1] = (r[f] - mean[f]) / scale[f];
                }
                row
            })
            .collect();
        let beta = newton(&z, labels);
        let mut model = Self {
            kind: KIND.into(),
            features: FEATURES.iter().map(|s| (*s).to_string()).collect(),
            mean,
            scale,
            weights: beta[1..].to_vec(),
            bias: beta[0],
            threshold: 0.5,
            model: scorer.embedder().info().name.clone(),
            chunker: scorer.chunker().to_string(),
            top_k: scorer.top_k(),
            trained_on: x.len(),
        };
        let probs: Vec<f32> = x.iter().map(|r| model.probability(r) as f32).collect();
        model.threshold = best_threshold(&probs, labels);
        Ok(model)
    }

    /// The probability that a pair with features `x` is a duplicate.
    pub fn probability(&self, x: &Features) -> f64 {
        let logit = self.bias
            + (0..5).map(|f| self.weights[f] * (x[f] - self.mean[f]) / self.scale[f]).sum::<f64>();
        1.0 / (1.0 + (-logit).exp())
    }

    /// Reads a saved model, refusing files that are not one.
    pub fn load(path: &std::path::Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            Error::Invalid(format!("cannot read the pair model {}: {e}", path.display()))
        })?;
        let model: Self = serde_json::from_str(&text)
            .map_err(|e| Error::Invalid(format!("{} is not a pair model: {e}", path.display())))?;
        if model.kind != KIND || model.weights.len() != 5 || model.mean.len() != 5 {
            return Err(Error::Invalid(format!("{} is not a pair model", path.display())));
        }
        Ok(model)
    }

    /// Checks that `scorer` makes features the way this model was fitted on.
    pub fn check(&self, scorer: &crate::PairScorer) -> Result<()> {
        let model = &scorer.embedder().info().name;
        if *model != self.model || scorer.chunker().to_string() != self.chunker {
            return Err(Error::Invalid(format!(
                "the pair model was fitted on {} with chunker {}; pass --model {} --chunker {}",
                self.model, self.chunker, self.model, self.chunker
            )));
        }
        Ok(())
    }
}

/// The threshold with the highest accuracy on these pairs: a midpoint between two adjacent
/// distinct scores (or just outside the range), the lowest of equally good ones.
pub fn best_threshold(scores: &[f32], labels: &[bool]) -> f64 {
    let mut order: Vec<(f64, bool)> =
        scores.iter().map(|s| f64::from(*s)).zip(labels.iter().copied()).collect();
    order.sort_by(|a, b| a.0.total_cmp(&b.0));
    // Threshold below everything: every pair called duplicate.
    let mut right = labels.iter().filter(|l| **l).count() as i64;
    let (mut best, mut best_right) = (order.first().map_or(0.0, |o| o.0 - 1e-6), right);
    let mut i = 0;
    while i < order.len() {
        let score = order[i].0;
        // Move every pair with this score below the threshold.
        while i < order.len() && order[i].0.total_cmp(&score).is_eq() {
            right += if order[i].1 { -1 } else { 1 };
            i += 1;
        }
        let next = order.get(i).map_or(score + 1e-6, |o| f64::midpoint(score, o.0));
        if right > best_right {
            (best, best_right) = (next, right);
        }
    }
    best
}

/// Newton's method for L2-penalised logistic regression on rows with a leading 1.
fn newton(z: &[[f64; 6]], labels: &[bool]) -> [f64; 6] {
    let mut beta = [0.0; 6];
    for _ in 0..50 {
        let mut grad = [0.0; 6];
        let mut hess = [[0.0; 6]; 6];
        for (row, &y) in z.iter().zip(labels) {
            let p = 1.0 / (1.0 + (-(0..6).map(|j| beta[j] * row[j]).sum::<f64>()).exp());
            let w = (p * (1.0 - p)).max(1e-9);
            for j in 0..6 {
                grad[j] += (p - f64::from(u8::from(y))) * row[j];
                for k in 0..6 {
                    hess[j][k] += w * row[j] * row[k];
                }
            }
        }
        for j in 1..6 {
            grad[j] += L2 * z.len() as f64 * beta[j];
            hess[j][j] += L2 * z.len() as f64;
        }
        let step = solve(hess, grad);
        let mut moved = 0.0f64;
        for j in 0..6 {
            beta[j] -= step[j];
            moved = moved.max(step[j].abs());
        }
        if moved < 1e-10 {
            break;
        }
    }
    beta
}

/// Solves `matrix · x = rhs` by Gaussian elimination with partial pivoting (the matrix is
/// positive definite here, so it never fails).
fn solve(mut matrix: [[f64; 6]; 6], mut rhs: [f64; 6]) -> [f64; 6] {
    let safe = |d: f64| if d.abs() < 1e-300 { 1e-300 } else { d };
    for col in 0..6 {
        let pivot = (col..6)
            .max_by(|&i, &j| matrix[i][col].abs().total_cmp(&matrix[j][col].abs()))
            .unwrap_or(col);
        matrix.swap(col, pivot);
        rhs.swap(col, pivot);
        let pivot_row = matrix[col];
        for row in col + 1..6 {
            let factor = matrix[row][col] / safe(pivot_row[col]);
            for (cell, above) in matrix[row].iter_mut().zip(pivot_row).skip(col) {
                *cell -= factor * above;
            }
            rhs[row] -= factor * rhs[col];
        }
    }
    let mut solution = [0.0; 6];
    for row in (0..6).rev() {
        let known: f64 = (row + 1..6).map(|k| matrix[row][k] * solution[k]).sum();
        solution[row] = (rhs[row] - known) / safe(matrix[row][row]);
    }
    solution
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newton_recovers_a_known_logistic_model() {
        // Labels drawn from p = σ(2·x0 − 1·x1 + 0.5), deterministically.
        let mut rng = 0x1234_5678_u64;
        let mut next = || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            (rng >> 11) as f64 / (1u64 << 53) as f64
        };
        let mut z = Vec::new();
        let mut labels = Vec::new();
        for _ in 0..20_000 {
            let (x0, x1) = (next() * 4.0 - 2.0, next() * 4.0 - 2.0);
            let p = 1.0 / (1.0 + (-(2.0 * x0 - x1 + 0.5)).exp());
            z.push([1.0, x0, x1, 0.0, 0.0, 0.0]);
            labels.push(next() < p);
        }
        let beta = newton(&z, &labels);
        assert!((beta[0] - 0.5).abs() < 0.1, "{beta:?}");
        assert!((beta[1] - 2.0).abs() < 0.15, "{beta:?}");
        assert!((beta[2] + 1.0).abs() < 0.1, "{beta:?}");
    }
}
