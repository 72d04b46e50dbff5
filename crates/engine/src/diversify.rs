//! Maximal marginal relevance (MMR, Carbonell and Goldstein 1998): the final `k` results are
//! picked one at a time from a deeper pool of ranked ones, each time the one with the best
//! `λ·relevance − (1−λ)·redundancy`, where redundancy is its greatest similarity to a result
//! already picked. Five chunks that say the same thing then give way to five that say five
//! things, which is what a language model's context window is for.
//!
//! Relevance is the first stage's score as a share of the pool's best (so BM25, cosine and fused
//! scores all lie in [0, 1], the scale of a cosine). Not min–max: that gives the pool's last
//! result no relevance at all, and in a small pool any near copy outranks it. Two results are
//! as similar as the chunk-pair score of their best chunks: the mean of the top [`PAIR_TOP`]
//! cosines between them (one cosine for two chunks). Cosines are of the chunks' own stored
//! embeddings, or, in a store without them, of their analysed term counts.

use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;

use ckeep_core::ChunkId;
use ckeep_index::DocHit;
use serde::Serialize;

/// Chunks of a document result compared with another's (its best ones).
pub(crate) const RESULT_CHUNKS: usize = 3;

/// Chunk pairs averaged into two results' similarity (the chunk-pair score's k).
const PAIR_TOP: usize = crate::defaults::DEFAULT_TOP_K;

/// λ when `mmr` names none: relevance and novelty weighed alike (LangChain's `lambda_mult`
/// default too).
const DEFAULT_LAMBDA: f32 = 0.5;

/// A strategy's diversification stage.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum Diversify {
    /// The ranking as scored.
    #[default]
    None,
    /// MMR with weight `lambda` on relevance, choosing from the best `pool` results (default
    /// [`Diversify::pool`]).
    Mmr {
        /// Weight of relevance, in [0, 1]: 1 is the plain ranking, 0 ignores relevance after
        /// the first pick.
        lambda: f32,
        /// How many ranked results are considered.
        pool: Option<usize>,
    },
}

// λ is checked to lie in [0, 1] (never NaN), so equality is an equivalence.
impl Eq for Diversify {}

impl Diversify {
    /// How many ranked results MMR chooses `k` from.
    pub fn pool(self, k: usize) -> usize {
        match self {
            Diversify::None => k,
            Diversify::Mmr { pool, .. } => {
                let asked = pool.unwrap_or((4 * k).max(40));
                asked.min(crate::defaults::MAX_K).max(k)
            }
        }
    }
}

impl fmt::Display for Diversify {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Diversify::None => f.write_str("none"),
            Diversify::Mmr { lambda, pool: None } => write!(f, "mmr:{lambda}"),
            Diversify::Mmr { lambda, pool: Some(n) } => write!(f, "mmr:{lambda}:{n}"),
        }
    }
}

impl FromStr for Diversify {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let expected = "expected none or mmr[:λ[:N]] with λ from 0 to 1 and N a whole number";
        if s == "none" {
            return Ok(Diversify::None);
        }
        let mut parts = s.split(':');
        if parts.next() != Some("mmr") {
            return Err(format!("unknown diversification `{s}`; {expected}"));
        }
        let lambda = match parts.next() {
            None => DEFAULT_LAMBDA,
            Some(l) => l
                .parse::<f32>()
                .ok()
                .filter(|l| (0.0..=1.0).contains(l))
                .ok_or_else(|| format!("mmr: λ `{l}` is not a number from 0 to 1"))?,
        };
        let pool = match parts.next() {
            None => None,
            Some(n) => Some(
                n.parse::<usize>()
                    .ok()
                    .filter(|n| (1..=crate::defaults::MAX_K).contains(n))
                    .ok_or_else(|| format!("mmr: pool `{n}` is not a whole number from 1"))?,
            ),
        };
        if parts.next().is_some() {
            return Err(format!("`{s}`: {expected}"));
        }
        Ok(Diversify::Mmr { lambda, pool })
    }
}

/// What two results' similarity was computed from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum SimilarityOf {
    /// The chunks' stored embeddings (the plain representation).
    Vectors,
    /// The chunks' analysed term counts (a store without embeddings).
    Terms,
}

