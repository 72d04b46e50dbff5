//! A deterministic embedder for the fast test tier (feature `testing`): no weights, no
//! downloads, the same vectors on every machine.
//!
//! Feature hashing (Weinberger et al., 2009) of analyzer terms: each term adds ±(1 + ln tf) to
//! one of `dim` coordinates chosen by its hash, then the vector is L2-normalised. Texts that
//! share terms get a high cosine, so search, aggregation and pair scoring behave as they do with
//! a trained model on lexical overlap — enough for tests of the machinery, never for quality.
//! The `cjk` analyzer is used so Chinese, Japanese and Korean text gets terms too.

use ckeep_index::Analyzer;

use crate::{EmbedStats, Embedder, InputKind, ModelInfo, Result, TokenVectors};

/// The name prefix that [`crate::load`] recognises: `test-hash-DIM`, e.g. `test-hash-64`.
pub const NAME_PREFIX: &str = "test-hash-";

/// A feature-hashing embedder of a fixed dimension.
#[derive(Debug)]
pub struct HashingEmbedder {
    info: ModelInfo,
}

impl HashingEmbedder {
    /// An embedder of `dim` dimensions (at least 2), named `test-hash-DIM`.
    pub fn new(dim: usize) -> Self {
        let dim = dim.max(2);
        let name = format!("{NAME_PREFIX}{dim}");
        Self {
            info: ModelInfo {
                fingerprint: format!("{name}/{}", Analyzer::Cjk.id()),
                architecture: "hashing".into(),
                dim,
                max_tokens: None,
                normalized: true,
                query_prefix: String::new(),
                document_prefix: String::new(),
                pair_prefix: String::new(),
                source: name.clone(),
                name,
            },
        }
    }

    /// The embedder a model spec names, if it is `test-hash-DIM`.
    pub fn from_spec(spec: &str) -> Option<Self> {
        spec.strip_prefix(NAME_PREFIX)?.parse().ok().filter(|&d| d >= 2).map(Self::new)
    }

    fn embed_one(&self, text: &str) -> (Vec<f32>, usize) {
        let (terms, count) = Analyzer::Cjk.term_counts(text);
        let mut v = vec![0.0f32; self.info.dim];
        for (term, tf) in terms {
            let hash = blake3::hash(term.as_bytes());
            let bytes = hash.as_bytes();
            let slot = u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes")) as usize;
            let sign = if bytes[8] & 1 == 0 { 1.0 } else { -1.0 };
            v[slot % self.info.dim] += sign * (1.0 + (tf as f32).ln());
        }
        crate::normalize(&mut v);
        (v, count as usize)
    }
}

impl Embedder for HashingEmbedder {
    fn info(&self) -> &ModelInfo {
        &self.info
    }

    fn embed_raw(&self, texts: &[&str]) -> Result<(Vec<Vec<f32>>, EmbedStats)> {
        let mut stats = EmbedStats::default();
        let vectors = texts
            .iter()
            .map(|t| {
                let (v, tokens) = self.embed_one(t);
                stats.tokens += tokens;
                v
            })
            .collect();
        Ok((vectors, stats))
    }

    fn count_text_tokens(&self, text: &str) -> Option<usize> {
        Some(Analyzer::Cjk.terms(text).len())
    }

    fn token_vectors(&self, _texts: &[&str], _kind: InputKind) -> Result<Vec<TokenVectors>> {
        Err(crate::no_token_vectors(&self.info))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cosine(a: &[f32], b: &[f32]) -> f32 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }

    #[test]
    fn shared_terms_score_higher_and_vectors_are_stable() {
        let e = HashingEmbedder::from_spec("test-hash-64").unwrap();
        let texts = ["rivers flow to the sea", "the sea where rivers end", "a recipe for bread"];
        let (v, stats) = e.embed(&texts, InputKind::Document).unwrap();
        assert_eq!(v[0].len(), 64);
        assert!(stats.tokens > 0);
        assert!(cosine(&v[0], &v[1]) > cosine(&v[0], &v[2]) + 0.3);
        assert!((cosine(&v[0], &v[0]) - 1.0).abs() < 1e-5);
        let (again, _) = e.embed(&texts[..1], InputKind::Query).unwrap();
        assert_eq!(again[0], v[0], "deterministic");
    }

    #[test]
    fn chinese_text_gets_terms() {
        let e = HashingEmbedder::new(128);
        let (v, _) =
            e.embed(&["今天天气很好", "天气很好", "相似度计算"], InputKind::Query).unwrap();
        assert!(cosine(&v[0], &v[1]) > cosine(&v[0], &v[2]) + 0.3);
        assert_eq!(e.count_text_tokens("天气很好"), Some(3), "three bigrams");
    }

    #[test]
    fn only_well_formed_names_are_recognised() {
        assert!(HashingEmbedder::from_spec("test-hash-1").is_none());
        assert!(HashingEmbedder::from_spec("test-hash-x").is_none());
        assert!(HashingEmbedder::from_spec("all-MiniLM-L6-v2").is_none());
    }

    #[test]
    fn late_chunking_is_refused_with_a_reason() {
        let err = HashingEmbedder::new(8).token_vectors(&["x"], InputKind::Document).unwrap_err();
        assert!(err.to_string().contains("transformer encoder"), "{err}");
    }
}
