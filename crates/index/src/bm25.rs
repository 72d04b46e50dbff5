//! Okapi BM25 over posting lists.
//!
//! score(q, c) = `Σ_t` qtf(t) · idf(t) · tf·(k1+1) / (tf + k1·(1 − b + b·len/avglen)), with
//! Lucene's non-negative idf(t) = ln(1 + (N − df + 0.5)/(df + 0.5)) (Robertson & Zaragoza 2009,
//! "The Probabilistic Relevance Framework: BM25 and Beyond"). Defaults k1 = 0.9, b = 0.4 are
//! Anserini's, used by its BEIR baselines.
//!
//! A title can also count as a field of its own (BM25F, Robertson, Zaragoza & Taylor 2004,
//! "Simple BM25 extension to multiple weighted fields"): the term frequencies of the fields are
//! weighted and length-normalised each on its own, then saturated once,
//! `tf̃ = w·tf_title + tf_text / (1 − b + b·len_text / avglen_text)`, and the term scores
//! `idf · tf̃·(k1+1) / (k1 + tf̃)`. Titles are short and alike in length, so theirs is not
//! normalised. Both fields come from what the index already holds: a flat title-and-text field
//! and the text field, the title's counts being their difference.

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

/// The text field beside a flat title-and-text field, for BM25F with a weighted title.
#[derive(Debug, Clone, Copy)]
pub struct TitleField<'a> {
    /// The text field's posting lists, one per query term as for the flat field.
    pub text: &'a [Vec<Posting>],
    /// The text field's statistics.
    pub text_stats: LexicalStats,
    /// What one title occurrence of a term weighs against one in the text.
    pub weight: f32,
}

/// How one query term contributed to one chunk's score.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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

    /// One term's part of a text's score: its `idf`, found `tf` times in a text of `len` terms
    /// where texts average `avg_len`.
    pub fn term_score(&self, idf: f32, tf: u32, len: u32, avg_len: f32) -> f32 {
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
        self.score_fields(query, postings, stats, None)
    }

    /// [`Bm25::score`] over a flat title-and-text field, with the title weighted on its own
    /// when `title` gives the text field (BM25F).
    pub fn score_fields(
        &self,
        query: &[(String, u32)],
        postings: &[Vec<Posting>],
        stats: LexicalStats,
        title: Option<TitleField<'_>>,
    ) -> Vec<ChunkHit> {
        let mut acc: HashMap<ChunkId, ChunkHit> = HashMap::new();
        self.each_term_score(query, postings, stats, title, |_, p, s| {
            acc.entry(p.chunk)
                .or_insert(ChunkHit { chunk: p.chunk, doc: p.doc, score: 0.0 })
                .score += s;
        });
        acc.into_values().collect()
    }

    /// The per-term parts of `chunk`'s score (terms it does not contain are left out).
    pub fn explain(
        &self,
        query: &[(String, u32)],
        postings: &[Vec<Posting>],
        stats: LexicalStats,
        title: Option<TitleField<'_>>,
        chunk: ChunkId,
    ) -> Vec<TermExplanation> {
        let mut parts = Vec::new();
        self.each_term_score(query, postings, stats, title, |i, p, score| {
            if p.chunk == chunk {
                let df = postings[i].len() as u64;
                parts.push(TermExplanation {
                    term: query[i].0.clone(),
                    tf: p.tf,
                    df,
                    idf: Self::idf(stats.chunks, df),
                    score,
                });
            }
        });
        parts
    }

    /// Calls `f(term index, posting, score)` for every posting of every query term.
    fn each_term_score(
        &self,
        query: &[(String, u32)],
        postings: &[Vec<Posting>],
        stats: LexicalStats,
        title: Option<TitleField<'_>>,
        mut f: impl FnMut(usize, &Posting, f32),
    ) {
        let avg_len = Self::avg_len(stats);
        for (i, ((_, qtf), list)) in query.iter().zip(postings).enumerate() {
            let idf = Self::idf(stats.chunks, list.len() as u64) * *qtf as f32;
            for p in list {
                let s = match title {
                    None => self.term_score(idf, p.tf, p.len, avg_len),
                    Some(t) => self.fields_term_score(idf, p, t.text.get(i).map(Vec::as_slice), t),
                };
                f(i, p, s);
            }
        }
    }

    /// BM25F's score of one flat posting `p`, given the term's text-field list (sorted by
    /// chunk, as the store returns it).
    fn fields_term_score(
        &self,
        idf: f32,
        p: &Posting,
        text: Option<&[Posting]>,
        t: TitleField<'_>,
    ) -> f32 {
        let in_text = text
            .and_then(|l| l.binary_search_by_key(&p.chunk, |q| q.chunk).ok().map(|j| l[j]))
            .filter(|q| q.tf > 0);
        let text_tf = in_text.map_or(0, |q| q.tf.min(p.tf));
        let mut tf = t.weight * (p.tf - text_tf) as f32;
        if let Some(q) = in_text {
            let norm = 1.0 - self.b + self.b * q.len as f32 / Self::avg_len(t.text_stats);
            tf += text_tf as f32 / norm;
        }
        if tf <= 0.0 {
            return 0.0;
        }
        idf * tf * (self.k1 + 1.0) / (self.k1 + tf)
    }
}

