//! A learned pair score: logistic regression over what pair similarity already computes —
//! whole-text cosine, the chunk-pair score, the best chunk pair's cosine — and over the two
//! texts' words (length ratio, overlap, containment, lengths, words only one side has), plus
//! the three cosines of each further model the scorer holds and the products of the models'
//! whole-text cosines and the overlap. Fitted on labelled pairs (`ckeep pairs --learn`), saved
//! as JSON, and applied by `similar --pair-model` and `dedup --pair-model`. Features are
//! standardised with the training pairs' means and deviations; the fit is Newton's method with
//! a small L2 penalty (at most 36 parameters, so it converges in a few steps and needs no
//! learning rate).

use std::collections::HashSet;

use ckeep_index::Analyzer;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::similar::PairScore;

/// The features of the first model and of the texts, in order.
pub const FEATURES: [&str; 11] = [
    "whole_cosine",
    "chunk_pair",
    "top_pair_cosine",
    "length_ratio",
    "lexical_overlap",
    "containment_min",
    "containment_max",
    "log_terms_min",
    "log_terms_max",
    "unshared_terms_min",
    "unshared_terms_max",
];
/// The features each further model adds, in order (named `FEATURE:MODEL`).
pub const FURTHER_MODEL_FEATURES: [&str; 3] = ["whole_cosine", "chunk_pair", "top_pair_cosine"];
/// What a saved model file says it is.
const KIND: &str = "ckeep-pair-logistic";
/// L2 penalty on the weights (standardised features), against separable training sets.
const L2: f64 = 1e-3;

/// One pair's features: [`FEATURES`], then [`FURTHER_MODEL_FEATURES`] of each further model,
/// then the products of every two of the models' whole-text cosines and the lexical overlap
/// (squares included: where the models agree, and how far the words agree with them, is what
/// a straight line through the cosines misses).
pub type Features = Vec<f64>;

/// The features' names for a scorer with these further models.
pub fn feature_names(further_models: &[String]) -> Vec<String> {
    let mut names: Vec<String> = FEATURES.iter().map(|s| (*s).to_string()).collect();
    for model in further_models {
        names.extend(FURTHER_MODEL_FEATURES.iter().map(|f| format!("{f}:{model}")));
    }
    let crossed: Vec<String> = std::iter::once(FEATURES[0].to_string())
        .chain(further_models.iter().map(|m| format!("{}:{m}", FEATURES[0])))
        .chain(std::iter::once(FEATURES[4].to_string()))
        .collect();
    names.extend(products(&crossed, |a, b| format!("{a}*{b}")));
    names
}

/// `f(a, b)` for every two items of `items`, each with itself too, in order.
fn products<T, U>(items: &[T], f: impl Fn(&T, &T) -> U) -> Vec<U> {
    let mut out = Vec::with_capacity(items.len() * (items.len() + 1) / 2);
    for (i, a) in items.iter().enumerate() {
        out.extend(items[i..].iter().map(|b| f(a, b)));
    }
    out
}