impl fmt::Display for SimilarityOf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SimilarityOf::Vectors => "vectors",
            SimilarityOf::Terms => "terms",
        })
    }
}

/// Why a result stands where MMR put it (`--explain`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Redundancy {
    /// The weight of relevance.
    pub lambda: f32,
    /// Its first-stage score as a share of the pool's best.
    pub relevance: f32,
    /// Its greatest similarity to a result ranked above it (0 for the first).
    pub redundancy: f32,
    /// The rank of that most similar result above it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub similar_to: Option<usize>,
    /// `λ·relevance − (1−λ)·redundancy`, what it was picked by.
    pub mmr: f32,
    /// Its rank in the first stage's ranking.
    pub first_rank: usize,
    /// What the similarity was computed from.
    pub similarity: SimilarityOf,
}

impl Redundancy {
    /// One line for `--explain`: what the result was picked by, and the penalty it paid.
    pub fn describe(&self) -> String {
        let near = match self.similar_to {
            Some(rank) => format!(", most like #{rank}"),
            None => String::new(),
        };
        format!(
            "diversity: mmr {:.4} = {:.2} × relevance {:.4} − {:.2} × redundancy {:.4} ({} similarity{near}); first-stage rank {}",
            self.mmr,
            self.lambda,
            self.relevance,
            1.0 - self.lambda,
            self.redundancy,
            self.similarity,
            self.first_rank
        )
    }
}

/// Unit-length vectors of chunks, dense or sparse (term → weight).
pub(crate) enum ChunkVectors {
    /// Stored embeddings, normalised.
    Dense(HashMap<ChunkId, Vec<f32>>),
    /// Term counts, normalised.
    Sparse(HashMap<ChunkId, HashMap<String, f32>>),
}

impl ChunkVectors {
    fn kind(&self) -> SimilarityOf {
        match self {
            ChunkVectors::Dense(_) => SimilarityOf::Vectors,
            ChunkVectors::Sparse(_) => SimilarityOf::Terms,
        }
    }

    /// Cosine of two chunks; 0 when either has no vector (nothing known is nothing shared).
    fn cosine(&self, first: ChunkId, second: ChunkId) -> f32 {
        match self {
            ChunkVectors::Dense(rows) => match (rows.get(&first), rows.get(&second)) {
                (Some(x), Some(y)) => x.iter().zip(y).map(|(x, y)| x * y).sum(),
                _ => 0.0,
            },
            ChunkVectors::Sparse(rows) => match (rows.get(&first), rows.get(&second)) {
                (Some(x), Some(y)) => {
                    let (small, large) = if x.len() <= y.len() { (x, y) } else { (y, x) };
                    small.iter().filter_map(|(term, w)| large.get(term).map(|u| w * u)).sum()
                }
                _ => 0.0,
            },
        }
    }

    /// Two results' similarity: the mean of the top [`PAIR_TOP`] cosines between their best
    /// [`RESULT_CHUNKS`] chunks.
    fn similarity(&self, a: &DocHit, b: &DocHit) -> f32 {
        let mut cosines: Vec<f32> = a.chunks[..a.chunks.len().min(RESULT_CHUNKS)]
            .iter()
            .flat_map(|x| {
                b.chunks[..b.chunks.len().min(RESULT_CHUNKS)]
                    .iter()
                    .map(move |y| self.cosine(x.chunk, y.chunk))
            })
            .collect();
        if cosines.is_empty() {
            return 0.0;
        }
        cosines.sort_unstable_by(|x, y| y.total_cmp(x));
        let top = &cosines[..cosines.len().min(PAIR_TOP)];
        top.iter().sum::<f32>() / top.len() as f32
    }
}

/// The ids of the chunks MMR compares in `pool`.
pub(crate) fn compared_chunks(pool: &[DocHit]) -> Vec<ChunkId> {
    let mut ids: Vec<ChunkId> =
        pool.iter().flat_map(|g| g.chunks.iter().take(RESULT_CHUNKS).map(|h| h.chunk)).collect();
    ids.sort_unstable();
    ids.dedup();
    ids
}

