use std::path::{Path, PathBuf};

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use serde::Deserialize;
use tokenizers::{PaddingParams, PaddingStrategy, Tokenizer, TruncationParams};

use crate::Error;

/// Texts per forward pass; sorted by length first, so a batch pads to similar lengths.
const BATCH: usize = 32;

/// How token vectors become one text vector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pooling {
    /// Mean of the token vectors under the attention mask.
    Mean,
    /// The first (`[CLS]`) token's vector.
    Cls,
}

/// Counts of one `embed` call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EmbedStats {
    /// Inputs longer than the model's sequence length, cut to it.
    pub truncated: usize,
    /// Tokens processed (without padding).
    pub tokens: usize,
}

/// A sentence-transformers BERT model.
pub struct SentenceTransformer {
    model: BertModel,
    tokenizer: Tokenizer,
    pooling: Pooling,
    normalize: bool,
    max_seq_length: usize,
    dim: usize,
    device: Device,
}

impl std::fmt::Debug for SentenceTransformer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SentenceTransformer")
            .field("pooling", &self.pooling)
            .field("normalize", &self.normalize)
            .field("max_seq_length", &self.max_seq_length)
            .field("dim", &self.dim)
            .finish_non_exhaustive()
    }
}

#[derive(Deserialize)]
struct PoolingConfig {
    #[serde(default)]
    pooling_mode_cls_token: bool,
    #[serde(default)]
    pooling_mode_mean_tokens: bool,
}

#[derive(Deserialize)]
struct SbertConfig {
    max_seq_length: usize,
}

#[derive(Deserialize)]
struct Module {
    #[serde(rename = "type")]
    kind: String,
}

fn file(dir: &Path, name: &str) -> Result<PathBuf, Error> {
    let p = dir.join(name);
    if p.is_file() {
        Ok(p)
    } else {
        Err(Error::ModelFile {
            path: p.display().to_string(),
            message: "missing; is this a sentence-transformers model directory?".into(),
        })
    }
}

fn read_json<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<T, Error> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::ModelFile {
        path: path.display().to_string(),
        message: e.to_string(),
    })?;
    serde_json::from_str(&text).map_err(|e| Error::ModelFile {
        path: path.display().to_string(),
        message: format!("invalid JSON: {e}"),
    })
}

