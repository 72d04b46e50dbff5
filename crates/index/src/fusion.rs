//! Hybrid retrieval: ranked lists of chunks (BM25 and one dense list per embedding model) fused
//! into one.
//!
//! - **Reciprocal rank fusion** (Cormack, Clarke & Büttcher, SIGIR 2009): a chunk scores
//!   `Σ 1 / (k + rank)` over the lists it appears in, `k = 60` as in the paper. Scale-free, so it
//!   needs no tuning, and it is what Elasticsearch, OpenSearch, Qdrant and Weaviate offer.
//! - **Linear**: each list's scores min–max normalised to [0, 1] over its candidates, then
//!   `Σ wᵢ · denseᵢ + (1 − Σ wᵢ) · bm25`; a chunk absent from a list gets 0 there. One weight
//!   for several dense lists is shared equally by them.
//!
//! - **Auto** (plain `hybrid`): RRF beside one dense list; beside several, linear with the
//!   dense lists sharing [`AUTO_SHARED_WEIGHT`]. RRF gives every list the same say, a weak
//!   model's as much as a strong one's; on the SciFact train queries two models fused linearly
//!   scored 0.7473 nDCG@10 against RRF's 0.7289 (docs/reference/strategies.md).
//!
//! Each list is cut to its best `depth` chunks first, as fusion in search engines does.

use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;

use ckeep_core::{ChunkHit, ChunkId};

use crate::{Error, top_k};

/// The RRF constant of Cormack et al.
pub const RRF_K: u32 = 60;

/// The dense lists' shared weight of `Auto` beside several of them, in thousandths (BM25 gets
/// the rest): the better of 0.5 and 0.6 on the SciFact train queries with two models.
pub const AUTO_SHARED_WEIGHT: u16 = 600;

/// Most dense lists (embedding models) one fusion takes: a weight each.
pub const MAX_DENSE_LISTS: usize = 4;

/// How ranked lists become one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Fusion {
    /// RRF beside one dense list, linear with a shared weight beside several (see the module
    /// docs); what plain `hybrid` means.
    #[default]
    Auto,
    /// Reciprocal rank fusion with constant `k`.
    Rrf(u32),
    /// Weighted sum of min–max normalised scores; the dense lists' weights.
    Linear(DenseWeights),
}

/// The dense lists' weights of a linear fusion, in thousandths, in the order of the models; one
/// weight is shared equally by however many dense lists there are. BM25 gets the rest of 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DenseWeights {
    weights: [u16; MAX_DENSE_LISTS],
    len: u8,
}

impl DenseWeights {
    /// One weight, in thousandths, shared by every dense list.
    pub fn single(thousandths: u16) -> Self {
        let mut weights = [0; MAX_DENSE_LISTS];
        weights[0] = thousandths;
        Self { weights, len: 1 }
    }

    /// The weights as given, in thousandths.
    pub fn as_slice(&self) -> &[u16] {
        &self.weights[..usize::from(self.len)]
    }

    /// The weights of `dense` lists as fractions, or why they do not fit that many.
    pub fn of(&self, dense: usize) -> Result<Vec<f32>, String> {
        let given = self.as_slice();
        match given {
            [one] => Ok(vec![f32::from(*one) / 1000.0 / dense.max(1) as f32; dense]),
            many if many.len() == dense => {
                Ok(many.iter().map(|w| f32::from(*w) / 1000.0).collect())
            }
            many => Err(format!(
                "linear={self} gives {} dense weights for {dense} model{}: give one (shared) or one per model",
                many.len(),
                if dense == 1 { "" } else { "s" }
            )),
        }
    }
}

impl fmt::Display for DenseWeights {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> =
            self.as_slice().iter().map(|w| (f64::from(*w) / 1000.0).to_string()).collect();
        f.write_str(&parts.join("+"))
    }
}

/// One chunk's place in one list and what that gave its fused score.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct ListPart {
    /// The list's own score (BM25, or cosine).
    pub score: f32,
    /// 1-based rank in the list.
    pub rank: usize,
    /// What this list added to the fused score.
    pub contribution: f32,
}

/// One chunk's place in each list and its fused score.
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize)]
pub struct FusedParts {
    /// Every list's part, in the order given (BM25 first), `None` where the chunk is absent.
    pub lists: Vec<Option<ListPart>>,
    /// The fused score.
    pub fused: f32,
}

impl FusedParts {
    /// BM25 score and 1-based rank, if the chunk is among the lexical candidates.
    pub fn bm25(&self) -> Option<(f32, usize)> {
        self.list(0)
    }

    /// Cosine and 1-based rank in the first dense list, if among its candidates.
    pub fn dense(&self) -> Option<(f32, usize)> {
        self.list(1)
    }

    fn list(&self, i: usize) -> Option<(f32, usize)> {
        self.lists.get(i).copied().flatten().map(|l| (l.score, l.rank))
    }
}

