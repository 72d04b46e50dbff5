//! Chunk-pair similarity: "store long, index short" applied to two texts. Each text is cut into
//! word windows (by default `clamp(words/4, 18, 150)` words, the chunk-pair experiment's rule),
//! every window is embedded, and the pair is scored by the mean cosine of its top-k most similar
//! window pairs. The whole-text cosine is computed beside it, since that is what users compare
//! against.
//!
//! Texts are embedded in batches (all windows and whole texts of a batch in one model call,
//! repeated texts once), and a pair's cosines are one block of dot products over unit vectors;
//! the top k are selected without sorting the block.

use std::collections::HashMap;
use std::sync::Arc;

use ckeep_core::Span;
use ckeep_embed::{Embedder, InputKind};
use ckeep_index::dot_rows;
use ckeep_text::ChunkerSpec;
use serde::Serialize;

use crate::{Error, Result};

/// Window pairs averaged by default (the chunk-pair experiment's k).
pub const DEFAULT_TOP_K: usize = 3;

/// Default duplicate threshold (the chunk-pair experiment's).
pub const DEFAULT_THRESHOLD: f64 = 0.7;

/// One text, cut into chunks and embedded.
#[derive(Debug, Clone)]
pub struct EmbeddedText {
    /// The chunks' byte spans in the text.
    pub spans: Vec<Span>,
    /// Unit-length chunk vectors, row-major (`spans.len() × dim`).
    pub vectors: Vec<f32>,
    /// Unit-length vector of the whole text, as the model sees it (cut at its input limit).
    pub whole: Vec<f32>,
}

/// One pair of similar chunks: indices into the two texts' spans.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ChunkPair {
    /// Chunk of the first text.
    pub a: usize,
    /// Chunk of the second text.
    pub b: usize,
    /// Their cosine.
    pub cosine: f32,
}

/// A pair's scores.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PairScore {
    /// Mean cosine of the top-k chunk pairs (of all pairs, if there are fewer).
    pub chunk_pair: f32,
    /// Cosine of the two whole texts.
    pub whole: f32,
    /// The chunk pairs behind `chunk_pair`, most similar first.
    pub top: Vec<ChunkPair>,
}

/// Chunks, embeds and scores texts.
#[derive(Debug, Clone)]
pub struct PairScorer {
    embedder: Arc<dyn Embedder>,
    chunker: ChunkerSpec,
    top_k: usize,
}

impl PairScorer {
    /// A scorer with `chunker` (`words:dynamic` in the experiment) and top-`k` averaging.
    /// Chunkers that need sentence embeddings (`semantic`) are refused.
    pub fn new(embedder: Arc<dyn Embedder>, chunker: ChunkerSpec, top_k: usize) -> Result<Self> {
        if chunker.needs_sentence_vectors() {
            return Err(Error::Invalid(format!(
                "chunker `{chunker}` is not supported for pair similarity; use words, sentences or paragraphs"
            )));
        }
        if top_k == 0 {
            return Err(Error::Invalid("top-k must be at least 1".into()));
        }
        Ok(Self { embedder, chunker, top_k })
    }

    /// The embedding model.
    pub fn embedder(&self) -> &Arc<dyn Embedder> {
        &self.embedder
    }

    /// How texts are cut.
    pub fn chunker(&self) -> &ChunkerSpec {
        &self.chunker
    }

    /// Chunk pairs averaged.
    pub fn top_k(&self) -> usize {
        self.top_k
    }

