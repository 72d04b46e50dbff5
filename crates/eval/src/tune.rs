//! Honest tuning: a strategy's parameters (fusion weight, RRF k, aggregation, window,
//! representation) chosen by k-fold cross-validation over queries. The queries are dealt into
//! folds by a seeded shuffle; for each fold the candidate with the best mean on the *other*
//! folds is chosen and scored on this one, so every query's score comes from parameters chosen
//! without it. The out-of-fold mean is the figure to report; the best candidate's mean over all
//! queries is optimistic (chosen on the queries it is scored on) and only shown beside it.

use serde::Serialize;

use crate::pairs::sample;

/// Most candidates a grid may expand to: each is a full evaluation run.
pub const MAX_CANDIDATES: usize = 256;

/// Longest grid spec (before its groups expand): a strategy is a line of `key=value` parts,
/// and a spec past this is a request meant to cost, not a grid.
pub const MAX_GRID_SPEC_BYTES: usize = 4096;

/// The strategies a spec with `{a,b,…}` groups stands for: every combination, in order
/// (`mode=hybrid:linear={0.3,0.5}` is two strategies). Groups do not nest. Read in one pass
/// without recursion, and stopped as soon as the combinations pass [`MAX_CANDIDATES`].
pub fn expand_grid(spec: &str) -> Result<Vec<String>, String> {
    let shown = || ckeep_core::opening(spec);
    if spec.len() > MAX_GRID_SPEC_BYTES {
        return Err(format!(
            "`{}`: a strategy grid of {} bytes; at most {MAX_GRID_SPEC_BYTES}",
            shown(),
            spec.len()
        ));
    }
    let mut out = vec![String::new()];
    let mut rest = spec;
    while !rest.is_empty() {
        let Some(open) = rest.find('{') else {
            if rest.contains('}') {
                return Err(format!("`{}`: a `}}` without its `{{`", shown()));
            }
            for s in &mut out {
                s.push_str(rest);
            }
            break;
        };
        let literal = &rest[..open];
        if literal.contains('}') {
            return Err(format!("`{}`: a `}}` without its `{{`", shown()));
        }
        let close = rest[open..]
            .find('}')
            .map(|i| open + i)
            .ok_or_else(|| format!("`{}`: a `{{` without its `}}`", shown()))?;
        let choices = &rest[open + 1..close];
        if choices.contains('{') {
            return Err(format!("`{}`: groups do not nest", shown()));
        }
        let choices: Vec<&str> = choices.split(',').map(str::trim).collect();
        if choices.iter().any(|c| c.is_empty()) {
            return Err(format!("`{}`: an empty choice in {{{}}}", shown(), choices.join(",")));
        }
        if out.len().saturating_mul(choices.len()) > MAX_CANDIDATES {
            return Err(format!("`{}` expands to more than {MAX_CANDIDATES} strategies", shown()));
        }
        out = out
            .iter()
            .flat_map(|head| choices.iter().map(move |c| format!("{head}{literal}{c}")))
            .collect();
        rest = &rest[close + 1..];
    }
    Ok(out)
}

/// The fold of each of `n` items: a seeded shuffle dealt round-robin into `folds` folds (of
/// sizes differing by at most one).
pub(crate) fn deal(n: usize, folds: usize, seed: u64) -> Vec<usize> {
    let mut fold_of = vec![0; n];
    for (position, i) in sample(n, n, seed).into_iter().enumerate() {
        fold_of[i] = position % folds.max(1);
    }
    fold_of
}

/// One fold's choice.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FoldChoice {
    /// Index of the candidate chosen on the other folds.
    pub chosen: usize,
    /// Its mean on the other folds (what it was chosen by).
    pub train_mean: f64,
    /// Its mean on this fold's queries (what is reported).
    pub held_out_mean: f64,
    /// Queries in this fold.
    pub queries: usize,
}

/// A cross-validated choice.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Tuning {
    /// One entry per fold.
    pub folds: Vec<FoldChoice>,
    /// Each query's out-of-fold value (in the order of the input's queries).
    pub out_of_fold: Vec<f64>,
    /// Their mean: the tuned score to report.
    pub mean: f64,
}