impl Fusion {
    /// Fuses BM25's list with the dense lists (each cut to `depth`); returns the fused hits and
    /// every fused chunk's parts, for explanations. A linear fusion's weights must fit the
    /// number of dense lists (see [`DenseWeights::of`]).
    pub fn fuse(
        self,
        bm25: Vec<ChunkHit>,
        dense: Vec<Vec<ChunkHit>>,
        depth: usize,
    ) -> Result<(Vec<ChunkHit>, HashMap<ChunkId, FusedParts>), Error> {
        let fusion = self.for_lists(dense.len());
        let weights = match fusion {
            Fusion::Auto | Fusion::Rrf(_) => Vec::new(),
            Fusion::Linear(w) => {
                let d = w.of(dense.len()).map_err(Error::Invalid)?;
                let rest = 1.0 - d.iter().sum::<f32>();
                std::iter::once(rest.max(0.0)).chain(d).collect()
            }
        };
        let lists: Vec<Vec<ChunkHit>> =
            std::iter::once(bm25).chain(dense).map(|l| top_k(l, depth)).collect();
        let n = lists.len();
        let mut parts: HashMap<ChunkId, (ChunkHit, FusedParts)> = HashMap::new();
        for (which, list) in lists.iter().enumerate() {
            let (lo, hi) = list.iter().fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), h| {
                (lo.min(h.score), hi.max(h.score))
            });
            for (i, h) in list.iter().enumerate() {
                let entry = parts.entry(h.chunk).or_insert_with(|| {
                    (*h, FusedParts { lists: vec![None; n], ..FusedParts::default() })
                });
                let contribution = match fusion {
                    // `for_lists` decided `Auto`; one dense list is RRF's.
                    Fusion::Auto => 1.0 / (RRF_K as f32 + (i + 1) as f32),
                    Fusion::Rrf(k) => 1.0 / (k as f32 + (i + 1) as f32),
                    Fusion::Linear(_) => {
                        let norm = if hi > lo { (h.score - lo) / (hi - lo) } else { 1.0 };
                        norm * weights[which]
                    }
                };
                let part = ListPart { score: h.score, rank: i + 1, contribution };
                entry.1.lists[which] = Some(part);
                entry.1.fused += contribution;
            }
        }
        let hits = parts
            .values()
            .map(|(h, p)| ChunkHit { chunk: h.chunk, doc: h.doc, score: p.fused })
            .collect();
        Ok((hits, parts.into_iter().map(|(id, (_, p))| (id, p)).collect()))
    }
}

impl Fusion {
    /// What this fusion is beside `dense` lists: `Auto` decided, the others as they are.
    #[must_use]
    pub fn for_lists(self, dense: usize) -> Self {
        match self {
            Fusion::Auto if dense > 1 => Fusion::Linear(DenseWeights::single(AUTO_SHARED_WEIGHT)),
            Fusion::Auto => Fusion::Rrf(RRF_K),
            other @ (Fusion::Rrf(_) | Fusion::Linear(_)) => other,
        }
    }
}

impl fmt::Display for Fusion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fusion::Auto => f.write_str("auto"),
            Fusion::Rrf(k) if *k == RRF_K => f.write_str("rrf"),
            Fusion::Rrf(k) => write!(f, "rrf={k}"),
            Fusion::Linear(w) => write!(f, "linear={w}"),
        }
    }
}

