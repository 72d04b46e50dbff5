//! The byte-level BPE tokenizer a Qwen2 GGUF file carries in its metadata, rebuilt as the
//! `tokenizer.json` the model was released with (GGUF files have no tokenizer.json).

use candle_core::quantized::gguf_file::{Content, Value};
use serde_json::{Value as Json, json};
use tokenizers::Tokenizer;

use crate::{Error, Result};

/// Qwen2's pre-tokenisation pattern (from its tokenizer.json).
const QWEN2_SPLIT: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// GGUF token types: control and user-defined tokens are matched whole, never split.
const CONTROL: i32 = 3;
const USER_DEFINED: i32 = 4;

fn strings(v: &Value, key: &str, path: &str) -> Result<Vec<String>> {
    let bad = || Error::ModelFile {
        path: path.to_string(),
        message: format!("`{key}` is not a list of strings"),
    };
    v.to_vec()
        .map_err(|_| bad())?
        .iter()
        .map(|s| s.to_string().cloned().map_err(|_| bad()))
        .collect()
}

/// The tokenizer of a GGUF file whose `tokenizer.ggml.model` is `gpt2` (byte-level BPE).
pub(crate) fn from_gguf(content: &Content, path: &str) -> Result<Tokenizer> {
    let meta = |key: &str| {
        content.metadata.get(key).ok_or_else(|| Error::ModelFile {
            path: path.to_string(),
            message: format!("no `{key}` in the GGUF metadata"),
        })
    };
    let model =
        meta("tokenizer.ggml.model")?.to_string().map_err(|e| Error::Model(e.to_string()))?;
    if model != "gpt2" {
        return Err(Error::ModelFile {
            path: path.to_string(),
            message: format!(
                "tokenizer `{model}`; only byte-level BPE (gpt2) GGUF tokenizers are supported"
            ),
        });
    }
    let tokens = strings(meta("tokenizer.ggml.tokens")?, "tokenizer.ggml.tokens", path)?;
    let merges = strings(meta("tokenizer.ggml.merges")?, "tokenizer.ggml.merges", path)?;
    let types: Vec<i32> = match content.metadata.get("tokenizer.ggml.token_type") {
        Some(v) => v
            .to_vec()
            .map_err(|e| Error::Model(e.to_string()))?
            .iter()
            .map(|t| t.to_i32().unwrap_or(1))
            .collect(),
        None => Vec::new(),
    };
    let vocab: serde_json::Map<String, Json> =
        tokens.iter().enumerate().map(|(i, t)| (t.clone(), json!(i))).collect();
    let added: Vec<Json> = tokens
        .iter()
        .enumerate()
        .filter(|(i, _)| matches!(types.get(*i), Some(&CONTROL | &USER_DEFINED)))
        .map(|(i, t)| {
            json!({"id": i, "content": t, "single_word": false, "lstrip": false, "rstrip": false,
                   "normalized": false, "special": types.get(i) == Some(&CONTROL)})
        })
        .collect();
    let spec = json!({
        "version": "1.0",
        "truncation": null,
        "padding": null,
        "added_tokens": added,
        "normalizer": {"type": "NFC"},
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": QWEN2_SPLIT}, "behavior": "Isolated", "invert": false},
            {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false}
        ]},
        "post_processor": null,
        "decoder": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false},
        "model": {"type": "BPE", "dropout": null, "unk_token": null, "continuing_subword_prefix": "",
                  "end_of_word_suffix": "", "fuse_unk": false, "byte_fallback": false,
                  "ignore_merges": false, "vocab": vocab, "merges": merges}
    });
    spec.to_string().parse::<Tokenizer>().map_err(|e| Error::ModelFile {
        path: path.to_string(),
        message: format!("the GGUF tokenizer could not be rebuilt: {e}"),
    })
}
