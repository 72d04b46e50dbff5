//! Scores of labelled pairs (duplicate or not) against their labels: accuracy with a 95 %
//! interval, precision/recall/F1 at a threshold, the accuracy-maximising threshold, ROC-AUC,
//! average precision, and McNemar's test between two scorers on the same pairs.

use serde::Serialize;

use statrs::distribution::{Binomial, DiscreteCDF};

use crate::significance::SplitMix64;

/// Verdicts at one threshold (`score ≥ threshold` means duplicate).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Classification {
    /// The threshold.
    pub threshold: f64,
    /// Share of pairs judged right.
    pub accuracy: f64,
    /// Wilson 95 % interval of the accuracy.
    pub accuracy_ci95: (f64, f64),
    /// Of the pairs called duplicates, the share that are.
    pub precision: f64,
    /// Of the duplicates, the share called so.
    pub recall: f64,
    /// Harmonic mean of precision and recall.
    pub f1: f64,
    /// Per pair: judged right?
    #[serde(skip)]
    pub correct: Vec<bool>,
}

/// Classifies `scores` against `labels` at `threshold`.
///
/// # Panics
/// If the slices differ in length.
pub fn classify(scores: &[f32], labels: &[bool], threshold: f64) -> Classification {
    assert_eq!(scores.len(), labels.len(), "one label per score");
    let called = |s: f32| f64::from(s) >= threshold;
    let correct: Vec<bool> = scores.iter().zip(labels).map(|(s, l)| called(*s) == *l).collect();
    let (mut tp, mut fp, mut fneg) = (0usize, 0usize, 0usize);
    for (s, l) in scores.iter().zip(labels) {
        match (called(*s), *l) {
            (true, true) => tp += 1,
            (true, false) => fp += 1,
            (false, true) => fneg += 1,
            (false, false) => {}
        }
    }
    let ratio = |a: usize, b: usize| if b == 0 { 0.0 } else { a as f64 / b as f64 };
    let right = correct.iter().filter(|c| **c).count();
    let (precision, recall) = (ratio(tp, tp + fp), ratio(tp, tp + fneg));
    Classification {
        threshold,
        accuracy: ratio(right, correct.len()),
        accuracy_ci95: wilson(right, correct.len()),
        precision,
        recall,
        f1: if precision + recall == 0.0 {
            0.0
        } else {
            2.0 * precision * recall / (precision + recall)
        },
        correct,
    }
}

/// Wilson score interval (95 %) of `k` successes in `n` trials.
pub fn wilson(k: usize, n: usize) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    let (z, n, p) = (1.959_964, n as f64, k as f64 / n as f64);
    let centre = (p + z * z / (2.0 * n)) / (1.0 + z * z / n);
    let half = z * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt() / (1.0 + z * z / n);
    ((centre - half).max(0.0), (centre + half).min(1.0))
}

pub use ckeep_engine::best_threshold;

/// Area under the ROC curve: the probability that a random duplicate outscores a random
/// non-duplicate, ties counting half (Mann–Whitney). 0.5 when one class is absent.
pub fn roc_auc(scores: &[f32], labels: &[bool]) -> f64 {
    let mut order: Vec<(f32, bool)> = scores.iter().copied().zip(labels.iter().copied()).collect();
    order.sort_by(|a, b| a.0.total_cmp(&b.0));
    let pos = labels.iter().filter(|l| **l).count();
    let neg = labels.len() - pos;
    if pos == 0 || neg == 0 {
        return 0.5;
    }
    // Sum of the positives' mid-ranks.
    let (mut rank_sum, mut i) = (0.0, 0);
    while i < order.len() {
        let j = (i..order.len())
            .find(|&j| order[j].0.total_cmp(&order[i].0).is_ne())
            .unwrap_or(order.len());
        let mid = (i + j + 1) as f64 / 2.0;
        rank_sum += mid * order[i..j].iter().filter(|o| o.1).count() as f64;
        i = j;
    }
    (rank_sum - (pos * (pos + 1)) as f64 / 2.0) / (pos * neg) as f64
}

/// Average precision of the ranking by score (higher first; ties in input order), as
/// scikit-learn's `average_precision_score` for untied scores.
pub fn average_precision(scores: &[f32], labels: &[bool]) -> f64 {
    let mut order: Vec<usize> = (0..scores.len()).collect();
    order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(a.cmp(&b)));
    let pos = labels.iter().filter(|l| **l).count();
    if pos == 0 {
        return 0.0;
    }
    let mut hits = 0usize;
    let mut sum = 0.0;
    for (rank, &i) in order.iter().enumerate() {
        if labels[i] {
            hits += 1;
            sum += hits as f64 / (rank + 1) as f64;
        }
    }
    sum / pos as f64
}

/// McNemar's test between two classifiers on the same pairs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct McNemar {
    /// Pairs only the first got right.
    pub only_first: usize,
    /// Pairs only the second got right.
    pub only_second: usize,
    /// Exact two-sided p-value (binomial on the discordant pairs).
    pub p_value: f64,
}