impl FromStr for Fusion {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Error> {
        let bad = || Error::Parameter {
            name: "fusion",
            value: s.to_string(),
            expected: "auto, rrf, rrf=K (K >= 1) or linear=W[+W…] (dense weights from 0 to 1, one per model or one shared, summing to at most 1)",
        };
        match s.trim().split_once('=') {
            None if s.trim() == "rrf" => Ok(Fusion::Rrf(RRF_K)),
            None if s.trim() == "auto" => Ok(Fusion::Auto),
            Some(("rrf", k)) => {
                k.trim().parse().ok().filter(|k| *k >= 1).map(Fusion::Rrf).ok_or_else(bad)
            }
            Some(("linear", w)) => {
                let parsed: Option<Vec<u16>> = w
                    .split('+')
                    .map(|w| {
                        w.trim()
                            .parse::<f64>()
                            .ok()
                            .filter(|w| (0.0..=1.0).contains(w))
                            .map(|w| (w * 1000.0).round() as u16)
                    })
                    .collect();
                let parsed = parsed
                    .filter(|p| p.len() <= MAX_DENSE_LISTS)
                    .filter(|p| p.iter().map(|w| u32::from(*w)).sum::<u32>() <= 1000)
                    .ok_or_else(bad)?;
                let mut weights = [0; MAX_DENSE_LISTS];
                weights[..parsed.len()].copy_from_slice(&parsed);
                Ok(Fusion::Linear(DenseWeights { weights, len: parsed.len() as u8 }))
            }
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
    fn auto_is_rrf_beside_one_list_and_shared_linear_beside_several() {
        let bm25 = hits(&[(1, 9.0), (2, 5.0), (3, 1.0)]);
        let a = hits(&[(3, 0.9), (2, 0.8), (4, 0.1)]);
        let b = hits(&[(4, 0.7), (3, 0.6), (1, 0.2)]);
        let fused = |f: Fusion, dense: Vec<Vec<ChunkHit>>| {
            let mut h = f.fuse(bm25.clone(), dense, 100).unwrap().0;
            h.sort_by_key(|h| h.chunk);
            h.into_iter().map(|h| (h.chunk, h.score)).collect::<Vec<_>>()
        };
        assert_eq!(
            fused(Fusion::Auto, vec![a.clone()]),
            fused(Fusion::Rrf(RRF_K), vec![a.clone()])
        );
        let shared = Fusion::Linear(DenseWeights::single(AUTO_SHARED_WEIGHT));
        assert_eq!(fused(Fusion::Auto, vec![a.clone(), b.clone()]), fused(shared, vec![a, b]));
        assert_eq!("auto".parse::<Fusion>().unwrap(), Fusion::Auto);
        assert_eq!(Fusion::default(), Fusion::Auto);
    }

    #[test]
    fn rrf_sums_reciprocal_ranks() {
        let bm25 = hits(&[(1, 9.0), (2, 5.0)]);
        let dense = hits(&[(2, 0.9), (3, 0.8)]);
        let (fused, parts) = Fusion::Rrf(60).fuse(bm25, vec![dense], 100).unwrap();
        let best = top_k(fused, 3);
        assert_eq!(best[0].chunk, ChunkId(2), "in both lists");
        assert!((best[0].score - (1.0 / 62.0 + 1.0 / 61.0)).abs() < 1e-7);
        assert_eq!(parts[&ChunkId(2)].bm25(), Some((5.0, 2)));
        assert_eq!(parts[&ChunkId(3)].bm25(), None);
    }

    #[test]
    fn linear_weights_normalised_scores() {
        let bm25 = hits(&[(1, 10.0), (2, 0.0)]);
        let dense = hits(&[(2, 0.9), (1, 0.5)]);
        let (fused, _) =
            Fusion::Linear(DenseWeights::single(750)).fuse(bm25, vec![dense], 100).unwrap();
        let by: HashMap<ChunkId, f32> = fused.iter().map(|h| (h.chunk, h.score)).collect();
        assert!((by[&ChunkId(1)] - 0.25).abs() < 1e-6);
        assert!((by[&ChunkId(2)] - 0.75).abs() < 1e-6);
    }

    #[test]
    fn linear_weights_each_dense_list() {
        let bm25 = hits(&[(1, 10.0), (2, 0.0)]);
        let a = hits(&[(2, 0.9), (1, 0.5)]);
        let b = hits(&[(1, 0.8), (3, 0.2)]);
        let fusion: Fusion = "linear=0.3+0.2".parse().unwrap();
        let (fused, parts) = fusion.fuse(bm25.clone(), vec![a.clone(), b.clone()], 100).unwrap();
        let by: HashMap<ChunkId, f32> = fused.iter().map(|h| (h.chunk, h.score)).collect();
        // Chunk 1: BM25 top (0.5 · 1), last in a (0), top of b (0.2 · 1).
        assert!((by[&ChunkId(1)] - 0.7).abs() < 1e-6, "{by:?}");
        assert!((by[&ChunkId(2)] - 0.3).abs() < 1e-6, "{by:?}");
        let p = &parts[&ChunkId(1)];
        assert_eq!(p.lists.len(), 3);
        assert_eq!(p.lists[2].map(|l| (l.rank, l.contribution)), Some((1, 0.2)));
        assert_eq!(parts[&ChunkId(3)].lists[0], None);
        // One weight is shared by both dense lists.
        let shared: Fusion = "linear=0.5".parse().unwrap();
        let (fused, _) = shared.fuse(bm25.clone(), vec![a.clone(), b.clone()], 100).unwrap();
        let by: HashMap<ChunkId, f32> = fused.iter().map(|h| (h.chunk, h.score)).collect();
        assert!((by[&ChunkId(1)] - 0.75).abs() < 1e-6, "{by:?}");
        // Three weights for two lists do not fit.
        let three: Fusion = "linear=0.1+0.1+0.1".parse().unwrap();
        let e = three.fuse(bm25, vec![a, b], 100).unwrap_err().to_string();
        assert!(e.contains("3 dense weights for 2 models"), "{e}");
    }

    #[test]
    fn parses_and_displays() {
        for (s, want) in [
            ("rrf", "rrf"),
            ("rrf=10", "rrf=10"),
            ("linear=0.3", "linear=0.3"),
            ("linear=0.25+0.35", "linear=0.25+0.35"),
        ] {
            assert_eq!(s.parse::<Fusion>().unwrap().to_string(), want);
        }
        for bad in [
            "rrf=0",
            "linear=2",
            "max",
            "linear=x",
            "linear=0.6+0.6",
            "linear=0.1+",
            "linear=.1+.1+.1+.1+.1",
        ] {
            assert!(bad.parse::<Fusion>().is_err(), "{bad}");
        }
    }
}
