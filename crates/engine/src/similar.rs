//! Chunk-pair similarity: "store long, index short" applied to two texts. Each text is cut into
//! word windows (by default `clamp(words/4, 18, 150)` words, the chunk-pair experiment's rule),
//! every window is embedded, and the pair is scored by the mean cosine of its top-k most similar
//! window pairs. The whole-text cosine is computed beside it, since that is what users compare
//! against.
//!
//! Texts are embedded in batches (all windows and whole texts of a batch in one model call,
//! repeated texts once), and a pair's cosines are one block of dot products over unit vectors;
//! the top k are selected without sorting the block.
//!
//! A scorer may hold further models: the same windows are embedded by each, and each model's
//! scores are kept beside the first's, as features of a learned pair score (two encoders trained
//! on different data disagree in useful places).

use std::collections::HashMap;
use std::sync::Arc;

use ckeep_core::Span;
use ckeep_embed::{Embedder, InputKind};
use ckeep_index::dot_rows;
use ckeep_text::ChunkerSpec;
use serde::Serialize;

use crate::error::{Error, Result};

/// Further models a scorer may hold (each one embeds every window again).
pub const MAX_FURTHER_PAIR_MODELS: usize = 3;

/// One text, cut into chunks and embedded.
#[derive(Debug, Clone)]
pub struct EmbeddedText {
    /// The chunks' byte spans in the text.
    pub spans: Vec<Span>,
    /// Unit-length chunk vectors, row-major (`spans.len() × dim`).
    pub vectors: Vec<f32>,
    /// Unit-length vector of the whole text, as the model sees it (cut at its input limit).
    pub whole: Vec<f32>,
    /// The same chunks and whole text by each further model of the scorer, in its order.
    pub more: Vec<TextVectors>,
}

/// One model's vectors of a text's chunks and of the whole text.
#[derive(Debug, Clone)]
pub struct TextVectors {
    /// Unit-length chunk vectors, row-major.
    pub vectors: Vec<f32>,
    /// Unit-length vector of the whole text.
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
    /// The same scores by each further model of the scorer, in its order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub more: Vec<ModelPairScore>,
}

/// A further model's scores of a pair.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ModelPairScore {
    /// The model's name.
    pub model: String,
    /// Mean cosine of its top-k chunk pairs.
    pub chunk_pair: f32,
    /// Cosine of the two whole texts.
    pub whole: f32,
    /// Cosine of its most similar chunk pair (the whole-text cosine if a text has no chunks).
    pub top_cosine: f32,
}

/// Two texts compared: `ckeep similar --json`, `POST /similar`, MCP's `similar`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SimilarReport {
    /// Mean cosine of the top-k chunk pairs.
    pub chunk_pair: f32,
    /// Cosine of the two whole texts.
    pub whole: f32,
    /// The duplicate threshold the verdicts use.
    pub threshold: f64,
    /// Whether the chunk-pair score reaches the threshold.
    pub duplicate: bool,
    /// Whether the whole-text cosine reaches it.
    pub whole_duplicate: bool,
    /// The model.
    pub model: String,
    /// The chunker the texts were cut with.
    pub chunker: String,
    /// Chunk pairs averaged.
    pub top_k: usize,
    /// How many chunks each text has.
    pub chunks: [usize; 2],
    /// With `explain`: the chunk pairs behind the score, most similar first (else `null`).
    pub top: Option<Vec<MatchedPair>>,
    /// The same scores by each further model of the scorer.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub further_models: Vec<ModelPairScore>,
}

/// One pair of matching chunks, with their spans and text.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct MatchedPair {
    /// Their cosine.
    pub cosine: f32,
    /// The chunk of the first text.
    pub a: PairSide,
    /// The chunk of the second text.
    pub b: PairSide,
}

/// A chunk of one of two compared texts.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct PairSide {
    /// Its index among the text's chunks.
    pub chunk: usize,
    /// Its byte span in the text.
    pub span: Span,
    /// Its text.
    pub text: String,
}

