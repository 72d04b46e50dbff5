//! Okapi BM25 over posting lists.
//!
//! score(q, c) = `Σ_t` qtf(t) · idf(t) · tf·(k1+1) / (tf + k1·(1 − b + b·len/avglen)), with
//! Lucene's non-negative idf(t) = ln(1 + (N − df + 0.5)/(df + 0.5)) (Robertson & Zaragoza 2009,
//! "The Probabilistic Relevance Framework: BM25 and Beyond"). Defaults k1 = 0.9, b = 0.4 are
//! Anserini's, used by its BEIR baselines.

use std::collections::HashMap;

use ckeep_core::{ChunkHit, ChunkId, LexicalStats, Posting};
use serde::Serialize;

use crate::Error;

/// BM25 parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bm25 {
    k1: f32,
    b: f32,
}

impl Default for Bm25 {
    fn default() -> Self {
        Self { k1: 0.9, b: 0.4 }
    }
}

/// How one query term contributed to one chunk's score.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TermExplanation {
    /// The analysed term.
    pub term: String,
    /// Occurrences in the chunk.
    pub tf: u32,
    /// Chunks containing the term.
    pub df: u64,
    /// Its inverse document frequency.
    pub idf: f32,
    /// Its share of the score.
    pub score: f32,
}

impl Bm25 {
    /// BM25 with the given saturation `k1` (≥ 0) and length normalisation `b` (in [0, 1]).
    pub fn new(k1: f32, b: f32) -> Result<Self, Error> {
        if !(k1.is_finite() && k1 >= 0.0) {
            return Err(Error::Parameter {
                name: "k1",
                value: k1.to_string(),
                expected: "a finite number >= 0",
            });
        }
        if !(0.0..=1.0).contains(&b) {
            return Err(Error::Parameter {
                name: "b",
                value: b.to_string(),
                expected: "a number from 0 to 1",
            });
        }
        Ok(Self { k1, b })
    }

    /// `k1`.
    pub fn k1(&self) -> f32 {
        self.k1
    }

    /// `b`.
    pub fn b(&self) -> f32 {
        self.b
    }

    /// Inverse document frequency of a term found in `df` of `n` chunks.
    pub fn idf(n: u64, df: u64) -> f32 {
        let (n, df) = (n as f64, df as f64);
        (1.0 + (n - df + 0.5) / (df + 0.5)).ln() as f32
    }

    fn term_score(&self, idf: f32, tf: u32, len: u32, avg_len: f32) -> f32 {
        let tf = tf as f32;
        let norm = self.k1 * (1.0 - self.b + self.b * len as f32 / avg_len);
        idf * tf * (self.k1 + 1.0) / (tf + norm)
    }

    fn avg_len(stats: LexicalStats) -> f32 {
        if stats.chunks == 0 {
            1.0
        } else {
            (stats.total_len as f64 / stats.chunks as f64).max(1e-9) as f32
        }
    }

    /// Scores every chunk that contains a query term. `query` holds each distinct query term's
    /// count; `postings[i]` is the posting list of `query[i]`.
    pub fn score(
        &self,
        query: &[(String, u32)],
        postings: &[Vec<Posting>],
        stats: LexicalStats,
    ) -> Vec<ChunkHit> {
        let avg_len = Self::avg_len(stats);
        let mut acc: HashMap<ChunkId, ChunkHit> = HashMap::new();
        for ((_, qtf), list) in query.iter().zip(postings) {
            let idf = Self::idf(stats.chunks, list.len() as u64) * *qtf as f32;
            for p in list {
                let s = self.term_score(idf, p.tf, p.len, avg_len);
                acc.entry(p.chunk)
                    .or_insert(ChunkHit { chunk: p.chunk, doc: p.doc, score: 0.0 })
                    .score += s;
            }
        }
        acc.into_values().collect()
    }

    /// The per-term parts of `chunk`'s score (terms it does not contain are left out).
    pub fn explain(
        &self,
        query: &[(String, u32)],
        postings: &[Vec<Posting>],
        stats: LexicalStats,
        chunk: ChunkId,
    ) -> Vec<TermExplanation> {
        let avg_len = Self::avg_len(stats);
        query
            .iter()
            .zip(postings)
            .filter_map(|((term, qtf), list)| {
                let p = list.iter().find(|p| p.chunk == chunk)?;
                let idf = Self::idf(stats.chunks, list.len() as u64);
                Some(TermExplanation {
                    term: term.clone(),
                    tf: p.tf,
                    df: list.len() as u64,
                    idf,
                    score: self.term_score(idf * *qtf as f32, p.tf, p.len, avg_len),
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use ckeep_core::DocKey;

    use super::*;

    fn posting(chunk: i64, tf: u32, len: u32) -> Posting {
        Posting { chunk: ChunkId(chunk), doc: DocKey(chunk), tf, len }
    }

    #[test]
    fn matches_a_hand_computed_score() {
        // N = 4 chunks, avg len 10; term in 1 chunk (tf 2, len 5).
        let stats = LexicalStats { chunks: 4, total_len: 40 };
        let bm = Bm25::new(1.2, 0.75).unwrap();
        let hits = bm.score(&[("x".into(), 1)], &[vec![posting(1, 2, 5)]], stats);
        let idf = (1.0f64 + (4.0 - 1.0 + 0.5) / 1.5).ln();
        let expected = idf * 2.0 * 2.2 / (2.0 + 1.2 * (1.0 - 0.75 + 0.75 * 0.5));
        assert!(
            (f64::from(hits[0].score) - expected).abs() < 1e-5,
            "{} vs {expected}",
            hits[0].score
        );
    }

    #[test]
    fn rarer_terms_and_shorter_chunks_score_higher() {
        let stats = LexicalStats { chunks: 100, total_len: 1000 };
        let bm = Bm25::default();
        let rare = bm.score(&[("r".into(), 1)], &[vec![posting(1, 1, 10)]], stats)[0].score;
        let common: Vec<Posting> = (0..50).map(|i| posting(i, 1, 10)).collect();
        let common = bm.score(&[("c".into(), 1)], &[common], stats)[0].score;
        assert!(rare > common);
        let hits =
            bm.score(&[("t".into(), 1)], &[vec![posting(1, 1, 5), posting(2, 1, 50)]], stats);
        let score = |c| hits.iter().find(|h| h.chunk == ChunkId(c)).unwrap().score;
        assert!(score(1) > score(2));
    }

    #[test]
    fn explanation_parts_sum_to_the_score() {
        let stats = LexicalStats { chunks: 10, total_len: 100 };
        let bm = Bm25::default();
        let query = [("a".to_string(), 2), ("b".to_string(), 1)];
        let postings = [vec![posting(1, 3, 8), posting(2, 1, 9)], vec![posting(1, 1, 8)]];
        let hits = bm.score(&query, &postings, stats);
        let hit = hits.iter().find(|h| h.chunk == ChunkId(1)).unwrap();
        let parts = bm.explain(&query, &postings, stats, ChunkId(1));
        let sum: f32 = parts.iter().map(|p| p.score).sum();
        assert!((sum - hit.score).abs() < 1e-5);
        assert_eq!(parts.len(), 2);
    }

    #[test]
    fn rejects_bad_parameters() {
        assert!(Bm25::new(f32::NAN, 0.5).is_err());
        assert!(Bm25::new(1.0, 1.5).is_err());
        assert!(Bm25::new(-1.0, 0.5).is_err());
    }
}
