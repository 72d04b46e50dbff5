//! Hybrid retrieval: two ranked lists of chunks (BM25 and dense) fused into one.
//!
//! - **Reciprocal rank fusion** (Cormack, Clarke & Büttcher, SIGIR 2009): a chunk scores
//!   `Σ 1 / (k + rank)` over the lists it appears in, `k = 60` as in the paper. Scale-free, so it
//!   needs no tuning, and it is what Elasticsearch, OpenSearch, Qdrant and Weaviate offer.
//! - **Linear**: each list's scores min–max normalised to [0, 1] over its candidates, then
//!   `w · dense + (1 − w) · bm25`; a chunk absent from a list gets 0 there.
//!
//! Each list is cut to its best `depth` chunks first, as fusion in search engines does.

use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;

use ckeep_core::{ChunkHit, ChunkId};

use crate::{Error, top_k};

/// The RRF constant of Cormack et al.
pub const RRF_K: u32 = 60;

/// How two ranked lists become one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fusion {
    /// Reciprocal rank fusion with constant `k`.
    Rrf(u32),
    /// Weighted sum of min–max normalised scores; the dense weight in thousandths.
    Linear(u16),
}

impl Default for Fusion {
    fn default() -> Self {
        Fusion::Rrf(RRF_K)
    }
}

/// One chunk's place in each list and its fused score.
#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Serialize)]
pub struct FusedParts {
    /// BM25 score and 1-based rank, if the chunk is among the lexical candidates.
    pub bm25: Option<(f32, usize)>,
    /// Cosine and 1-based rank, if among the dense candidates.
    pub dense: Option<(f32, usize)>,
    /// The fused score.
    pub fused: f32,
}

impl Fusion {
    /// Fuses the two lists (each cut to `depth`); returns the fused hits and every fused chunk's
    /// parts, for explanations.
    pub fn fuse(
        self,
        bm25: Vec<ChunkHit>,
        dense: Vec<ChunkHit>,
        depth: usize,
    ) -> (Vec<ChunkHit>, HashMap<ChunkId, FusedParts>) {
        let lists = [top_k(bm25, depth), top_k(dense, depth)];
        let mut parts: HashMap<ChunkId, (ChunkHit, FusedParts)> = HashMap::new();
        for (which, list) in lists.iter().enumerate() {
            let (lo, hi) = list.iter().fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), h| {
                (lo.min(h.score), hi.max(h.score))
            });
            for (i, h) in list.iter().enumerate() {
                let entry = parts.entry(h.chunk).or_insert((*h, FusedParts::default()));
                let slot = if which == 0 { &mut entry.1.bm25 } else { &mut entry.1.dense };
                *slot = Some((h.score, i + 1));
                entry.1.fused += match self {
                    Fusion::Rrf(k) => 1.0 / (k as f32 + (i + 1) as f32),
                    Fusion::Linear(w) => {
                        let w = f32::from(w) / 1000.0;
                        let norm = if hi > lo { (h.score - lo) / (hi - lo) } else { 1.0 };
                        norm * if which == 0 { 1.0 - w } else { w }
                    }
                };
            }
        }
        let hits = parts
            .values()
            .map(|(h, p)| ChunkHit { chunk: h.chunk, doc: h.doc, score: p.fused })
            .collect();
        (hits, parts.into_iter().map(|(id, (_, p))| (id, p)).collect())
    }
}

impl fmt::Display for Fusion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fusion::Rrf(k) if *k == RRF_K => f.write_str("rrf"),
            Fusion::Rrf(k) => write!(f, "rrf={k}"),
            Fusion::Linear(w) => write!(f, "linear={}", f64::from(*w) / 1000.0),
        }
    }
}

impl FromStr for Fusion {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Error> {
        let bad = || Error::Parameter {
            name: "fusion",
            value: s.to_string(),
            expected: "rrf, rrf=K (K >= 1) or linear=W (dense weight W from 0 to 1)",
        };
        match s.trim().split_once('=') {
            None if s.trim() == "rrf" => Ok(Fusion::Rrf(RRF_K)),
            Some(("rrf", k)) => {
                k.trim().parse().ok().filter(|k| *k >= 1).map(Fusion::Rrf).ok_or_else(bad)
            }
            Some(("linear", w)) => w
                .trim()
                .parse::<f64>()
                .ok()
                .filter(|w| (0.0..=1.0).contains(w))
                .map(|w| Fusion::Linear((w * 1000.0).round() as u16))
                .ok_or_else(bad),
            _ => Err(bad()),
        }
    }
}

#[cfg(test)]
mod tests {
    use ckeep_core::DocKey;

    use super::*;

    fn hits(scores: &[(i64, f32)]) -> Vec<ChunkHit> {
        scores
            .iter()
            .map(|&(c, s)| ChunkHit { chunk: ChunkId(c), doc: DocKey(c), score: s })
            .collect()
    }

    #[test]
    fn rrf_sums_reciprocal_ranks() {
        let bm25 = hits(&[(1, 9.0), (2, 5.0)]);
        let dense = hits(&[(2, 0.9), (3, 0.8)]);
        let (fused, parts) = Fusion::Rrf(60).fuse(bm25, dense, 100);
        let best = top_k(fused, 3);
        assert_eq!(best[0].chunk, ChunkId(2), "in both lists");
        assert!((best[0].score - (1.0 / 62.0 + 1.0 / 61.0)).abs() < 1e-7);
        assert_eq!(parts[&ChunkId(2)].bm25, Some((5.0, 2)));
        assert_eq!(parts[&ChunkId(3)].bm25, None);
    }

    #[test]
    fn linear_weights_normalised_scores() {
        let bm25 = hits(&[(1, 10.0), (2, 0.0)]);
        let dense = hits(&[(2, 0.9), (1, 0.5)]);
        let (fused, _) = Fusion::Linear(750).fuse(bm25, dense, 100);
        let by: HashMap<ChunkId, f32> = fused.iter().map(|h| (h.chunk, h.score)).collect();
        assert!((by[&ChunkId(1)] - 0.25).abs() < 1e-6);
        assert!((by[&ChunkId(2)] - 0.75).abs() < 1e-6);
    }

    #[test]
    fn parses_and_displays() {
        for (s, want) in [("rrf", "rrf"), ("rrf=10", "rrf=10"), ("linear=0.3", "linear=0.3")] {
            assert_eq!(s.parse::<Fusion>().unwrap().to_string(), want);
        }
        for bad in ["rrf=0", "linear=2", "max", "linear=x"] {
            assert!(bad.parse::<Fusion>().is_err(), "{bad}");
        }
    }
}
