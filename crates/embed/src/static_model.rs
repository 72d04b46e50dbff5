//! Model2Vec static embeddings (e.g. potion-base-8M): a text's vector is the mean of its tokens'
//! rows, then L2-normalised — hundreds of times cheaper than a transformer.
//!
//! Matches `model2vec`'s `StaticModel.encode` defaults: the text is cut to 512 × the median token
//! length in characters, tokenised without special tokens, unknown tokens dropped, at most 512
//! tokens kept.

use std::path::Path;

use rayon::prelude::*;
use serde::Deserialize;
use tokenizers::Tokenizer;

use crate::{EmbedStats, Embedder, Error, ModelInfo, Result, read_file};

/// `model2vec`'s default `max_length`.
const MAX_TOKENS: usize = 512;

/// A Model2Vec model.
pub struct StaticModel {
    tokenizer: Tokenizer,
    /// Row-major `[vocab, dim]`.
    rows: Vec<f32>,
    unk: Option<u32>,
    max_chars: usize,
    info: ModelInfo,
}

impl std::fmt::Debug for StaticModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StaticModel").field("info", &self.info).finish_non_exhaustive()
    }
}

#[derive(Deserialize)]
struct Config {
    #[serde(default)]
    model_type: String,
    #[serde(default)]
    normalize: bool,
}

/// Whether `dir` holds a Model2Vec model (its `config.json` says `model2vec`).
pub(crate) fn is_model2vec(dir: &Path) -> bool {
    std::fs::read(dir.join("config.json"))
        .ok()
        .and_then(|b| serde_json::from_slice::<Config>(&b).ok())
        .is_some_and(|c| c.model_type == "model2vec")
}

impl StaticModel {
    /// Loads a Model2Vec directory (`config.json`, `tokenizer.json`, `model.safetensors`).
    pub fn load(dir: &Path) -> Result<Self> {
        let config_path = dir.join("config.json");
        let config_bytes = read_file(&config_path)?;
        let config: Config = serde_json::from_slice(&config_bytes).map_err(|e| {
            Error::ModelFile { path: config_path.display().to_string(), message: e.to_string() }
        })?;
        let (mut tokenizer, tok_bytes) = crate::read_tokenizer(dir)?;
        tokenizer.with_padding(None);
        tokenizer.with_truncation(None).map_err(|e| Error::Tokenizer(e.to_string()))?;
        let weights = dir.join("model.safetensors");
        let bytes = read_file(&weights)?;
        let bad =
            |message: String| Error::ModelFile { path: weights.display().to_string(), message };
        let tensors = safetensors::SafeTensors::deserialize(&bytes)
            .map_err(|e| bad(format!("corrupt or not safetensors: {e}")))?;
        if let Some(extra) = ["mapping", "weights"].iter().find(|k| tensors.tensor(k).is_ok()) {
            return Err(Error::Unsupported {
                path: dir.display().to_string(),
                message: format!(
                    "Model2Vec tensor `{extra}` (vocabulary quantisation or token weights)"
                ),
            });
        }
        let emb = tensors
            .tensor("embeddings")
            .map_err(|_| bad("no `embeddings` tensor; is this a Model2Vec model?".into()))?;
        let [vocab, dim] = emb.shape() else {
            return Err(bad(format!(
                "`embeddings` has shape {:?}; expected 2 dimensions",
                emb.shape()
            )));
        };
        let (vocab, dim) = (*vocab, *dim);
        let rows = crate::tensor_f32(&emb).map_err(|e| bad(format!("`embeddings`: {e}")))?;
        let mut lengths: Vec<usize> =
            tokenizer.get_vocab(true).keys().map(|t| t.chars().count()).collect();
        if lengths.len() != vocab {
            return Err(bad(format!(
                "{vocab} embedding rows, but tokenizer.json has {} tokens",
                lengths.len()
            )));
        }
        lengths.sort_unstable();
        // numpy's median, floored as model2vec's int() does.
        let mid = lengths.len() / 2;
        let median = if lengths.len().is_multiple_of(2) {
            usize::midpoint(lengths[mid - 1], lengths[mid])
        } else {
            lengths[mid]
        };
        let raw: serde_json::Value = serde_json::from_slice(&tok_bytes).unwrap_or_default();
        let unk = raw["model"]["unk_token"].as_str().and_then(|t| tokenizer.token_to_id(t));
        let mut hasher = blake3::Hasher::new();
        hasher.update(&bytes).update(&tok_bytes).update(&config_bytes);
        let info = ModelInfo {
            name: crate::registry::display_name(dir),
            fingerprint: hasher.finalize().to_hex()[..16].to_string(),
            architecture: "model2vec".into(),
            dim,
            max_tokens: Some(MAX_TOKENS),
            normalized: config.normalize,
            query_prefix: String::new(),
            document_prefix: String::new(),
            pair_prefix: String::new(),
            source: dir.display().to_string(),
        };
        Ok(Self { tokenizer, rows, unk, max_chars: MAX_TOKENS * median.max(1), info })
    }

    fn embed_one(&self, text: &str) -> Result<(Vec<f32>, usize, bool)> {
        let cut = text.char_indices().nth(self.max_chars).map_or(text, |(i, _)| &text[..i]);
        let enc = self.tokenizer.encode(cut, false).map_err(|e| Error::Tokenizer(e.to_string()))?;
        let ids: Vec<u32> =
            enc.get_ids().iter().copied().filter(|&i| Some(i) != self.unk).collect();
        let truncated = ids.len() > MAX_TOKENS || cut.len() < text.len();
        let ids = &ids[..ids.len().min(MAX_TOKENS)];
        let dim = self.info.dim;
        let mut v = vec![0f32; dim];
        for &id in ids {
            let row = &self.rows[id as usize * dim..(id as usize + 1) * dim];
            v.iter_mut().zip(row).for_each(|(a, b)| *a += b);
        }
        if !ids.is_empty() {
            let n = ids.len() as f32;
            for x in &mut v {
                *x /= n;
            }
        }
        if self.info.normalized {
            crate::normalize(&mut v);
        }
        Ok((v, ids.len(), truncated))
    }
}

impl Embedder for StaticModel {
    fn info(&self) -> &ModelInfo {
        &self.info
    }

    fn count_text_tokens(&self, text: &str) -> Option<usize> {
        self.tokenizer.encode(text, false).ok().map(|e| e.len())
    }

    fn embed_raw(&self, texts: &[&str]) -> Result<(Vec<Vec<f32>>, EmbedStats)> {
        let each: Vec<(Vec<f32>, usize, bool)> =
            texts.par_iter().map(|t| self.embed_one(t)).collect::<Result<_>>()?;
        let mut stats = EmbedStats::default();
        let vectors = each
            .into_iter()
            .map(|(v, tokens, truncated)| {
                stats.tokens += tokens;
                stats.truncated += usize::from(truncated);
                v
            })
            .collect();
        Ok((vectors, stats))
    }

    fn token_vectors(
        &self,
        _texts: &[&str],
        _kind: crate::InputKind,
    ) -> Result<Vec<crate::TokenVectors>> {
        Err(crate::no_token_vectors(&self.info))
    }
}