    /// Chunks and embeds `texts`; all chunks and whole texts go to the model in one call, each
    /// distinct string once. A text without words gets no chunks and zero vectors.
    pub fn embed<'a>(&self, texts: &[&'a str]) -> Result<Vec<EmbeddedText>> {
        let counter = crate::ingest::size_counter(&self.chunker, Some(&self.embedder))?;
        let spans: Vec<Vec<Span>> = texts
            .iter()
            .map(|t| self.chunker.chunk(t, counter.as_ref()).into_iter().map(|c| c.span).collect())
            .collect();
        let mut inputs: Vec<&str> = Vec::new();
        let mut slot: HashMap<&str, usize> = HashMap::new();
        let mut index = |s: &'a str| -> usize {
            *slot.entry(s).or_insert_with(|| {
                inputs.push(s);
                inputs.len() - 1
            })
        };
        let wanted: Vec<(Vec<usize>, Option<usize>)> = texts
            .iter()
            .zip(&spans)
            .map(|(text, spans)| {
                let chunks = spans.iter().map(|s| index(s.slice(text))).collect();
                (chunks, (!text.trim().is_empty()).then(|| index(text.trim())))
            })
            .collect();
        let (mut vectors, _) = self.embedder.embed(&inputs, InputKind::Pair)?;
        for v in &mut vectors {
            ckeep_embed::normalize(v);
        }
        let dim = self.embedder.info().dim;
        Ok(wanted
            .into_iter()
            .zip(spans)
            .map(|((chunks, whole), spans)| EmbeddedText {
                spans,
                vectors: chunks.iter().flat_map(|&i| vectors[i].iter().copied()).collect(),
                whole: whole.map_or_else(|| vec![0.0; dim], |i| vectors[i].clone()),
            })
            .collect())
    }

    /// The JSON report of `a` and `b` (as `ckeep similar --json` and the server print it):
    /// both scores, the verdicts at `threshold`, and with `explain` the matching chunk pairs
    /// with spans and text.
    pub fn report(
        &self,
        a: &str,
        b: &str,
        threshold: f64,
        explain: bool,
    ) -> Result<serde_json::Value> {
        let embedded = self.embed(&[a, b])?;
        let (ea, eb) = (&embedded[0], &embedded[1]);
        let score = self.score(ea, eb);
        let top: Vec<serde_json::Value> = score
            .top
            .iter()
            .map(|p| {
                let (sa, sb) = (ea.spans[p.a], eb.spans[p.b]);
                serde_json::json!({
                    "cosine": p.cosine,
                    "a": {"chunk": p.a, "span": sa, "text": sa.slice(a)},
                    "b": {"chunk": p.b, "span": sb, "text": sb.slice(b)},
                })
            })
            .collect();
        Ok(serde_json::json!({
            "chunk_pair": score.chunk_pair,
            "whole": score.whole,
            "threshold": threshold,
            "duplicate": f64::from(score.chunk_pair) >= threshold,
            "whole_duplicate": f64::from(score.whole) >= threshold,
            "model": self.embedder.info().name,
            "chunker": self.chunker.to_string(),
            "top_k": self.top_k,
            "chunks": [ea.spans.len(), eb.spans.len()],
            "top": if explain { serde_json::Value::from(top) } else { serde_json::Value::Null },
        }))
    }

    /// Scores a pair of embedded texts.
    pub fn score(&self, a: &EmbeddedText, b: &EmbeddedText) -> PairScore {
        let dim = a.whole.len();
        let whole = ckeep_index::dot(&a.whole, &b.whole);
        let nb = b.spans.len();
        let mut cosines = Vec::with_capacity(a.spans.len() * nb);
        for row in a.vectors.chunks_exact(dim.max(1)) {
            dot_rows(&b.vectors, dim, row, &mut cosines);
        }
        let mut pairs: Vec<ChunkPair> = cosines
            .into_iter()
            .enumerate()
            .map(|(i, cosine)| ChunkPair { a: i / nb.max(1), b: i % nb.max(1), cosine })
            .collect();
        let order = |x: &ChunkPair, y: &ChunkPair| {
            y.cosine.total_cmp(&x.cosine).then(x.a.cmp(&y.a)).then(x.b.cmp(&y.b))
        };
        if pairs.len() > self.top_k {
            pairs.select_nth_unstable_by(self.top_k - 1, order);
            pairs.truncate(self.top_k);
        }
        pairs.sort_unstable_by(order);
        let chunk_pair = if pairs.is_empty() {
            0.0
        } else {
            pairs.iter().map(|p| p.cosine).sum::<f32>() / pairs.len() as f32
        };
        PairScore { chunk_pair, whole, top: pairs }
    }
}
