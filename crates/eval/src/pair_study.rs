//! A labelled-pair study, as `ckeep pairs` and `ckeep.pairs` run it: every pair scored by
//! whole-text cosine and by chunk-pair similarity, both judged at a fixed threshold and, given
//! calibration pairs, at each method's best threshold on those, with ROC-AUC, average precision
//! and McNemar's test between the methods.

use ckeep_engine::{EmbeddedText, PairFeatures, PairModel, PairScorer, pair_features};
use serde::Serialize;

use crate::pair_file::LabelledPair;
use crate::pairs::{
    Classification, average_precision, best_threshold, classify, mcnemar, roc_auc, sample,
};

/// Texts embedded per model call (and progress step).
const TEXTS_PER_BATCH: usize = 4096;

/// Both methods' scores of a set of pairs, in pair order.
#[derive(Debug, Clone, Default)]
pub struct PairScores {
    /// The pairs' labels.
    pub labels: Vec<bool>,
    /// Whole-text cosines.
    pub whole: Vec<f32>,
    /// Chunk-pair scores.
    pub chunk: Vec<f32>,
    /// The features a learned pair score reads (see `ckeep_engine::PairModel`).
    pub features: Vec<PairFeatures>,
}

/// One method at one threshold.
#[derive(Debug, Clone, Serialize)]
pub struct MethodResult {
    /// `whole text, fixed`, `chunk pair, calibrated`, …
    pub method: String,
    /// Verdicts at the threshold.
    #[serde(flatten)]
    pub classification: Classification,
    /// Threshold-free: ROC-AUC of the method's scores.
    pub roc_auc: f64,
    /// Threshold-free: average precision of the method's scores.
    pub average_precision: f64,
}

/// McNemar's test between the methods at one kind of threshold.
#[derive(Debug, Clone, Serialize)]
pub struct MethodTest {
    /// `fixed` or `calibrated`.
    pub thresholds: String,
    /// Pairs only whole-text cosine judged right.
    pub whole_only: usize,
    /// Pairs only the chunk-pair score judged right.
    pub chunk_pair_only: usize,
    /// Exact two-sided p-value.
    pub p_value: f64,
}

/// A study's figures: what `ckeep pairs --json` prints.
#[derive(Debug, Clone, Serialize)]
pub struct PairStudy {
    /// The pair file, when the pairs came from one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// Pairs reported on.
    pub pairs: usize,
    /// Of them, duplicates.
    pub duplicates: usize,
    /// Pairs the calibrated thresholds were chosen on.
    pub calibration_pairs: usize,
    /// The embedding model (`A+B` when further models add features to a learned score).
    pub model: String,
    /// The chunker of the chunk-pair score.
    pub chunker: String,
    /// Chunk pairs averaged.
    pub top_k: usize,
    /// Each method at each threshold, whole text first.
    pub results: Vec<MethodResult>,
    /// One test per kind of threshold.
    pub mcnemar: Vec<MethodTest>,
    /// Seconds spent embedding and scoring.
    pub seconds: f64,
    /// Pairs (reported and calibration) scored per second.
    pub pairs_per_second: f64,
    /// Every reported pair's scores, for `--out`.
    #[serde(skip)]
    pub scores: PairScores,
    /// The calibration pairs' scores, for a learned score.
    #[serde(skip)]
    pub calibration_scores: PairScores,
    /// McNemar's test of the learned score against the whole-text cosine (see [`learn`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub learned_vs_whole: Option<LearnedTest>,
}

/// McNemar's test between the learned score and the whole-text cosine.
#[derive(Debug, Clone, Serialize)]
pub struct LearnedTest {
    /// The whole-text row compared with (`whole text, calibrated`, else `…, fixed`).
    pub against: String,
    /// Pairs only the learned score judged right.
    pub learned_only: usize,
    /// Pairs only the whole-text cosine judged right.
    pub whole_only: usize,
    /// Exact two-sided p-value.
    pub p_value: f64,
}

/// Which pairs to report and which to calibrate on.
#[derive(Debug, Clone, Copy, Default)]
pub struct PairSelection {
    /// Calibrate on this fraction of the pairs (a seeded random split) and report the rest.
    pub calibrate_split: Option<f64>,
    /// Report a seeded random sample of this many pairs (after any split).
    pub sample: Option<usize>,
    /// The seed of both.
    pub seed: u64,
}

