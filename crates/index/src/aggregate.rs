//! Chunk scores to document scores.
//!
//! `max` is what Qdrant, Vespa and Elasticsearch group-by offers; `mean:K` averages a document's
//! best K chunk scores (the chunk-pair experiment's rule; with fewer than K matching chunks the
//! mean is over those that matched); `sum` rewards documents that match in many places.

use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;

use ckeep_core::{ChunkHit, DocKey, rank_order};

use crate::Error;

/// How chunk scores become a document score.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Aggregation {
    /// The best chunk's score.
    #[default]
    Max,
    /// The mean of the best K chunk scores.
    Mean(usize),
    /// The sum of all chunk scores.
    Sum,
}

/// A document ranked from its chunks.
#[derive(Debug, Clone, PartialEq)]
pub struct DocHit {
    /// The document.
    pub doc: DocKey,
    /// Its aggregated score.
    pub score: f32,
    /// The chunks that produced the score, best first.
    pub chunks: Vec<ChunkHit>,
}

impl fmt::Display for Aggregation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Aggregation::Max => f.write_str("max"),
            Aggregation::Mean(k) => write!(f, "mean:{k}"),
            Aggregation::Sum => f.write_str("sum"),
        }
    }
}

impl FromStr for Aggregation {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Error> {
        let bad = || Error::Parameter {
            name: "aggregation",
            value: s.to_string(),
            expected: "max, mean:K (K >= 1) or sum",
        };
        match s.trim() {
            "max" => Ok(Aggregation::Max),
            "sum" => Ok(Aggregation::Sum),
            "mean" => Ok(Aggregation::Mean(3)),
            other => match other.strip_prefix("mean:").map(str::parse::<usize>) {
                Some(Ok(k)) if k >= 1 => Ok(Aggregation::Mean(k)),
                _ => Err(bad()),
            },
        }
    }
}

impl Aggregation {
    /// Ranks documents by their chunks' scores and keeps the best `k`, ties by document key.
    pub fn rank(self, hits: Vec<ChunkHit>, k: usize) -> Vec<DocHit> {
        let mut by_doc: HashMap<DocKey, Vec<ChunkHit>> = HashMap::new();
        for h in hits {
            by_doc.entry(h.doc).or_default().push(h);
        }
        let mut docs: Vec<DocHit> = by_doc
            .into_iter()
            .map(|(doc, mut chunks)| {
                chunks.sort_unstable_by(rank_order);
                let score = match self {
                    Aggregation::Max => {
                        chunks.truncate(1);
                        chunks[0].score
                    }
                    Aggregation::Mean(k) => {
                        chunks.truncate(k);
                        chunks.iter().map(|c| c.score).sum::<f32>() / chunks.len() as f32
                    }
                    Aggregation::Sum => chunks.iter().map(|c| c.score).sum(),
                };
                DocHit { doc, score, chunks }
            })
            .collect();
        docs.sort_unstable_by(|a, b| b.score.total_cmp(&a.score).then(a.doc.cmp(&b.doc)));
        docs.truncate(k);
        docs
    }
}

#[cfg(test)]
mod tests {
    use ckeep_core::ChunkId;

    use super::*;

    fn hit(chunk: i64, doc: i64, score: f32) -> ChunkHit {
        ChunkHit { chunk: ChunkId(chunk), doc: DocKey(doc), score }
    }

    fn ranked(agg: &str) -> Vec<(i64, f32, usize)> {
        let hits = vec![
            hit(1, 1, 5.0),
            hit(2, 1, 1.0),
            hit(3, 1, 0.0),
            hit(4, 2, 4.0),
            hit(5, 2, 3.5),
            hit(6, 3, 2.0),
        ];
        agg.parse::<Aggregation>()
            .unwrap()
            .rank(hits, 10)
            .iter()
            .map(|d| (d.doc.0, d.score, d.chunks.len()))
            .collect()
    }

    #[test]
    fn max_mean_and_sum_rank_differently() {
        assert_eq!(ranked("max"), [(1, 5.0, 1), (2, 4.0, 1), (3, 2.0, 1)]);
        assert_eq!(ranked("mean:2"), [(2, 3.75, 2), (1, 3.0, 2), (3, 2.0, 1)]);
        assert_eq!(ranked("sum"), [(2, 7.5, 2), (1, 6.0, 3), (3, 2.0, 1)]);
    }

    #[test]
    fn parse_and_display() {
        for s in ["max", "mean:3", "sum"] {
            assert_eq!(s.parse::<Aggregation>().unwrap().to_string(), s);
        }
        assert!("mean:0".parse::<Aggregation>().is_err());
        assert!("median".parse::<Aggregation>().is_err());
    }
}