/// Unit-length term-count vectors of texts.
pub(crate) fn term_vectors(
    analyzer: ckeep_index::Analyzer,
    texts: impl IntoIterator<Item = (ChunkId, String)>,
) -> ChunkVectors {
    ChunkVectors::Sparse(
        texts
            .into_iter()
            .map(|(id, text)| {
                let (terms, _) = analyzer.term_counts(&text);
                let norm = terms.iter().map(|(_, c)| (*c as f32).powi(2)).sum::<f32>().sqrt();
                let v = terms.into_iter().map(|(t, c)| (t, c as f32 / norm.max(1e-9))).collect();
                (id, v)
            })
            .collect(),
    )
}

/// Unit-length copies of stored embeddings.
pub(crate) fn dense_vectors(vectors: HashMap<ChunkId, Vec<f32>>) -> ChunkVectors {
    ChunkVectors::Dense(
        vectors
            .into_iter()
            .map(|(id, mut v)| {
                ckeep_embed::normalize(&mut v);
                (id, v)
            })
            .collect(),
    )
}

/// The `k` results MMR picks from `pool` (ranked, best first), in the order picked, each with
/// why it stands there. Ties keep the first stage's order.
pub(crate) fn select(
    pool: Vec<DocHit>,
    vectors: &ChunkVectors,
    lambda: f32,
    k: usize,
) -> Vec<(DocHit, Redundancy)> {
    let top_score = pool.iter().map(|g| g.score).fold(f32::NEG_INFINITY, f32::max);
    let relevance = |score: f32| if top_score > 0.0 { (score / top_score).max(0.0) } else { 1.0 };
    // Each candidate's greatest similarity to a picked result so far, and that result's rank.
    let mut nearest: Vec<(f32, Option<usize>)> = vec![(0.0, None); pool.len()];
    let mut left: Vec<usize> = (0..pool.len()).collect();
    let mut picked: Vec<(usize, Redundancy)> = Vec::with_capacity(k.min(pool.len()));
    while picked.len() < k && !left.is_empty() {
        let mmr = |i: usize| lambda * relevance(pool[i].score) - (1.0 - lambda) * nearest[i].0;
        let (at, &best) = left
            .iter()
            .enumerate()
            .max_by(|(_, a), (_, b)| mmr(**a).total_cmp(&mmr(**b)).then(b.cmp(a)))
            .expect("left is not empty");
        left.remove(at);
        let why = Redundancy {
            lambda,
            relevance: relevance(pool[best].score),
            redundancy: nearest[best].0,
            similar_to: nearest[best].1,
            mmr: mmr(best),
            first_rank: best + 1,
            similarity: vectors.kind(),
        };
        picked.push((best, why));
        let rank = picked.len();
        for &i in &left {
            let s = vectors.similarity(&pool[i], &pool[best]);
            if nearest[i].1.is_none() || s > nearest[i].0 {
                nearest[i] = (s, Some(rank));
            }
        }
    }
    let mut slots: Vec<Option<DocHit>> = pool.into_iter().map(Some).collect();
    picked.into_iter().filter_map(|(i, why)| Some((slots[i].take()?, why))).collect()
}

/// The ranked `pool` as the strategy's diversification leaves it: unchanged, or the `k` results
/// MMR picks, with why each stands where it does (keyed by its best chunk). Chunks are compared
/// as [`mmr_vectors`] reads them from `store`.
pub(crate) fn diversified<S: ckeep_store::StoreRead>(
    store: &S,
    pool: Vec<DocHit>,
    diversify: Diversify,
    k: usize,
    analyzer: ckeep_index::Analyzer,
) -> crate::error::Result<(Vec<DocHit>, HashMap<ChunkId, Redundancy>)> {
    let Diversify::Mmr { lambda, .. } = diversify else { return Ok((pool, HashMap::new())) };
    let vectors = mmr_vectors(store, &pool, analyzer)?;
    let picked = select(pool, &vectors, lambda, k);
    let why = picked.iter().filter_map(|(g, r)| Some((g.chunks.first()?.chunk, *r))).collect();
    Ok((picked.into_iter().map(|(g, _)| g).collect(), why))
}