impl PairSelection {
    /// `(report, calibration)` from the pairs and any separate calibration pairs; a split
    /// replaces those.
    pub fn apply(
        &self,
        mut report: Vec<LabelledPair>,
        mut calibration: Vec<LabelledPair>,
    ) -> Result<(Vec<LabelledPair>, Vec<LabelledPair>), ckeep_engine::Error> {
        if let Some(fraction) = self.calibrate_split {
            if report.len() < 2 || !(fraction > 0.0 && fraction < 1.0) {
                return Err(ckeep_engine::Error::Invalid(
                    "a calibration split needs at least 2 pairs and a fraction between 0 and 1"
                        .into(),
                ));
            }
            let order = sample(report.len(), report.len(), self.seed);
            let cut =
                ((report.len() as f64 * fraction).round() as usize).clamp(1, report.len() - 1);
            let pick = |ids: &[usize]| ids.iter().map(|&i| report[i].clone()).collect::<Vec<_>>();
            calibration = pick(&order[..cut]);
            report = pick(&order[cut..]);
        }
        if let Some(n) = self.sample {
            report =
                sample(report.len(), n, self.seed).into_iter().map(|i| report[i].clone()).collect();
        }
        Ok((report, calibration))
    }
}

/// Embeds every text of `sets` (batched; `progress(done, total)` after each batch) and scores
/// each pair both ways.
fn score(
    scorer: &PairScorer,
    sets: &[&[LabelledPair]],
    progress: &mut dyn FnMut(u64, u64),
) -> Result<Vec<PairScores>, ckeep_engine::Error> {
    let texts: Vec<&str> =
        sets.iter().flat_map(|s| s.iter().flat_map(|p| [p.a.as_str(), p.b.as_str()])).collect();
    let mut embedded: Vec<EmbeddedText> = Vec::with_capacity(texts.len());
    for batch in texts.chunks(TEXTS_PER_BATCH) {
        embedded.extend(scorer.embed(batch)?);
        progress(embedded.len() as u64, texts.len() as u64);
    }
    let mut next = embedded.iter();
    Ok(sets
        .iter()
        .map(|set| {
            let mut s = PairScores::default();
            for p in *set {
                let (Some(a), Some(b)) = (next.next(), next.next()) else { break };
                let score = scorer.score(a, b);
                s.labels.push(p.label);
                s.whole.push(score.whole);
                s.chunk.push(score.chunk_pair);
                s.features.push(pair_features(&score, &p.a, &p.b));
            }
            s
        })
        .collect())
}

