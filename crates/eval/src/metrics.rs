//! IR metrics with `trec_eval`'s definitions (as `pytrec_eval` computes them):
//!
//! - a document is relevant when its grade is > 0; unjudged documents are not relevant;
//! - `ndcg@k`: Σ gain/log2(rank+1) over the top k, gain = grade, divided by the same sum over the
//!   judged grades sorted best first (the ideal comes from the qrels, never from the run);
//! - `mrr`: 1/rank of the first relevant document; `mrr@k` counts it only within the top k;
//! - `map`: Σ precision@rank over relevant retrieved documents ÷ number of relevant documents;
//!   `map@k` stops at rank k;
//! - `recall@k`: relevant in the top k ÷ relevant; `p@k`: relevant in the top k ÷ k (even when
//!   fewer than k were retrieved); `hit@k`: 1 if any relevant document is in the top k.
//!
//! - `contain@k` (answer containment, for RAG context): 1 if one of the query's gold answers
//!   or gold passages occurs in the text of one of the top k results, compared lower-cased with
//!   runs of whitespace collapsed. It needs the retrieved text, so only `ckeep eval run` has it.
//!
//! - `alpha-ndcg[:α]@k` (α-nDCG, Clarke et al. 2008; α = 0.5 unless given, as in the TREC Web
//!   track's diversity task; α = 1 counts each family once): each relevant document covers one nugget, its family (a document and its near
//!   copies, from the dataset's `families.tsv`; a document without one is its own family); a
//!   result's gain is (1−α)^(results above it covering its nugget), so a second copy of an
//!   answer earns half and a third a quarter; divided by the ideal (one of each family first).
//!   Grades count only as relevant or not. Without families it is nDCG with binary gains.
//! - `dup@k`: share of the top k that belongs to the family of a result above it (any
//!   document, judged or not): how much of a context is repetition. Lower is better.
//!
//! Queries are scored when they are in both the run and the qrels (a judged query the run
//! skipped is reported separately, not silently averaged in); a judged query without any
//! relevant document scores 0 on every metric, as in `trec_eval`.

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

use crate::{Error, Qrels, Run};

/// One metric at an optional cut-off.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Metric {
    /// Normalised discounted cumulative gain at k.
    Ndcg(usize),
    /// Mean reciprocal rank (within the top k if given).
    Mrr(Option<usize>),
    /// Mean average precision (within the top k if given).
    Map(Option<usize>),
    /// Recall at k.
    Recall(usize),
    /// Precision at k.
    Precision(usize),
    /// Hit rate (success) at k.
    Hit(usize),
    /// Answer containment at k (needs the retrieved text, see [`Metric::needs_text`]).
    Contain(usize),
    /// α-nDCG at k over document families (novelty-aware nDCG), α in thousandths (500: the
    /// usual 0.5; 1000: a family counts once).
    AlphaNdcg(usize, u16),
    /// Share of the top k repeating a family already ranked above.
    Dup(usize),
}

/// The usual α of [`Metric::AlphaNdcg`], in thousandths: a nugget's second result earns half
/// its first's gain.
const DEFAULT_ALPHA: u16 = 500;

/// Near-copy families of documents: `doc → family`, read from a dataset's `families.tsv`
/// (`doc_id<TAB>family_id` per line). A document not listed is a family of its own.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Families(pub std::collections::HashMap<String, String>);

impl Families {
    /// The family of `doc`.
    pub fn of<'a>(&'a self, doc: &'a str) -> &'a str {
        self.0.get(doc).map_or(doc, String::as_str)
    }

    /// Reads `path` (`doc_id<TAB>family_id` lines; blank lines and `#` comments skipped).
    pub fn read(path: &std::path::Path) -> Result<Self, Error> {
        let origin = path.display().to_string();
        let text = std::fs::read_to_string(path)
            .map_err(|source| Error::Io { path: origin.clone(), source })?;
        let mut map = std::collections::HashMap::new();
        let mut problems = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim_end_matches('\r');
            if line.trim().is_empty() || line.starts_with('#') {
                continue;
            }
            match line.split_once('\t') {
                Some((doc, family)) if !doc.trim().is_empty() && !family.trim().is_empty() => {
                    map.insert(doc.trim().to_string(), family.trim().to_string());
                }
                _ => problems.push((i + 1, "expected doc_id<TAB>family_id".to_string())),
            }
        }
        if problems.is_empty() { Ok(Self(map)) } else { Err(Error::Malformed { origin, problems }) }
    }
}