/// The vectors MMR compares the chunks of `pool` by: their stored plain embeddings when the
/// store has one for every such chunk, else their analysed term counts (`analyzer`, the
/// store's, so Chinese text is compared by its words).
fn mmr_vectors<S: ckeep_store::StoreRead>(
    store: &S,
    pool: &[DocHit],
    analyzer: ckeep_index::Analyzer,
) -> crate::error::Result<ChunkVectors> {
    let ids = compared_chunks(pool);
    let mut stored: HashMap<ChunkId, Vec<f32>> = HashMap::with_capacity(ids.len());
    store.each_vector(crate::represent::PLAIN_REPR, Some(&ids), &mut |id, _, v| {
        stored.insert(id, v.to_vec());
    })?;
    if stored.len() == ids.len() {
        return Ok(dense_vectors(stored));
    }
    let chunks = store.chunks_by_id(&ids)?;
    let spans: Vec<_> = chunks.iter().map(|c| (c.doc, c.chunk.span)).collect();
    let texts = store.span_texts(&spans)?;
    Ok(term_vectors(analyzer, chunks.iter().map(|c| c.id).zip(texts)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ckeep_core::{ChunkHit, DocKey};

    fn hit(id: i64, score: f32) -> DocHit {
        let chunk = ChunkHit { chunk: ChunkId(id), doc: DocKey(id), score };
        DocHit { doc: DocKey(id), score, chunks: vec![chunk] }
    }

    fn vectors(rows: &[(i64, [f32; 2])]) -> ChunkVectors {
        dense_vectors(rows.iter().map(|(id, v)| (ChunkId(*id), v.to_vec())).collect())
    }

    #[test]
    fn a_near_copy_gives_way_to_a_new_result() {
        // 1 and 2 say the same thing; 3 is a little less relevant and says something else.
        let v = vectors(&[(1, [1.0, 0.0]), (2, [0.99, 0.05]), (3, [0.0, 1.0])]);
        let pool = vec![hit(1, 10.0), hit(2, 9.5), hit(3, 8.0)];
        let plain: Vec<i64> =
            select(pool.clone(), &v, 1.0, 3).iter().map(|(h, _)| h.doc.0).collect();
        assert_eq!(plain, [1, 2, 3], "λ = 1 is the first stage's ranking");
        let diverse = select(pool, &v, 0.5, 3);
        let order: Vec<i64> = diverse.iter().map(|(h, _)| h.doc.0).collect();
        assert_eq!(order, [1, 3, 2]);
        let (_, copy) = diverse[2];
        assert_eq!((copy.similar_to, copy.first_rank), (Some(1), 2));
        assert!(copy.redundancy > 0.99, "{copy:?}");
        assert!((diverse[0].1.relevance - 1.0).abs() < 1e-6 && diverse[0].1.similar_to.is_none());
    }

    #[test]
    fn terms_compare_chinese_chunks_too() {
        let texts = [
            (1, "北京大学的图书馆"),
            (2, "北京大学的图书馆今天开放"),
            (3, "上海天气晴朗"),
            (4, "深圳的地铁"),
        ];
        let v = term_vectors(
            ckeep_index::Analyzer::Jieba,
            texts.iter().map(|(id, t)| (ChunkId(*id), t.to_string())),
        );
        assert!(v.cosine(ChunkId(1), ChunkId(2)) > 0.8);
        assert!(v.cosine(ChunkId(1), ChunkId(3)).abs() < 1e-6);
        let order: Vec<i64> =
            select(vec![hit(1, 3.0), hit(2, 2.9), hit(3, 2.6), hit(4, 1.0)], &v, 0.5, 2)
                .iter()
                .map(|(h, _)| h.doc.0)
                .collect();
        assert_eq!(order, [1, 3]);
    }

    #[test]
    fn specs_parse_print_and_refuse() {
        for spec in ["none", "mmr:0.5", "mmr:0.7:60"] {
            assert_eq!(spec.parse::<Diversify>().unwrap().to_string(), spec);
        }
        assert_eq!("mmr".parse::<Diversify>().unwrap().to_string(), "mmr:0.5");
        for bad in ["mmr:1.5", "mmr:x", "mmr:0.5:0", "mmr:0.5:3:4", "maxsim"] {
            assert!(bad.parse::<Diversify>().is_err(), "{bad}");
        }
        assert_eq!("mmr".parse::<Diversify>().unwrap().pool(5), 40);
        assert_eq!("mmr:0.5:3".parse::<Diversify>().unwrap().pool(5), 5);
    }
}