/// Scores `report` (and `calibration`, to choose thresholds on) and judges both methods at
/// `threshold` and, with calibration pairs, at their calibrated thresholds.
pub fn study(
    scorer: &PairScorer,
    report: &[LabelledPair],
    calibration: &[LabelledPair],
    threshold: f64,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<PairStudy, ckeep_engine::Error> {
    if report.is_empty() {
        return Err(ckeep_engine::Error::Invalid("there are no pairs to score".into()));
    }
    let started = std::time::Instant::now();
    let mut scored = score(scorer, &[report, calibration], progress)?;
    let seconds = started.elapsed().as_secs_f64();
    let cal = scored.pop().unwrap_or_default();
    let rep = scored.pop().unwrap_or_default();
    let mut thresholds = vec![("fixed", threshold, threshold)];
    if !cal.labels.is_empty() {
        thresholds.push((
            "calibrated",
            best_threshold(&cal.whole, &cal.labels),
            best_threshold(&cal.chunk, &cal.labels),
        ));
    }
    let (auc_w, auc_c) = (roc_auc(&rep.whole, &rep.labels), roc_auc(&rep.chunk, &rep.labels));
    let (ap_w, ap_c) =
        (average_precision(&rep.whole, &rep.labels), average_precision(&rep.chunk, &rep.labels));
    let mut results = Vec::new();
    let mut tests = Vec::new();
    for (kind, tw, tc) in thresholds {
        let w = classify(&rep.whole, &rep.labels, tw);
        let c = classify(&rep.chunk, &rep.labels, tc);
        let t = mcnemar(&w.correct, &c.correct);
        tests.push(MethodTest {
            thresholds: kind.to_string(),
            whole_only: t.only_first,
            chunk_pair_only: t.only_second,
            p_value: t.p_value,
        });
        let row =
            |name: &str, classification: Classification, roc_auc, average_precision| MethodResult {
                method: format!("{name}, {kind}"),
                classification,
                roc_auc,
                average_precision,
            };
        results.push(row("whole text", w, auc_w, ap_w));
        results.push(row("chunk pair", c, auc_c, ap_c));
    }
    let scored_pairs = report.len() + calibration.len();
    Ok(PairStudy {
        file: None,
        pairs: report.len(),
        duplicates: rep.labels.iter().filter(|l| **l).count(),
        calibration_pairs: calibration.len(),
        model: scorer.model_names().join("+"),
        chunker: scorer.chunker().to_string(),
        top_k: scorer.top_k(),
        results,
        mcnemar: tests,
        seconds,
        pairs_per_second: scored_pairs as f64 / seconds.max(f64::MIN_POSITIVE),
        scores: rep,
        calibration_scores: cal,
        learned_vs_whole: None,
    })
}

/// A learned pair score judged honestly: fitted on the calibration pairs and reported on the
/// others, or, without calibration pairs, fitted `folds` times each without one fold of the
/// reported pairs and judged on that fold (each fold at the threshold its own fit chose), so no
/// pair is judged by a model fitted on it. Also returns the model fitted on every pair it may
/// learn from (the calibration pairs, else all), for `--save-model`.
pub fn learn(
    scorer: &PairScorer,
    study: &mut PairStudy,
    folds: usize,
    seed: u64,
) -> Result<PairModel, ckeep_engine::Error> {
    let (row, model) = learned(scorer, &study.scores, &study.calibration_scores, folds, seed)?;
    // The whole-text row at the best threshold it has (calibrated, else fixed).
    if let Some(whole) = study.results.iter().rev().find(|r| r.method.starts_with("whole text")) {
        let t = mcnemar(&row.classification.correct, &whole.classification.correct);
        study.learned_vs_whole = Some(LearnedTest {
            against: whole.method.clone(),
            learned_only: t.only_first,
            whole_only: t.only_second,
            p_value: t.p_value,
        });
    }
    study.results.push(row);
    Ok(model)
}

/// The learned score's row, and the model to save.
fn learned(
    scorer: &PairScorer,
    report: &PairScores,
    calibration: &PairScores,
    folds: usize,
    seed: u64,
) -> Result<(MethodResult, PairModel), ckeep_engine::Error> {
    let row = |method: String, scores: &[f32], verdicts: Classification| MethodResult {
        method,
        roc_auc: roc_auc(scores, &report.labels),
        average_precision: average_precision(scores, &report.labels),
        classification: verdicts,
    };
    if !calibration.labels.is_empty() {
        let model = PairModel::fit(&calibration.features, &calibration.labels, scorer)?;
        let probs: Vec<f32> = report.features.iter().map(|f| model.probability(f) as f32).collect();
        let verdicts = classify(&probs, &report.labels, model.threshold);
        return Ok((row("learned, calibrated".into(), &probs, verdicts), model));
    }
    let n = report.labels.len();
    let folds = folds.clamp(2, n.max(2));
    let fold_of = crate::tune::deal(n, folds, seed);
    let (mut probs, mut shifted) = (vec![0.0f32; n], vec![0.0f32; n]);
    for f in 0..folds {
        let train: Vec<usize> = (0..n).filter(|&i| fold_of[i] != f).collect();
        let x: Vec<PairFeatures> = train.iter().map(|&i| report.features[i].clone()).collect();
        let y: Vec<bool> = train.iter().map(|&i| report.labels[i]).collect();
        let model = PairModel::fit(&x, &y, scorer)?;
        for i in (0..n).filter(|&i| fold_of[i] == f) {
            let p = model.probability(&report.features[i]);
            probs[i] = p as f32;
            // Judged at this fold's own threshold: the same verdict as `p ≥ threshold`.
            shifted[i] = (p - model.threshold + 0.5) as f32;
        }
    }
    let model = PairModel::fit(&report.features, &report.labels, scorer)?;
    let mut verdicts = classify(&shifted, &report.labels, 0.5);
    verdicts.threshold = model.threshold;
    Ok((row(format!("learned, {folds}-fold out of fold"), &probs, verdicts), model))
}