impl Metric {
    /// One line per metric, for `--help`.
    pub const HELP: &'static str = "\
ndcg@K    graded gain discounted by log2(rank+1) in the top K, over the ideal from the qrels
mrr[@K]   1/rank of the first relevant result (0 if none in the top K)
map[@K]   mean of precision at each relevant result's rank, over all relevant documents
recall@K  share of the relevant documents found in the top K
p@K       share of the top K that is relevant (precision; also precision@K)
hit@K     1 if any relevant document is in the top K (hit rate, success; also hit_rate@K)
contain@K 1 if a gold answer or passage occurs in the text of one of the top K results (eval run)
alpha-ndcg[:A]@K  nDCG where a relevant document's near copies (families.tsv) earn (1−A)^n
          for the n of its family above them (A default 0.5; alpha-ndcg:1 counts a family
          once): rewards a top K that says new things
dup@K     share of the top K that is a near copy (same family) of a result above it";

    /// Whether a lower value is the better one (`dup@K`).
    pub fn lower_is_better(self) -> bool {
        matches!(self, Metric::Dup(_))
    }

    /// Whether the metric is computed from retrieved text rather than from qrels.
    pub fn needs_text(self) -> bool {
        matches!(self, Metric::Contain(_))
    }

    /// Answer containment of one query: `contexts` are the result texts, best first.
    pub fn containment(k: usize, contexts: &[String], answers: &[String]) -> f64 {
        let answers: Vec<String> =
            answers.iter().map(|a| normalize(a)).filter(|a| !a.is_empty()).collect();
        let found = contexts.iter().take(k).any(|c| {
            let c = normalize(c);
            answers.iter().any(|a| c.contains(a.as_str()))
        });
        f64::from(u8::from(found))
    }

    /// The value for one query: `ranked` documents best first, judgements `judged`. Metrics
    /// that need retrieved text ([`Metric::needs_text`]) give NaN here.
    pub fn score(
        self,
        ranked: &[(String, f64)],
        judged: Option<&std::collections::BTreeMap<String, i32>>,
    ) -> f64 {
        self.score_in(ranked, judged, &Families::default())
    }

    /// [`Metric::score`] with documents grouped into near-copy `families` (which only
    /// `alpha-ndcg` and `dup` read).
    pub fn score_in(
        self,
        ranked: &[(String, f64)],
        judged: Option<&std::collections::BTreeMap<String, i32>>,
        families: &Families,
    ) -> f64 {
        let grade = |d: &str| judged.and_then(|j| j.get(d)).copied().unwrap_or(0);
        let num_rel = judged.map_or(0, |j| j.values().filter(|g| **g > 0).count());
        let top = |k: usize| &ranked[..ranked.len().min(k)];
        let rel_in = |docs: &[(String, f64)]| docs.iter().filter(|(d, _)| grade(d) > 0).count();
        match self {
            Metric::Ndcg(k) => {
                let dcg: f64 =
                    top(k).iter().enumerate().map(|(i, (d, _))| gain(grade(d)) / discount(i)).sum();
                let mut ideal: Vec<i32> = judged
                    .map(|j| j.values().copied().filter(|g| *g > 0).collect())
                    .unwrap_or_default();
                ideal.sort_unstable_by(|a, b| b.cmp(a));
                let idcg: f64 =
                    ideal.iter().take(k).enumerate().map(|(i, g)| gain(*g) / discount(i)).sum();
                if idcg > 0.0 { dcg / idcg } else { 0.0 }
            }
            Metric::Mrr(k) => {
                let docs = k.map_or(ranked, top);
                docs.iter().position(|(d, _)| grade(d) > 0).map_or(0.0, |i| 1.0 / (i + 1) as f64)
            }
            Metric::Map(k) => {
                if num_rel == 0 {
                    return 0.0;
                }
                let docs = k.map_or(ranked, top);
                let mut found = 0usize;
                let mut sum = 0.0;
                for (i, (d, _)) in docs.iter().enumerate() {
                    if grade(d) > 0 {
                        found += 1;
                        sum += found as f64 / (i + 1) as f64;
                    }
                }
                sum / num_rel as f64
            }
            Metric::Recall(k) => {
                if num_rel == 0 {
                    0.0
                } else {
                    rel_in(top(k)) as f64 / num_rel as f64
                }
            }
            Metric::Precision(k) => rel_in(top(k)) as f64 / k as f64,
            Metric::Hit(k) => f64::from(u8::from(rel_in(top(k)) > 0)),
            Metric::Contain(_) => f64::NAN,
            Metric::AlphaNdcg(k, alpha) => {
                alpha_ndcg(k, f64::from(alpha) / 1000.0, ranked, judged, families)
            }
            Metric::Dup(k) => {
                let top = top(k);
                let mut seen = std::collections::HashSet::new();
                let repeats = top.iter().filter(|(d, _)| !seen.insert(families.of(d))).count();
                if top.is_empty() { 0.0 } else { repeats as f64 / top.len() as f64 }
            }
        }
    }
}