/// Cross-validates the choice among candidates: `values[c][q]` is candidate `c`'s value of the
/// objective on query `q`. Ties go to the earlier candidate. With fewer queries than `folds`,
/// each query is its own fold (leave-one-out).
///
/// # Panics
/// If `values` is empty or its rows differ in length.
pub fn cross_validate(values: &[Vec<f64>], folds: usize, seed: u64) -> Tuning {
    assert!(!values.is_empty(), "at least one candidate");
    let n = values[0].len();
    assert!(values.iter().all(|v| v.len() == n), "one value per query for every candidate");
    let folds = folds.clamp(1, n.max(1));
    let fold_of = deal(n, folds, seed);
    let mean_over = |c: usize, keep: &dyn Fn(usize) -> bool| {
        let (sum, count) =
            (0..n).filter(|&q| keep(q)).fold((0.0, 0usize), |(s, k), q| (s + values[c][q], k + 1));
        if count == 0 { 0.0 } else { sum / count as f64 }
    };
    let mut out_of_fold = vec![0.0; n];
    let mut choices = Vec::with_capacity(folds);
    for f in 0..folds {
        let train = |q: usize| fold_of[q] != f;
        let held = |q: usize| fold_of[q] == f;
        let mut chosen = 0;
        let mut best = f64::NEG_INFINITY;
        for c in 0..values.len() {
            let m = mean_over(c, &train);
            if m > best {
                (chosen, best) = (c, m);
            }
        }
        for q in (0..n).filter(|&q| held(q)) {
            out_of_fold[q] = values[chosen][q];
        }
        choices.push(FoldChoice {
            chosen,
            train_mean: best,
            held_out_mean: mean_over(chosen, &held),
            queries: (0..n).filter(|&q| held(q)).count(),
        });
    }
    let mean = if n == 0 { 0.0 } else { out_of_fold.iter().sum::<f64>() / n as f64 };
    Tuning { folds: choices, out_of_fold, mean }
}

/// `values[c][q]`: candidate `c`'s first metric on query `ids[q]`; a query a candidate retrieved
/// nothing for scores 0, as it would in any ranking.
pub fn per_query(c: &crate::experiment::Comparison, ids: &[&str]) -> Vec<Vec<f64>> {
    c.strategies
        .iter()
        .map(|s| {
            let e = &s.evaluation;
            let at: std::collections::HashMap<&str, f64> = e
                .queries
                .iter()
                .map(String::as_str)
                .zip(e.per_query.iter().map(|v| v[0]))
                .collect();
            ids.iter().map(|q| at.get(q).copied().unwrap_or(0.0)).collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grids_expand_to_every_combination() {
        assert_eq!(expand_grid("mode=bm25").unwrap(), ["mode=bm25"]);
        assert_eq!(
            expand_grid("mode=hybrid:linear={0.3, 0.5},agg={max,mean:3}").unwrap(),
            [
                "mode=hybrid:linear=0.3,agg=max",
                "mode=hybrid:linear=0.3,agg=mean:3",
                "mode=hybrid:linear=0.5,agg=max",
                "mode=hybrid:linear=0.5,agg=mean:3",
            ]
        );
        for bad in ["a={x", "a=x}", "a={x,,y}", "a={{x}}"] {
            assert!(expand_grid(bad).is_err(), "{bad}");
        }
        let huge = "a={1,2,3,4,5,6,7,8,9},b={1,2,3,4,5,6,7,8,9},c={1,2,3,4}";
        assert!(expand_grid(huge).unwrap_err().contains("more than"));
        // 100,000 one-choice groups (a request meant to cost): refused by length, and the
        // error names the spec by its start only.
        let hostile = format!("k=1{}", "{1}".repeat(100_000));
        let err = expand_grid(&hostile).unwrap_err();
        assert!(err.contains("at most 4096") && err.len() < 300, "{err}");
        // Groups up to the bound expand without recursion.
        let many = format!("k=1{}", "{0}".repeat(1_300));
        assert_eq!(expand_grid(&many).unwrap(), [format!("k=1{}", "0".repeat(1_300))]);
    }

    #[test]
    fn each_query_is_scored_by_a_choice_made_without_it() {
        // Candidate 1 is best on every query but one; that query is the only one where
        // candidate 0 wins, so in its fold the choice (made without it) is still candidate 1.
        let mut good = vec![0.8; 10];
        good[3] = 0.1;
        let mut weak = vec![0.5; 10];
        weak[3] = 1.0;
        let t = cross_validate(&[weak.clone(), good.clone()], 5, 7);
        assert_eq!(t.folds.len(), 5);
        assert!(t.folds.iter().all(|f| f.chosen == 1 && f.queries == 2));
        assert_eq!(t.out_of_fold, good);
        assert!((t.mean - good.iter().sum::<f64>() / 10.0).abs() < 1e-12);
        // Every query lands in exactly one fold, whatever the seed.
        for seed in 0..20 {
            let t = cross_validate(&[weak.clone(), good.clone()], 3, seed);
            assert_eq!(t.folds.iter().map(|f| f.queries).sum::<usize>(), 10);
        }
    }

    #[test]
    fn an_in_sample_winner_can_lose_out_of_fold() {
        // Candidate 1 wins overall only through one lucky query; left out, it is never chosen
        // for that query's fold, and the out-of-fold mean is below its in-sample mean.
        let steady = vec![0.6; 6];
        let lucky = vec![0.55, 0.55, 0.55, 0.55, 0.55, 1.0];
        let t = cross_validate(&[steady.clone(), lucky.clone()], 6, 1);
        let in_sample = lucky.iter().sum::<f64>() / 6.0;
        assert!(in_sample > 0.6);
        assert!(t.mean < in_sample);
        assert!(
            (t.out_of_fold[5] - 0.6).abs() < 1e-12,
            "the lucky query is scored by the steady choice"
        );
    }
}