/// McNemar's exact test on per-pair correctness.
///
/// # Panics
/// If the slices differ in length.
pub fn mcnemar(first: &[bool], second: &[bool]) -> McNemar {
    assert_eq!(first.len(), second.len(), "the same pairs");
    let only_first = first.iter().zip(second).filter(|(a, b)| **a && !**b).count();
    let only_second = first.iter().zip(second).filter(|(a, b)| !**a && **b).count();
    let n = only_first + only_second;
    let k = only_first.min(only_second);
    // Two-sided: twice P(X ≤ k) for X ~ Binomial(n, ½).
    let p_value = match Binomial::new(0.5, n as u64) {
        Ok(binomial) if n > 0 => (2.0 * binomial.cdf(k as u64)).min(1.0),
        _ => 1.0,
    };
    McNemar { only_first, only_second, p_value }
}

/// `n` distinct indices below `total`, drawn with a seeded generator (all of them, shuffled,
/// if `n ≥ total`): the same seed gives the same sample.
pub fn sample(total: usize, n: usize, seed: u64) -> Vec<usize> {
    let mut all: Vec<usize> = (0..total).collect();
    let mut rng = SplitMix64(seed);
    let n = n.min(total);
    for i in 0..n {
        let j = i + (rng.next() % (total - i) as u64) as usize;
        all.swap(i, j);
    }
    all.truncate(n);
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classification_counts() {
        let scores = [0.9, 0.8, 0.6, 0.4, 0.75];
        let labels = [true, false, true, false, true];
        let c = classify(&scores, &labels, 0.7);
        assert_eq!(c.correct, [true, false, false, true, true]);
        assert!((c.accuracy - 0.6).abs() < 1e-12);
        assert!((c.precision - 2.0 / 3.0).abs() < 1e-12);
        assert!((c.recall - 2.0 / 3.0).abs() < 1e-12);
        assert!((c.f1 - 2.0 / 3.0).abs() < 1e-12);
        let (lo, hi) = c.accuracy_ci95;
        assert!(lo < 0.6 && hi > 0.6 && lo > 0.0 && hi < 1.0);
    }

    #[test]
    fn wilson_matches_a_published_value() {
        // 81 of 263: 0.2553 to 0.3662 (Wilson 1927 as tabulated by Newcombe 1998, case 1).
        let (lo, hi) = wilson(81, 263);
        assert!((lo - 0.2553).abs() < 1e-3 && (hi - 0.3662).abs() < 1e-3, "{lo} {hi}");
    }

    #[test]
    fn best_threshold_separates_separable_scores() {
        let scores = [0.1, 0.2, 0.3, 0.7, 0.8];
        let labels = [false, false, false, true, true];
        let t = best_threshold(&scores, &labels);
        assert!(t > 0.3 && t < 0.7, "{t}");
        assert!((classify(&scores, &labels, t).accuracy - 1.0).abs() < 1e-12);
        // Everything a duplicate is best when every pair is one.
        let t = best_threshold(&[0.2, 0.5], &[true, true]);
        assert!(t <= 0.2);
    }

    #[test]
    fn auc_and_ap_by_hand() {
        // Positives at 0.9 and 0.5, negatives at 0.7 and 0.1: 3 of 4 orderings right.
        let scores = [0.9, 0.7, 0.5, 0.1];
        let labels = [true, false, true, false];
        assert!((roc_auc(&scores, &labels) - 0.75).abs() < 1e-12);
        assert!(
            (average_precision(&scores, &labels) - f64::midpoint(1.0, 2.0 / 3.0)).abs() < 1e-12
        );
        // A tie between a positive and a negative counts half.
        assert!((roc_auc(&[0.5, 0.5], &[true, false]) - 0.5).abs() < 1e-12);
    }

    #[test]
    fn mcnemar_exact_p() {
        // 10 discordant pairs split 9/1: p = 2·(1 + 10)/1024.
        let first = [vec![true; 9], vec![false; 1], vec![true; 5]].concat();
        let second = [vec![false; 9], vec![true; 1], vec![true; 5]].concat();
        let t = mcnemar(&first, &second);
        assert_eq!((t.only_first, t.only_second), (9, 1));
        assert!((t.p_value - 22.0 / 1024.0).abs() < 1e-9, "{}", t.p_value);
        assert!((mcnemar(&first, &first).p_value - 1.0).abs() < 1e-12);
    }

    #[test]
    fn samples_are_seeded_and_distinct() {
        let a = sample(10_000, 500, 42);
        assert_eq!(a, sample(10_000, 500, 42));
        assert_ne!(a, sample(10_000, 500, 43));
        let mut d = a.clone();
        d.sort_unstable();
        d.dedup();
        assert_eq!(d.len(), 500);
        assert_eq!(sample(3, 10, 1).len(), 3);
    }
}