/// α-nDCG@k (see the module's notes): gains discounted by how often the result's family was
/// covered above it, over the ideal ranking's (every family once, then every second copy…).
fn alpha_ndcg(
    k: usize,
    alpha: f64,
    ranked: &[(String, f64)],
    judged: Option<&std::collections::BTreeMap<String, i32>>,
    families: &Families,
) -> f64 {
    use std::collections::HashMap;
    let Some(judged) = judged else { return 0.0 };
    let relevant = |d: &str| judged.get(d).is_some_and(|g| *g > 0);
    let mut covered: HashMap<&str, i32> = HashMap::new();
    let mut dcg = 0.0;
    for (i, (d, _)) in ranked.iter().take(k).enumerate() {
        if relevant(d) {
            let n = covered.entry(families.of(d)).or_default();
            dcg += (1.0 - alpha).powi(*n) / discount(i);
            *n += 1;
        }
    }
    let mut sizes: HashMap<&str, i32> = HashMap::new();
    for (d, g) in judged {
        if *g > 0 {
            *sizes.entry(families.of(d)).or_default() += 1;
        }
    }
    let mut ideal: Vec<f64> =
        sizes.values().flat_map(|&n| (0..n).map(|j| (1.0 - alpha).powi(j))).collect();
    ideal.sort_unstable_by(|a, b| b.total_cmp(a));
    let idcg: f64 = ideal.iter().take(k).enumerate().map(|(i, g)| g / discount(i)).sum();
    if idcg > 0.0 { dcg / idcg } else { 0.0 }
}

/// Lower-cased, whitespace runs collapsed to one space, trimmed.
fn normalize(s: &str) -> String {
    s.split_whitespace().map(str::to_lowercase).collect::<Vec<_>>().join(" ")
}

fn gain(grade: i32) -> f64 {
    f64::from(grade.max(0))
}

fn discount(zero_based_rank: usize) -> f64 {
    ((zero_based_rank + 2) as f64).log2()
}

impl fmt::Display for Metric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let cut = |k: &Option<usize>| k.map(|k| format!("@{k}")).unwrap_or_default();
        match self {
            Metric::Ndcg(k) => write!(f, "ndcg@{k}"),
            Metric::Mrr(k) => write!(f, "mrr{}", cut(k)),
            Metric::Map(k) => write!(f, "map{}", cut(k)),
            Metric::Recall(k) => write!(f, "recall@{k}"),
            Metric::Precision(k) => write!(f, "p@{k}"),
            Metric::Hit(k) => write!(f, "hit@{k}"),
            Metric::Contain(k) => write!(f, "contain@{k}"),
            Metric::AlphaNdcg(k, DEFAULT_ALPHA) => write!(f, "alpha-ndcg@{k}"),
            Metric::AlphaNdcg(k, alpha) => {
                write!(f, "alpha-ndcg:{}@{k}", f64::from(*alpha) / 1000.0)
            }
            Metric::Dup(k) => write!(f, "dup@{k}"),
        }
    }
}