/// The features of texts `a` and `b` scored `score`.
pub fn features(score: &PairScore, a: &str, b: &str) -> Features {
    let (la, lb) = (a.chars().count() as f64, b.chars().count() as f64);
    let length_ratio = if la.max(lb) == 0.0 { 1.0 } else { la.min(lb) / la.max(lb) };
    // CJK bigrams and Latin words alike, so the overlap means the same in every script.
    let (wa, wb) = (Analyzer::Cjk.terms(a), Analyzer::Cjk.terms(b));
    // A cosine means more between long texts than between short ones: the lengths let the
    // fit tell them apart.
    let (na, nb) = ((wa.len() as f64).ln_1p(), (wb.len() as f64).ln_1p());
    let (ta, tb): (HashSet<String>, HashSet<String>) =
        (wa.into_iter().collect(), wb.into_iter().collect());
    let shared = ta.intersection(&tb).count() as f64;
    let share = |n: usize| if n == 0 { 0.0 } else { shared / n as f64 };
    // How much of each text's words the other has: low on one side when a text asks more.
    let (ca, cb) = (share(ta.len()), share(tb.len()));
    let overlap = share(ta.union(&tb).count());
    // Words one text has and the other lacks, counted: one extra word can change a question.
    let (ua, ub) = (ta.difference(&tb).count() as f64, tb.difference(&ta).count() as f64);
    let mut x = vec![
        f64::from(score.whole),
        f64::from(score.chunk_pair),
        score.top.first().map_or(f64::from(score.whole), |p| f64::from(p.cosine)),
        length_ratio,
        overlap,
        ca.min(cb),
        ca.max(cb),
        na.min(nb),
        na.max(nb),
        ua.min(ub),
        ua.max(ub),
    ];
    for m in &score.more {
        x.extend([f64::from(m.whole), f64::from(m.chunk_pair), f64::from(m.top_cosine)]);
    }
    let crossed: Vec<f64> = std::iter::once(f64::from(score.whole))
        .chain(score.more.iter().map(|m| f64::from(m.whole)))
        .chain(std::iter::once(overlap))
        .collect();
    x.extend(products(&crossed, |a, b| a * b));
    x
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
    /// Further models whose cosines are features too, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub further_models: Vec<String>,
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
    pub fn fit(
        x: &[Features],
        labels: &[bool],
        scorer: &crate::similar::PairScorer,
    ) -> Result<Self> {
        let names = scorer.model_names();
        let features = feature_names(&names[1..]);
        let d = features.len();
        if x.len() != labels.len() || !labels.contains(&true) || !labels.contains(&false) {
            return Err(Error::Invalid(
                "learning a pair score needs labelled pairs of both kinds".into(),
            ));
        }
        if x.iter().any(|r| r.len() != d) {
            return Err(Error::Invalid(format!("every pair needs {d} features")));
        }
        let n = x.len() as f64;
        let mean: Vec<f64> = (0..d).map(|f| x.iter().map(|r| r[f]).sum::<f64>() / n).collect();
        let scale: Vec<f64> = (0..d)
            .map(|f| {
                let var = x.iter().map(|r| (r[f] - mean[f]).powi(2)).sum::<f64>() / n;
                if var > 1e-12 { var.sqrt() } else { 1.0 }
            })
            .collect();
        let z: Vec<Vec<f64>> = x
            .iter()
            .map(|r| {
                std::iter::once(1.0).chain((0..d).map(|f| (r[f] - mean[f]) / scale[f])).collect()
            })
            .collect();
        let beta = newton(&z, labels);
        let mut model = Self {
            kind: KIND.into(),
            features,
            mean,
            scale,
            weights: beta[1..].to_vec(),
            bias: beta[0],
            threshold: 0.5,
            model: names[0].clone(),
            further_models: names[1..].to_vec(),
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
            + (0..self.weights.len())
                .map(|f| {
                    self.weights[f] * (x.get(f).copied().unwrap_or(0.0) - self.mean[f])
                        / self.scale[f]
                })
                .sum::<f64>();
        1.0 / (1.0 + (-logit).exp())
    }

    /// Reads a saved model, refusing files that are not one.
    pub fn load(path: &std::path::Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            Error::Invalid(format!("cannot read the pair model {}: {e}", path.display()))
        })?;
        let model: Self = serde_json::from_str(&text)
            .map_err(|e| Error::Invalid(format!("{} is not a pair model: {e}", path.display())))?;
        let d = feature_names(&model.further_models).len();
        if model.kind != KIND
            || model.further_models.len() > crate::similar::MAX_FURTHER_PAIR_MODELS
            || [model.weights.len(), model.mean.len(), model.scale.len()]
                != [model.features.len(); 3]
        {
            return Err(Error::Invalid(format!("{} is not a pair model", path.display())));
        }
        // Each feature is divided by its scale: a zero or negative one (a hand edit) would turn
        // every probability into NaN or invert the feature, silently.
        if let Some(bad) = model.scale.iter().find(|s| !(s.is_finite() && **s > 0.0)) {
            return Err(Error::Invalid(format!(
                "{} is not a usable pair model: a feature's scale is {bad}, where it must be positive",
                path.display()
            )));
        }
        if model.features != feature_names(&model.further_models) {
            return Err(Error::Invalid(format!(
                "{} was fitted on other features ({} of them, where this ckeep computes {d}), by an older ckeep; fit it again with `ckeep pairs --learn --save-model`",
                path.display(),
                model.features.len()
            )));
        }
        Ok(model)
    }

    /// Every model the features come from, the first model first.
    pub fn models(&self) -> Vec<String> {
        std::iter::once(&self.model).chain(&self.further_models).cloned().collect()
    }

    /// Checks that `scorer` makes features the way this model was fitted on.
    pub fn check(&self, scorer: &crate::similar::PairScorer) -> Result<()> {
        if scorer.model_names() != self.models() || scorer.chunker().to_string() != self.chunker {
            let flags: Vec<String> = self.models().iter().map(|m| format!("--model {m}")).collect();
            return Err(Error::Invalid(format!(
                "the pair model was fitted on {} with chunker {}; pass {} --chunker {}",
                self.models().join(" + "),
                self.chunker,
                flags.join(" "),
                self.chunker
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
fn newton(z: &[Vec<f64>], labels: &[bool]) -> Vec<f64> {
    let d = z.first().map_or(1, Vec::len);
    let mut beta = vec![0.0; d];
    for _ in 0..50 {
        let mut grad = vec![0.0; d];
        let mut hess = vec![vec![0.0; d]; d];
        for (row, &y) in z.iter().zip(labels) {
            let p = 1.0 / (1.0 + (-row.iter().zip(&beta).map(|(x, b)| x * b).sum::<f64>()).exp());
            let w = (p * (1.0 - p)).max(1e-9);
            let residual = p - f64::from(u8::from(y));
            for (j, (g, h)) in grad.iter_mut().zip(&mut hess).enumerate() {
                *g += residual * row[j];
                for (cell, x) in h.iter_mut().zip(row) {
                    *cell += w * row[j] * x;
                }
            }
        }
        for j in 1..d {
            grad[j] += L2 * z.len() as f64 * beta[j];
            hess[j][j] += L2 * z.len() as f64;
        }
        let step = solve(hess, grad);
        let mut moved = 0.0f64;
        for (b, s) in beta.iter_mut().zip(&step) {
            *b -= s;
            moved = moved.max(s.abs());
        }
        if moved < 1e-10 {
            break;
        }
    }
    beta
}

/// Solves `matrix · x = rhs` by Gaussian elimination with partial pivoting (the matrix is
/// positive definite here, so it never fails).
fn solve(mut matrix: Vec<Vec<f64>>, mut rhs: Vec<f64>) -> Vec<f64> {
    let d = rhs.len();
    let safe = |v: f64| if v.abs() < 1e-300 { 1e-300 } else { v };
    for col in 0..d {
        let pivot = (col..d)
            .max_by(|&i, &j| matrix[i][col].abs().total_cmp(&matrix[j][col].abs()))
            .unwrap_or(col);
        matrix.swap(col, pivot);
        rhs.swap(col, pivot);
        let pivot_row = matrix[col].clone();
        for row in col + 1..d {
            let factor = matrix[row][col] / safe(pivot_row[col]);
            for (cell, above) in matrix[row].iter_mut().zip(&pivot_row).skip(col) {
                *cell -= factor * above;
            }
            rhs[row] -= factor * rhs[col];
        }
    }
    let mut solution = vec![0.0; d];
    for row in (0..d).rev() {
        let known: f64 = (row + 1..d).map(|k| matrix[row][k] * solution[k]).sum();
        solution[row] = (rhs[row] - known) / safe(matrix[row][row]);
    }
    solution
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn features_match_their_names_and_cross_every_models_cosine() {
        use crate::similar::{ChunkPair, ModelPairScore};
        let more = |model: &str, whole| ModelPairScore {
            model: model.into(),
            chunk_pair: 0.5,
            whole,
            top_cosine: 0.6,
        };
        let score = PairScore {
            chunk_pair: 0.7,
            whole: 0.8,
            top: vec![ChunkPair { a: 0, b: 0, cosine: 0.9 }],
            more: vec![more("m2", 0.4), more("m3", 0.3)],
        };
        // Words: {cook, brown, rice, quickly} and {cook, rice}: 2 shared of 4.
        let x = features(&score, "cook brown rice quickly", "cook rice");
        let names = feature_names(&["m2".into(), "m3".into()]);
        assert_eq!(x.len(), names.len());
        let at = |name: &str| x[names.iter().position(|n| n == name).expect(name)];
        assert!((at("lexical_overlap") - 0.5).abs() < 1e-12);
        assert!((at("containment_min") - 0.5).abs() < 1e-12);
        assert!((at("containment_max") - 1.0).abs() < 1e-12);
        assert!((at("top_pair_cosine") - 0.9).abs() < 1e-6);
        assert!((at("log_terms_min") - 3f64.ln()).abs() < 1e-12);
        assert!((at("log_terms_max") - 5f64.ln()).abs() < 1e-12);
        assert!(at("unshared_terms_min").abs() < 1e-12);
        assert!((at("unshared_terms_max") - 2.0).abs() < 1e-12);
        assert!((at("whole_cosine:m3") - 0.3).abs() < 1e-6);
        assert!((at("whole_cosine:m2*whole_cosine:m3") - 0.12).abs() < 1e-6);
        assert!((at("whole_cosine*lexical_overlap") - 0.4).abs() < 1e-6);
        assert!((at("lexical_overlap*lexical_overlap") - 0.25).abs() < 1e-12);
    }

    #[test]
    fn a_model_fitted_on_other_features_is_refused_with_the_way_out() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.json");
        let old = serde_json::json!({
            "kind": KIND, "features": FEATURES[..5], "mean": vec![0.0; 5],
            "scale": vec![1.0; 5], "weights": vec![1.0; 5], "bias": 0.0, "threshold": 0.5, "model": "all-MiniLM-L6-v2",
            "chunker": "words:dynamic", "top_k": 3, "trained_on": 10,
        });
        std::fs::write(&path, old.to_string()).unwrap();
        let err = PairModel::load(&path).unwrap_err().to_string();
        assert!(err.contains("fit it again"), "{err}");
        std::fs::write(&path, "{\"kind\": \"other\"}").unwrap();
        assert!(PairModel::load(&path).is_err());
    }

    #[test]
    fn a_model_with_a_scale_that_is_not_positive_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("edited.json");
        let names = feature_names(&[]);
        let d = names.len();
        let mut model = serde_json::json!({
            "kind": KIND, "features": names, "mean": vec![0.0; d],
            "scale": vec![1.0; d], "weights": vec![1.0; d], "bias": 0.0, "threshold": 0.5, "model": "all-MiniLM-L6-v2",
            "chunker": "words:dynamic", "top_k": 3, "trained_on": 10,
        });
        std::fs::write(&path, model.to_string()).unwrap();
        assert!(PairModel::load(&path).is_ok());
        for bad in [0.0, -1.0] {
            model["scale"][2] = bad.into();
            std::fs::write(&path, model.to_string()).unwrap();
            let err = PairModel::load(&path).unwrap_err().to_string();
            assert!(err.contains("must be positive"), "{err}");
        }
    }

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
            z.push(vec![1.0, x0, x1]);
            labels.push(next() < p);
        }
        let beta = newton(&z, &labels);
        assert!((beta[0] - 0.5).abs() < 0.1, "{beta:?}");
        assert!((beta[1] - 2.0).abs() < 0.15, "{beta:?}");
        assert!((beta[2] + 1.0).abs() < 0.1, "{beta:?}");
    }
}