impl SentenceTransformer {
    /// Loads a model directory on the CPU.
    pub fn load(dir: &Path) -> Result<Self, Error> {
        let config_path = file(dir, "config.json")?;
        let raw: serde_json::Value = read_json(&config_path)?;
        let model_type = raw.get("model_type").and_then(|v| v.as_str()).unwrap_or("");
        if !matches!(model_type, "bert" | "") {
            return Err(Error::Unsupported {
                path: dir.display().to_string(),
                message: format!("model_type `{model_type}`; BERT-family models are supported"),
            });
        }
        let config: Config = read_json(&config_path)?;
        let pooling = match dir.join("1_Pooling/config.json") {
            p if p.is_file() => {
                let pc: PoolingConfig = read_json(&p)?;
                match (pc.pooling_mode_mean_tokens, pc.pooling_mode_cls_token) {
                    (true, _) => Pooling::Mean,
                    (false, true) => Pooling::Cls,
                    (false, false) => {
                        return Err(Error::Unsupported {
                            path: p.display().to_string(),
                            message: "only mean and CLS pooling are supported".into(),
                        });
                    }
                }
            }
            _ => Pooling::Mean,
        };
        let normalize = match dir.join("modules.json") {
            p if p.is_file() => {
                read_json::<Vec<Module>>(&p)?.iter().any(|m| m.kind.ends_with("Normalize"))
            }
            _ => false,
        };
        let max_seq_length = match dir.join("sentence_bert_config.json") {
            p if p.is_file() => read_json::<SbertConfig>(&p)?.max_seq_length,
            _ => config.max_position_embeddings,
        }
        .min(config.max_position_embeddings);
        let tok_path = file(dir, "tokenizer.json")?;
        let mut tokenizer = Tokenizer::from_file(&tok_path).map_err(|e| Error::ModelFile {
            path: tok_path.display().to_string(),
            message: e.to_string(),
        })?;
        // Override what tokenizer.json bakes in: sentence-transformers truncates at
        // max_seq_length and pads to the longest input of the batch.
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: max_seq_length,
                ..TruncationParams::default()
            }))
            .map_err(|e| Error::Tokenizer(e.to_string()))?;
        tokenizer.with_padding(Some(PaddingParams {
            strategy: PaddingStrategy::BatchLongest,
            ..PaddingParams::default()
        }));
        let weights = file(dir, "model.safetensors")?;
        let device = Device::Cpu;
        // Read into memory rather than mmapped: the workspace forbids unsafe code.
        let bytes = std::fs::read(&weights).map_err(|e| Error::ModelFile {
            path: weights.display().to_string(),
            message: e.to_string(),
        })?;
        let vb =
            VarBuilder::from_buffered_safetensors(bytes, DType::F32, &device).map_err(|e| {
                Error::ModelFile { path: weights.display().to_string(), message: e.to_string() }
            })?;
        let model = BertModel::load(vb, &config).map_err(|e| Error::ModelFile {
            path: weights.display().to_string(),
            message: format!("does not match config.json: {e}"),
        })?;
        Ok(Self {
            model,
            tokenizer,
            pooling,
            normalize,
            max_seq_length,
            dim: config.hidden_size,
            device,
        })
    }

    /// Vector dimension.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Longest input in tokens; longer inputs are truncated (and counted).
    pub fn max_seq_length(&self) -> usize {
        self.max_seq_length
    }

    /// Embeds texts; vectors come back in input order.
    pub fn embed(&self, texts: &[&str]) -> Result<(Vec<Vec<f32>>, EmbedStats), Error> {
        let mut stats = EmbedStats::default();
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| texts[i].len());
        let mut out = vec![Vec::new(); texts.len()];
        for batch in order.chunks(BATCH) {
            let inputs: Vec<&str> = batch.iter().map(|&i| texts[i]).collect();
            let encodings = self
                .tokenizer
                .encode_batch(inputs, true)
                .map_err(|e| Error::Tokenizer(e.to_string()))?;
            let len = encodings.iter().map(|e| e.get_ids().len()).max().unwrap_or(0);
            let mut ids = Vec::with_capacity(batch.len() * len);
            let mut mask = Vec::with_capacity(batch.len() * len);
            for e in &encodings {
                if !e.get_overflowing().is_empty() {
                    stats.truncated += 1;
                }
                stats.tokens += e.get_attention_mask().iter().filter(|m| **m == 1).count();
                ids.extend(e.get_ids().iter().map(|&x| i64::from(x)));
                mask.extend(e.get_attention_mask().iter().map(|&x| i64::from(x)));
            }
            let ids = Tensor::from_vec(ids, (batch.len(), len), &self.device)?;
            let mask = Tensor::from_vec(mask, (batch.len(), len), &self.device)?;
            let types = ids.zeros_like()?;
            let hidden = self.model.forward(&ids, &types, Some(&mask))?;
            let pooled = match self.pooling {
                Pooling::Mean => {
                    let m = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
                    let sum = hidden.broadcast_mul(&m)?.sum(1)?;
                    let count = m.sum(1)?.clamp(1e-9, f64::MAX)?;
                    sum.broadcast_div(&count)?
                }
                Pooling::Cls => hidden.narrow(1, 0, 1)?.squeeze(1)?,
            };
            let pooled = if self.normalize {
                let norm = pooled.sqr()?.sum_keepdim(1)?.sqrt()?.clamp(1e-12, f64::MAX)?;
                pooled.broadcast_div(&norm)?
            } else {
                pooled
            };
            for (row, &i) in pooled.to_vec2::<f32>()?.into_iter().zip(batch) {
                out[i] = row;
            }
        }
        Ok((out, stats))
    }
}