impl FromStr for Metric {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Error> {
        let bad = || Error::Metric(s.to_string());
        let lower = s.trim().to_ascii_lowercase();
        let (name, k) = match lower.split_once('@') {
            Some((n, k)) => {
                (n.to_string(), Some(k.parse::<usize>().ok().filter(|k| *k > 0).ok_or_else(bad)?))
            }
            None => (lower.clone(), None),
        };
        let need = |k: Option<usize>| k.ok_or_else(bad);
        Ok(match name.as_str() {
            "ndcg" => Metric::Ndcg(need(k)?),
            "mrr" | "recip_rank" => Metric::Mrr(k),
            "map" => Metric::Map(k),
            "recall" => Metric::Recall(need(k)?),
            "p" | "precision" => Metric::Precision(need(k)?),
            "hit" | "hit_rate" | "success" => Metric::Hit(need(k)?),
            "contain" | "containment" => Metric::Contain(need(k)?),
            "alpha-ndcg" | "alpha_ndcg" => Metric::AlphaNdcg(need(k)?, DEFAULT_ALPHA),
            name if name.starts_with("alpha-ndcg:") => {
                let alpha = name["alpha-ndcg:".len()..]
                    .parse::<f64>()
                    .ok()
                    .filter(|a| (0.0..=1.0).contains(a))
                    .ok_or_else(bad)?;
                Metric::AlphaNdcg(need(k)?, (alpha * 1000.0).round() as u16)
            }
            "dup" | "duplicates" => Metric::Dup(need(k)?),
            _ => return Err(bad()),
        })
    }
}

/// Per-query values and means of several metrics.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Evaluation {
    /// The metrics, in the order asked.
    pub metrics: Vec<String>,
    /// Means over the scored queries, one per metric.
    pub means: Vec<f64>,
    /// Scored query ids, sorted.
    pub queries: Vec<String>,
    /// `per_query[i][m]`: query `queries[i]`, metric `metrics[m]`.
    pub per_query: Vec<Vec<f64>>,
    /// Judged queries the run has no results for (not averaged in).
    pub missing_from_run: Vec<String>,
}

/// `{"metric": value, …}` for values given in the order of `metrics`.
pub(crate) fn by_metric<T: Serialize>(metrics: &[String], values: &[T]) -> serde_json::Value {
    metrics
        .iter()
        .zip(values)
        .map(|(m, v)| (m.clone(), serde_json::json!(v)))
        .collect::<serde_json::Map<_, _>>()
        .into()
}

impl Evaluation {
    /// Each query's values by metric: `{"qid": {"ndcg@10": …}, …}`.
    pub fn per_query_json(&self) -> serde_json::Value {
        self.queries
            .iter()
            .zip(&self.per_query)
            .map(|(q, vals)| (q.clone(), by_metric(&self.metrics, vals)))
            .collect::<serde_json::Map<_, _>>()
            .into()
    }

    /// What `ckeep eval metrics --json` prints: query count, the metrics in the order asked,
    /// means by metric, the judged queries missing from the run, and with `per_query` every
    /// query's values.
    pub fn to_json(&self, per_query: bool) -> serde_json::Value {
        let mut v = serde_json::json!({
            "queries": self.queries.len(),
            "metrics": self.metrics,
            "means": by_metric(&self.metrics, &self.means),
            "missing_from_run": self.missing_from_run,
        });
        if per_query {
            v["per_query"] = self.per_query_json();
        }
        v
    }
}

/// Scores `run` against `qrels`.
pub fn evaluate(qrels: &Qrels, run: &Run, metrics: &[Metric]) -> Evaluation {
    evaluate_in(qrels, run, metrics, &Families::default())
}

