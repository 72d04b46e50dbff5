//! A quantised Qwen2-family model (GGUF) run on the CPU by candle, with greedy decoding in the
//! model's chat template.

use std::path::Path;
use std::sync::Mutex;
use std::time::Instant;

use candle_core::quantized::gguf_file;
use candle_core::{Device, Tensor};
use candle_transformers::models::quantized_qwen2::ModelWeights;
use tokenizers::Tokenizer;

use crate::{Error, Generation, Generator, Prompt, Result};

/// Penalty on tokens already in the recent output: small models loop without one.
const REPEAT_PENALTY: f32 = 1.1;
/// How many recent tokens the penalty looks at.
const REPEAT_WINDOW: usize = 64;

/// A Qwen2 GGUF model. Generation takes the model's lock: one prompt at a time, each using
/// every core.
pub struct QwenGguf {
    model: Mutex<ModelWeights>,
    tokenizer: Tokenizer,
    stop: Vec<u32>,
    name: String,
}

impl std::fmt::Debug for QwenGguf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QwenGguf").field("name", &self.name).finish_non_exhaustive()
    }
}

impl QwenGguf {
    /// Loads a GGUF file whose architecture is `qwen2`.
    pub fn load(path: &Path) -> Result<Self> {
        let shown = path.display().to_string();
        let bad = |message: String| Error::ModelFile { path: shown.clone(), message };
        let mut file = std::fs::File::open(path).map_err(|e| bad(e.to_string()))?;
        let content = gguf_file::Content::read(&mut file)
            .map_err(|e| bad(format!("not a GGUF file: {e}")))?;
        let arch = content
            .metadata
            .get("general.architecture")
            .and_then(|v| v.to_string().ok())
            .cloned()
            .unwrap_or_default();
        if arch != "qwen2" {
            return Err(bad(format!(
                "architecture `{arch}`; only qwen2 GGUF models are supported"
            )));
        }
        let tokenizer = crate::tokenizer::from_gguf(&content, &shown)?;
        let mut stop: Vec<u32> = ["<|im_end|>", "<|endoftext|>"]
            .iter()
            .filter_map(|t| tokenizer.token_to_id(t))
            .collect();
        if let Some(eos) =
            content.metadata.get("tokenizer.ggml.eos_token_id").and_then(|v| v.to_u32().ok())
        {
            stop.push(eos);
        }
        let name = content
            .metadata
            .get("general.name")
            .and_then(|v| v.to_string().ok())
            .cloned()
            .unwrap_or_else(|| path.file_stem().unwrap_or_default().to_string_lossy().into_owned());
        let model = ModelWeights::from_gguf(content, &mut file, &Device::Cpu)
            .map_err(|e| bad(format!("weights: {e}")))?;
        Ok(Self { model: Mutex::new(model), tokenizer, stop, name })
    }

    /// Tokens of `text` (chat-template markers are single tokens).
    pub fn count_tokens(&self, text: &str) -> Result<usize> {
        Ok(self.encode(text)?.len())
    }

    /// Token ids of `text` (chat-template markers are single tokens).
    pub fn encode(&self, text: &str) -> Result<Vec<u32>> {
        Ok(self
            .tokenizer
            .encode(text, false)
            .map_err(|e| Error::Model(e.to_string()))?
            .get_ids()
            .to_vec())
    }

    /// The text of token ids.
    pub fn decode(&self, ids: &[u32]) -> Result<String> {
        self.tokenizer.decode(ids, false).map_err(|e| Error::Model(e.to_string()))
    }
}

/// Qwen2's chat template, system and user turns, then the assistant's turn opened.
pub(crate) fn chat_text(prompt: &Prompt) -> String {
    format!(
        "<|im_start|>system\n{}<|im_end|>\n<|im_start|>user\n{}<|im_end|>\n<|im_start|>assistant\n",
        prompt.system, prompt.user
    )
}

impl Generator for QwenGguf {
    fn name(&self) -> &str {
        &self.name
    }

    fn generate(&self, prompt: &Prompt) -> Result<Generation> {
        let started = Instant::now();
        let input = self.encode(&chat_text(prompt))?;
        let err = |e: candle_core::Error| Error::Model(e.to_string());
        let mut model = self.model.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        // The whole prompt in one pass: candle's causal mask covers one pass, not a cache.
        let x = Tensor::new(input.as_slice(), &Device::Cpu)
            .and_then(|t| t.unsqueeze(0))
            .map_err(err)?;
        let mut logits = Some(model.forward(&x, 0).map_err(err)?);
        let mut out: Vec<u32> = Vec::new();
        let mut pos = input.len();
        while let Some(l) = logits.take() {
            let l = l.squeeze(0).map_err(err)?;
            let recent = &out[out.len().saturating_sub(REPEAT_WINDOW)..];
            let l = candle_transformers::utils::apply_repeat_penalty(&l, REPEAT_PENALTY, recent)
                .map_err(err)?;
            let next = l.argmax(0).and_then(|t| t.to_scalar::<u32>()).map_err(err)?;
            if self.stop.contains(&next) || out.len() >= prompt.max_tokens {
                break;
            }
            out.push(next);
            let x = Tensor::new(&[next], &Device::Cpu).and_then(|t| t.unsqueeze(0)).map_err(err)?;
            logits = Some(model.forward(&x, pos).map_err(err)?);
            pos += 1;
        }
        let text = self.tokenizer.decode(&out, true).map_err(|e| Error::Model(e.to_string()))?;
        Ok(Generation {
            text,
            prompt_tokens: input.len(),
            completion_tokens: out.len(),
            seconds: started.elapsed().as_secs_f64(),
            cached: false,
        })
    }
}
