//! Relevance judgements and runs in TREC formats.
//!
//! Runs are kept sorted as `trec_eval` ranks them: by score, highest first, ties broken by
//! document id in *descending* byte order (so `pytrec_eval`, `trec_eval` and we agree on every
//! tie). A document listed twice for one query keeps its highest score: counting it twice would
//! push recall and precision above what the run earned.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::Error;

/// At most this many malformed lines are listed in one error.
const MAX_PROBLEMS: usize = 20;

/// Graded relevance judgements: query id → document id → grade (> 0 is relevant).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Qrels(pub BTreeMap<String, BTreeMap<String, i32>>);

/// A ranked run: query id → documents with scores, in rank order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Run(BTreeMap<String, Vec<(String, f64)>>);

fn lines_of(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines().enumerate().map(|(i, l)| (i + 1, l.trim())).filter(|(_, l)| !l.is_empty())
}

fn finish<T>(origin: &str, value: T, problems: Vec<(usize, String)>) -> Result<T, Error> {
    if problems.is_empty() {
        Ok(value)
    } else {
        Err(Error::Malformed { origin: origin.to_string(), problems })
    }
}

fn read(path: &std::path::Path) -> Result<String, Error> {
    std::fs::read_to_string(path)
        .map_err(|source| Error::Io { path: path.display().to_string(), source })
}

impl Qrels {
    /// Parses TREC qrels (`qid iter docid grade`) or BEIR TSV (`query-id corpus-id score`, with
    /// a header line), whitespace- or tab-separated.
    pub fn from_trec(text: &str) -> Result<Self, Error> {
        Self::parse(text, "qrels")
    }

    /// Reads a qrels file in either format.
    pub fn read(path: &std::path::Path) -> Result<Self, Error> {
        Self::parse(&read(path)?, &path.display().to_string())
    }

    fn parse(text: &str, origin: &str) -> Result<Self, Error> {
        let mut qrels = Qrels::default();
        let mut problems = Vec::new();
        for (n, line) in lines_of(text) {
            let f: Vec<&str> = line.split_whitespace().collect();
            let ([qid, _, doc, grade] | [qid, doc, grade]) = f.as_slice() else {
                let msg = format!(
                    "expected `qid 0 docid grade` or `qid docid grade`, got {} fields",
                    f.len()
                );
                problems.push((n, msg));
                continue;
            };
            match grade.parse::<i32>() {
                Ok(g) => {
                    if let Some(prev) =
                        qrels.0.entry((*qid).to_string()).or_default().insert((*doc).to_string(), g)
                        && prev != g
                    {
                        problems
                            .push((n, format!("`{qid}`/`{doc}` judged twice ({prev} and {g})")));
                    }
                }
                Err(_) if n == 1 => {} // a header line such as `query-id corpus-id score`
                Err(_) => problems.push((n, format!("grade `{grade}` is not an integer"))),
            }
            if problems.len() >= MAX_PROBLEMS {
                break;
            }
        }
        finish(origin, qrels, problems)
    }

    /// Number of queries.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are no judgements.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl Run {
    /// An empty run.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets a query's results (any order; duplicates keep their best score).
    pub fn insert(
        &mut self,
        qid: impl Into<String>,
        docs: impl IntoIterator<Item = (String, f64)>,
    ) {
        let mut best: BTreeMap<String, f64> = BTreeMap::new();
        for (d, s) in docs {
            let e = best.entry(d).or_insert(f64::NEG_INFINITY);
            if s > *e {
                *e = s;
            }
        }
        let mut ranked: Vec<(String, f64)> = best.into_iter().collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| b.0.cmp(&a.0)));
        self.0.insert(qid.into(), ranked);
    }

    /// A query's ranked documents.
    pub fn get(&self, qid: &str) -> Option<&[(String, f64)]> {
        self.0.get(qid).map(Vec::as_slice)
    }

    /// Queries in id order.
    pub fn iter(&self) -> impl Iterator<Item = (&String, &Vec<(String, f64)>)> {
        self.0.iter()
    }

    /// Number of queries.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether the run has no query.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Parses a TREC run (`qid Q0 docid rank score tag`; rank and tag are ignored, as by
    /// `trec_eval`, which ranks by score).
    pub fn from_trec(text: &str) -> Result<Self, Error> {
        Self::parse(text, "run")
    }

    /// Reads a TREC run file.
    pub fn read(path: &std::path::Path) -> Result<Self, Error> {
        Self::parse(&read(path)?, &path.display().to_string())
    }

    fn parse(text: &str, origin: &str) -> Result<Self, Error> {
        let mut by_query: BTreeMap<String, Vec<(String, f64)>> = BTreeMap::new();
        let mut problems = Vec::new();
        for (n, line) in lines_of(text) {
            let f: Vec<&str> = line.split_whitespace().collect();
            match f.as_slice() {
                [q, _, d, _, s, ..] => match s.parse::<f64>() {
                    Ok(s) if s.is_finite() => {
                        by_query.entry((*q).to_string()).or_default().push(((*d).to_string(), s));
                    }
                    _ => problems.push((n, format!("score `{s}` is not a finite number"))),
                },
                _ => problems.push((
                    n,
                    format!("expected `qid Q0 docid rank score tag`, got {} fields", f.len()),
                )),
            }
            if problems.len() >= MAX_PROBLEMS {
                break;
            }
        }
        let mut run = Run::new();
        for (q, docs) in by_query {
            run.insert(q, docs);
        }
        finish(origin, run, problems)
    }

    /// The run in TREC format with the given tag.
    pub fn to_trec(&self, tag: &str) -> String {
        let mut out = String::new();
        for (q, docs) in &self.0 {
            for (i, (d, s)) in docs.iter().enumerate() {
                let _ = writeln!(out, "{q} Q0 {d} {} {s} {tag}", i + 1);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ties_break_by_descending_doc_id_and_duplicates_keep_the_best() {
        let run =
            Run::from_trec("q Q0 a 1 1.0 t\nq Q0 b 2 1.0 t\nq Q0 c 3 2.0 t\nq Q0 a 4 0.5 t\n")
                .unwrap();
        let ids: Vec<&str> = run.get("q").unwrap().iter().map(|(d, _)| d.as_str()).collect();
        assert_eq!(ids, ["c", "b", "a"]);
        assert!((run.get("q").unwrap()[2].1 - 1.0).abs() < f64::EPSILON);
        let again = Run::from_trec(&run.to_trec("x")).unwrap();
        assert_eq!(again, run);
    }

    #[test]
    fn qrels_read_trec_and_beir_forms() {
        let trec = Qrels::from_trec("1 0 d1 2\n1 0 d2 0\n").unwrap();
        let beir = Qrels::from_trec("query-id\tcorpus-id\tscore\n1\td1\t2\n1\td2\t0\n").unwrap();
        assert_eq!(trec, beir);
    }

    #[test]
    fn malformed_lines_are_numbered() {
        let err =
            Run::from_trec("q Q0 a 1 1.0 t\nq Q0 b\nq Q0 c 3 nan t\n").unwrap_err().to_string();
        assert!(err.contains("line 2: expected") && err.contains("line 3: score `nan`"), "{err}");
        let err = Qrels::from_trec("q 0 a 1\nq 0 a x\nq 0 a 2\n").unwrap_err().to_string();
        assert!(
            err.contains("line 2: grade `x`") && err.contains("line 3: `q`/`a` judged twice"),
            "{err}"
        );
    }
}