/// Chunks, embeds and scores texts.
#[derive(Debug, Clone)]
pub struct PairScorer {
    embedder: Arc<dyn Embedder>,
    more: Vec<Arc<dyn Embedder>>,
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
        Ok(Self { embedder, more: Vec::new(), chunker, top_k })
    }

    /// This scorer with further models, whose scores are kept beside the first model's. Each
    /// must be another model than the rest.
    pub fn with_further_models(mut self, more: Vec<Arc<dyn Embedder>>) -> Result<Self> {
        if more.len() > MAX_FURTHER_PAIR_MODELS {
            return Err(Error::Invalid(format!(
                "a pair scorer holds at most {} models",
                MAX_FURTHER_PAIR_MODELS + 1
            )));
        }
        let mut names = vec![self.embedder.info().name.clone()];
        for m in &more {
            let name = &m.info().name;
            if names.contains(name) {
                return Err(Error::Invalid(format!("the model {name} is named twice")));
            }
            names.push(name.clone());
        }
        self.more = more;
        Ok(self)
    }

    /// The embedding model.
    pub fn embedder(&self) -> &Arc<dyn Embedder> {
        &self.embedder
    }

    /// Every model's name, the first model's first.
    pub fn model_names(&self) -> Vec<String> {
        std::iter::once(&self.embedder).chain(&self.more).map(|m| m.info().name.clone()).collect()
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
        let embed = |model: &Arc<dyn Embedder>| -> Result<(Vec<Vec<f32>>, usize)> {
            let (mut vectors, _) = model.embed(&inputs, InputKind::Pair)?;
            for v in &mut vectors {
                ckeep_embed::normalize(v);
            }
            Ok((vectors, model.info().dim))
        };
        let per_model = std::iter::once(&self.embedder)
            .chain(&self.more)
            .map(embed)
            .collect::<Result<Vec<_>>>()?;
        Ok(wanted
            .into_iter()
            .zip(spans)
            .map(|((chunks, whole), spans)| {
                let mut by_model = per_model.iter().map(|(vectors, dim)| TextVectors {
                    vectors: chunks.iter().flat_map(|&i| vectors[i].iter().copied()).collect(),
                    whole: whole.map_or_else(|| vec![0.0; *dim], |i| vectors[i].clone()),
                });
                let first =
                    by_model.next().unwrap_or(TextVectors { vectors: vec![], whole: vec![] });
                EmbeddedText {
                    spans,
                    vectors: first.vectors,
                    whole: first.whole,
                    more: by_model.collect(),
                }
            })
            .collect())
    }

    /// The report of `a` and `b` (as `ckeep similar --json`, the server and MCP give it):
    /// both scores, the verdicts at `threshold`, and with `explain` the matching chunk pairs
    /// with spans and text.
    pub fn report(&self, a: &str, b: &str, threshold: f64, explain: bool) -> Result<SimilarReport> {
        let embedded = self.embed(&[a, b])?;
        let (ea, eb) = (&embedded[0], &embedded[1]);
        let score = self.score(ea, eb);
        let side = |chunk: usize, spans: &[Span], text: &str| PairSide {
            chunk,
            span: spans[chunk],
            text: spans[chunk].slice(text).to_string(),
        };
        let top = explain.then(|| {
            score
                .top
                .iter()
                .map(|p| MatchedPair {
                    cosine: p.cosine,
                    a: side(p.a, &ea.spans, a),
                    b: side(p.b, &eb.spans, b),
                })
                .collect()
        });
        Ok(SimilarReport {
            chunk_pair: score.chunk_pair,
            whole: score.whole,
            threshold,
            duplicate: f64::from(score.chunk_pair) >= threshold,
            whole_duplicate: f64::from(score.whole) >= threshold,
            model: self.embedder.info().name.clone(),
            chunker: self.chunker.to_string(),
            top_k: self.top_k,
            chunks: [ea.spans.len(), eb.spans.len()],
            top,
            further_models: score.more,
        })
    }

    /// Scores a pair of embedded texts (by every model the scorer holds).
    pub fn score(&self, a: &EmbeddedText, b: &EmbeddedText) -> PairScore {
        let (na, nb) = (a.spans.len(), b.spans.len());
        let top = top_pairs(&a.vectors, &b.vectors, a.whole.len(), (na, nb), self.top_k);
        let more = self
            .more
            .iter()
            .zip(a.more.iter().zip(&b.more))
            .map(|(model, (va, vb))| {
                let whole = ckeep_index::dot(&va.whole, &vb.whole);
                let top = top_pairs(&va.vectors, &vb.vectors, va.whole.len(), (na, nb), self.top_k);
                ModelPairScore {
                    model: model.info().name.clone(),
                    chunk_pair: mean_cosine(&top),
                    whole,
                    top_cosine: top.first().map_or(whole, |p| p.cosine),
                }
            })
            .collect();
        PairScore {
            chunk_pair: mean_cosine(&top),
            whole: ckeep_index::dot(&a.whole, &b.whole),
            top,
            more,
        }
    }
}

/// Mean cosine of chunk pairs (0 for none).
fn mean_cosine(pairs: &[ChunkPair]) -> f32 {
    if pairs.is_empty() {
        0.0
    } else {
        pairs.iter().map(|p| p.cosine).sum::<f32>() / pairs.len() as f32
    }
}

/// The `top_k` most similar of the `na × nb` chunk pairs of two texts' unit chunk vectors,
/// most similar first.
fn top_pairs(
    a: &[f32],
    b: &[f32],
    dim: usize,
    (na, nb): (usize, usize),
    top_k: usize,
) -> Vec<ChunkPair> {
    let mut cosines = Vec::with_capacity(na * nb);
    for row in a.chunks_exact(dim.max(1)) {
        dot_rows(b, dim, row, &mut cosines);
    }
    let mut pairs: Vec<ChunkPair> = cosines
        .into_iter()
        .enumerate()
        .map(|(i, cosine)| ChunkPair { a: i / nb.max(1), b: i % nb.max(1), cosine })
        .collect();
    let order = |x: &ChunkPair, y: &ChunkPair| {
        y.cosine.total_cmp(&x.cosine).then(x.a.cmp(&y.a)).then(x.b.cmp(&y.b))
    };
    if pairs.len() > top_k {
        pairs.select_nth_unstable_by(top_k - 1, order);
        pairs.truncate(top_k);
    }
    pairs.sort_unstable_by(order);
    pairs
}