/// Scores `run` against `qrels`, with documents grouped into near-copy `families`.
pub fn evaluate_in(
    qrels: &Qrels,
    run: &Run,
    metrics: &[Metric],
    families: &Families,
) -> Evaluation {
    let mut queries = Vec::new();
    let mut per_query = Vec::new();
    let mut missing_from_run = Vec::new();
    for (qid, judged) in &qrels.0 {
        match run.get(qid) {
            Some(ranked) => {
                queries.push(qid.clone());
                per_query.push(
                    metrics
                        .iter()
                        .map(|m| m.score_in(ranked, Some(judged), families))
                        .collect::<Vec<f64>>(),
                );
            }
            None => missing_from_run.push(qid.clone()),
        }
    }
    let n = per_query.len().max(1) as f64;
    let means =
        (0..metrics.len()).map(|m| per_query.iter().map(|v| v[m]).sum::<f64>() / n).collect();
    Evaluation {
        metrics: metrics.iter().map(ToString::to_string).collect(),
        means,
        queries,
        per_query,
        missing_from_run,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_and_print() {
        for s in [
            "ndcg@10",
            "mrr",
            "mrr@10",
            "map",
            "map@100",
            "recall@100",
            "p@5",
            "hit@3",
            "contain@5",
            "alpha-ndcg@10",
            "alpha-ndcg:1@10",
            "alpha-ndcg:0.25@5",
            "dup@10",
        ] {
            assert_eq!(s.parse::<Metric>().unwrap().to_string(), s);
        }
        assert_eq!("Precision@5".parse::<Metric>().unwrap(), Metric::Precision(5));
        assert_eq!("hit_rate@1".parse::<Metric>().unwrap(), Metric::Hit(1));
        for bad in ["ndcg", "ndcg@0", "recall@x", "f1@3"] {
            assert!(bad.parse::<Metric>().is_err(), "{bad}");
        }
    }

    #[test]
    fn containment_ignores_case_and_whitespace_and_respects_k() {
        let contexts = ["First chunk.".to_string(), "The answer is\n  Forty   Two.".to_string()];
        let answers = ["forty two".to_string()];
        assert!((Metric::containment(2, &contexts, &answers) - 1.0).abs() < f64::EPSILON);
        assert!(Metric::containment(1, &contexts, &answers).abs() < f64::EPSILON);
        assert!(
            Metric::containment(2, &contexts, &[" ".to_string()]).abs() < f64::EPSILON,
            "blank answers never match"
        );
    }

    #[test]
    fn ideal_dcg_comes_from_the_qrels_not_the_run() {
        // Only one of two relevant documents is retrieved: nDCG must be below 1.
        let qrels = Qrels::from_trec("q 0 a 1\nq 0 b 1\n").unwrap();
        let mut run = Run::new();
        run.insert("q", [("a".to_string(), 1.0)]);
        let e = evaluate(&qrels, &run, &["ndcg@10".parse().unwrap(), "p@5".parse().unwrap()]);
        assert!((e.means[0] - 1.0 / (1.0 + 1.0 / 3f64.log2())).abs() < 1e-12);
        assert!((e.means[1] - 0.2).abs() < 1e-12, "precision divides by k even with fewer results");
    }

    #[test]
    fn alpha_ndcg_pays_half_for_a_second_copy_and_dup_counts_copies() {
        // Two answers, a and b; a2 is a near copy of a, x is an unjudged copy of it too.
        let judged: std::collections::BTreeMap<String, i32> =
            [("a", 1), ("a2", 1), ("b", 1)].map(|(d, g)| (d.to_string(), g)).into();
        let families =
            Families([("a2", "a"), ("x", "a")].map(|(d, f)| (d.to_string(), f.to_string())).into());
        let ranked = |docs: &[&str]| docs.iter().map(|d| (d.to_string(), 1.0)).collect::<Vec<_>>();
        let a = Metric::AlphaNdcg(3, DEFAULT_ALPHA);
        let diverse = a.score_in(&ranked(&["a", "b", "a2"]), Some(&judged), &families);
        let copies = a.score_in(&ranked(&["a", "a2", "b"]), Some(&judged), &families);
        assert!((diverse - 1.0).abs() < 1e-12, "one of each family first is the ideal");
        // Ideal 1 + 1/log2(3) + 0.5/2; the copies' ranking earns 1 + 0.5/log2(3) + 1/2.
        let ideal = 1.0 + 1.0 / 3f64.log2() + 0.25;
        assert!((copies - (1.5 + 0.5 / 3f64.log2()) / ideal).abs() < 1e-12, "{copies}");
        // Plain nDCG cannot tell the two apart in this order of magnitude; alpha-nDCG can.
        assert!(diverse > copies);
        let dup = Metric::Dup(4);
        assert!(
            (dup.score_in(&ranked(&["a", "x", "a2", "b"]), None, &families) - 0.5).abs() < 1e-12
        );
        assert!(dup.score_in(&ranked(&["a", "b"]), None, &families).abs() < 1e-12);
        // Without families every document is its own: alpha-nDCG is binary nDCG.
        let plain = a.score_in(&ranked(&["a", "a2", "b"]), Some(&judged), &Families::default());
        assert!((plain - 1.0).abs() < 1e-12);
        // Counted once (α = 1): a copy earns nothing, so the copies' ranking is 1 + 0 + 1/2
        // over the ideal 1 + 1/log2(3).
        let once: Metric = "alpha-ndcg:1@3".parse().unwrap();
        let copies = once.score_in(&ranked(&["a", "a2", "b"]), Some(&judged), &families);
        assert!((copies - 1.5 / (1.0 + 1.0 / 3f64.log2())).abs() < 1e-12, "{copies}");
    }
}
