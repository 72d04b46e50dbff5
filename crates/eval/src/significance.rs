//! Paired significance tests over per-query values of two strategies on the same queries.

/// Two-sided paired randomisation (permutation) test: the share of `rounds` random sign flips of
/// the per-query differences whose mean is at least as far from 0 as the observed one (Smucker,
/// Allan & Carterette 2007, "A comparison of statistical significance tests for information
/// retrieval evaluation"). Deterministic: a fixed-seed generator, so reports are reproducible.
///
/// # Panics
/// If `a` and `b` differ in length.
pub fn paired_randomization(a: &[f64], b: &[f64], rounds: usize) -> f64 {
    assert_eq!(a.len(), b.len(), "paired values");
    let diffs: Vec<f64> = a.iter().zip(b).map(|(x, y)| x - y).collect();
    if diffs.is_empty() || rounds == 0 {
        return 1.0;
    }
    let observed = diffs.iter().sum::<f64>().abs();
    let mut rng = SplitMix64(0x5eed_c0ff_ee00_0001);
    let mut extreme = 0usize;
    for _ in 0..rounds {
        let mut sum = 0.0;
        let mut bits = 0u64;
        for (i, d) in diffs.iter().enumerate() {
            if i % 64 == 0 {
                bits = rng.next();
            }
            sum += if bits & 1 == 1 { *d } else { -*d };
            bits >>= 1;
        }
        // A small tolerance counts exact ties (e.g. all differences zero) as extreme.
        if sum.abs() >= observed - 1e-12 {
            extreme += 1;
        }
    }
    (extreme + 1) as f64 / (rounds + 1) as f64
}

/// Two-sided paired t-test p-value (Student's t with n − 1 degrees of freedom).
///
/// # Panics
/// If `a` and `b` differ in length.
pub fn paired_t_test(a: &[f64], b: &[f64]) -> f64 {
    assert_eq!(a.len(), b.len(), "paired values");
    let n = a.len();
    if n < 2 {
        return 1.0;
    }
    let diffs: Vec<f64> = a.iter().zip(b).map(|(x, y)| x - y).collect();
    let mean = diffs.iter().sum::<f64>() / n as f64;
    let var = diffs.iter().map(|d| (d - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    if var == 0.0 {
        return if mean == 0.0 { 1.0 } else { 0.0 };
    }
    let t = mean / (var / n as f64).sqrt();
    let df = (n - 1) as f64;
    // P(|T| > t) = I_{df/(df+t²)}(df/2, 1/2): the regularised incomplete beta keeps precision
    // where 1 − CDF(t) would round to 0.
    statrs::function::beta::beta_reg(df / 2.0, 0.5, df / (df + t * t))
}

/// The 95 % paired bootstrap interval of mean(b) − mean(a): `rounds` resamples of the queries
/// with replacement (Efron & Tibshirani 1993, percentile interval), from a fixed seed so reports
/// are reproducible. `(0, 0)` for no queries.
///
/// # Panics
/// If `a` and `b` differ in length.
pub fn paired_bootstrap_ci(a: &[f64], b: &[f64], rounds: usize) -> (f64, f64) {
    assert_eq!(a.len(), b.len(), "paired values");
    let n = a.len();
    if n == 0 || rounds == 0 {
        return (0.0, 0.0);
    }
    let diffs: Vec<f64> = a.iter().zip(b).map(|(x, y)| y - x).collect();
    let mut rng = SplitMix64(0x5eed_b007_57ab_0001);
    let mut means: Vec<f64> = (0..rounds)
        .map(|_| (0..n).map(|_| diffs[(rng.next() % n as u64) as usize]).sum::<f64>() / n as f64)
        .collect();
    means.sort_by(f64::total_cmp);
    let at = |q: f64| means[((q * rounds as f64) as usize).min(rounds - 1)];
    (at(0.025), at(0.975))
}

/// A small deterministic generator (Steele, Lea & Flood 2014).
pub(crate) struct SplitMix64(pub(crate) u64);

impl SplitMix64 {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identical_strategies_are_not_different() {
        let a = [0.1, 0.5, 0.9, 0.3];
        assert!((paired_randomization(&a, &a, 1000) - 1.0).abs() < 1e-12);
        assert!((paired_t_test(&a, &a) - 1.0).abs() < 1e-12);
    }

    #[test]
    fn a_consistent_gain_is_significant_and_tests_agree() {
        let a: Vec<f64> = (0..60).map(|i| f64::from(i % 7) / 10.0).collect();
        let b: Vec<f64> = a
            .iter()
            .enumerate()
            .map(|(i, x)| x + 0.05 + if i % 3 == 0 { 0.04 } else { -0.02 })
            .collect();
        let p_rand = paired_randomization(&a, &b, 10_000);
        let p_t = paired_t_test(&a, &b);
        assert!(p_rand < 0.001 && p_t < 0.001, "{p_rand} {p_t}");
    }

    #[test]
    fn bootstrap_intervals_hold_the_mean_difference_and_shrink_with_more_queries() {
        let a: Vec<f64> = (0..40).map(|i| f64::from(i % 5) / 5.0).collect();
        let b: Vec<f64> =
            a.iter().enumerate().map(|(i, x)| x + if i % 2 == 0 { 0.1 } else { 0.0 }).collect();
        let (lo, hi) = paired_bootstrap_ci(&a, &b, 5000);
        assert!(lo > 0.0 && lo < 0.05 && hi > 0.05 && hi < 0.1, "{lo} {hi}");
        let (lo2, hi2) = paired_bootstrap_ci(&a.repeat(10), &b.repeat(10), 5000);
        assert!(hi2 - lo2 < hi - lo);
        assert_eq!(paired_bootstrap_ci(&a, &a, 100), (0.0, 0.0));
    }

    #[test]
    fn t_test_matches_a_known_value() {
        // Differences 1,2,3,4,5 → t = 3/sqrt(2.5/5) = 4.2426, df 4: two-sided p = 0.013236 (scipy).
        let a = [1.0, 2.0, 3.0, 4.0, 5.0];
        let b = [0.0; 5];
        assert!((paired_t_test(&a, &b) - 0.013_236).abs() < 1e-5, "{}", paired_t_test(&a, &b));
    }
}