#[cfg(test)]
mod tests {
    use ckeep_core::DocKey;

    use super::*;
    use crate::top_k;

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
        let parts = bm.explain(&query, &postings, stats, None, ChunkId(1));
        let sum: f32 = parts.iter().map(|p| p.score).sum();
        assert!((sum - hit.score).abs() < 1e-5);
        assert_eq!(parts.len(), 2);
    }

    #[test]
    fn a_weighted_title_matches_a_hand_computed_bm25f_score() {
        // Flat field: chunk 1 has the term twice (once in its title), chunk 2 once in its title.
        let flat_stats = LexicalStats { chunks: 4, total_len: 48 };
        let text_stats = LexicalStats { chunks: 4, total_len: 40 };
        let flat = vec![posting(1, 2, 13), posting(2, 1, 12)];
        let text = [vec![posting(1, 1, 10)]];
        let title = TitleField { text: &text, text_stats, weight: 2.5 };
        let bm = Bm25::new(1.2, 0.75).unwrap();
        let hits = bm.score_fields(&[("x".into(), 1)], &[flat], flat_stats, Some(title));
        let score = |c| f64::from(hits.iter().find(|h| h.chunk == ChunkId(c)).unwrap().score);
        let idf = (1.0f64 + (4.0 - 2.0 + 0.5) / 2.5).ln();
        let saturate = |tf: f64| idf * tf * 2.2 / (1.2 + tf);
        // Chunk 1: title 2.5·1, text 1 / (1 − 0.75 + 0.75·10/10).
        assert!((score(1) - saturate(2.5 + 1.0)).abs() < 1e-5, "{}", score(1));
        assert!((score(2) - saturate(2.5)).abs() < 1e-5, "{}", score(2));
    }

    #[test]
    fn the_title_weight_moves_title_matches_against_text_matches() {
        let stats = LexicalStats { chunks: 10, total_len: 110 };
        let text_stats = LexicalStats { chunks: 10, total_len: 100 };
        // Chunk 1 has the term in its title only, chunk 2 in its text only; same lengths.
        let flat = [vec![posting(1, 1, 11), posting(2, 1, 11)]];
        let text = [vec![posting(2, 1, 10)]];
        let bm = Bm25::default();
        let first = |weight| {
            let title = TitleField { text: &text, text_stats, weight };
            let hits = bm.score_fields(&[("t".into(), 1)], &flat, stats, Some(title));
            top_k(hits, 1)[0].chunk
        };
        assert_eq!(first(3.0), ChunkId(1));
        assert_eq!(first(0.3), ChunkId(2));
        let nothing = TitleField { text: &text, text_stats, weight: 0.0 };
        let hits = bm.score_fields(&[("t".into(), 1)], &flat, stats, Some(nothing));
        assert!(hits.iter().find(|h| h.chunk == ChunkId(1)).unwrap().score.abs() < f32::EPSILON);
    }

    #[test]
    fn weighted_title_explanations_sum_to_the_score() {
        let stats = LexicalStats { chunks: 10, total_len: 120 };
        let text_stats = LexicalStats { chunks: 10, total_len: 100 };
        let query = [("a".to_string(), 1), ("b".to_string(), 2)];
        let flat = [vec![posting(1, 3, 12), posting(2, 1, 11)], vec![posting(1, 1, 12)]];
        let text = [vec![posting(1, 2, 10)], vec![]];
        let title = TitleField { text: &text, text_stats, weight: 2.0 };
        let bm = Bm25::default();
        let hits = bm.score_fields(&query, &flat, stats, Some(title));
        let hit = hits.iter().find(|h| h.chunk == ChunkId(1)).unwrap();
        let parts = bm.explain(&query, &flat, stats, Some(title), ChunkId(1));
        assert_eq!(parts.len(), 2);
        let sum: f32 = parts.iter().map(|p| p.score).sum();
        assert!((sum - hit.score).abs() < 1e-5, "{sum} vs {}", hit.score);
    }

    #[test]
    fn rejects_bad_parameters() {
        assert!(Bm25::new(f32::NAN, 0.5).is_err());
        assert!(Bm25::new(1.0, 1.5).is_err());
        assert!(Bm25::new(-1.0, 0.5).is_err());
    }
}
