//! Test support shared by every crate's tests and benchmarks, so a rule about the test
//! environment, a fixture or a model's loading is written once: where the evaluation data is,
//! the in-repo corpus, SciFact's first abstracts, and (feature `embed`) real models loaded once
//! per test process.

#![allow(clippy::missing_panics_doc)] // fixtures panic on a broken test environment, by design

pub mod llama_server;
pub mod pdf;

use std::path::{Path, PathBuf};

use ckeep_core::Document;
use serde_json::Value;

/// The evaluation data (`../shared/data` beside the checkout, or `$CKEEP_DATA`).
pub fn data_dir() -> PathBuf {
    std::env::var_os("CKEEP_DATA").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data"),
        PathBuf::from,
    )
}

/// The models' reference files (reference vectors, format readers): the `models` folder beside
/// the evaluation data, so `$CKEEP_DATA` moves both.
pub fn shared_models_dir() -> PathBuf {
    data_dir().join("../models")
}

/// The in-repo corpus: 12 short documents in English, Chinese and Japanese with metadata
/// (`testdata/corpus.jsonl`), for the fast tier.
pub fn corpus_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/corpus.jsonl")
}

/// The in-repo corpus as JSON objects (`id`, `title`, `text`, `metadata`), as the HTTP API and
/// `ckeep add` take them.
pub fn corpus_values() -> Vec<Value> {
    let text = std::fs::read_to_string(corpus_path()).expect("testdata/corpus.jsonl");
    text.lines().map(|line| serde_json::from_str(line).expect("a JSON line")).collect()
}

/// The in-repo corpus as documents.
pub fn corpus() -> Vec<Document> {
    corpus_values()
        .into_iter()
        .map(|v| {
            let text = |k: &str| v[k].as_str().unwrap_or_default().to_string();
            let mut d = Document::new(text("id"), text("title"), text("text"));
            d.metadata = v["metadata"].clone();
            d
        })
        .collect()
}

/// The first `n` abstracts of BEIR SciFact's corpus, as its JSON lines have them (`_id`,
/// `title`, `text`).
pub fn scifact_values(n: usize) -> Vec<Value> {
    let path = data_dir().join("beir_scifact/corpus.jsonl");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (set CKEEP_DATA)", path.display()));
    text.lines().take(n).map(|line| serde_json::from_str(line).expect("a JSON line")).collect()
}

/// A real model by name, loaded once per test process (installed by `scripts/test.sh`).
#[cfg(feature = "embed")]
pub fn model(name: &str) -> std::sync::Arc<dyn ckeep_embed::Embedder> {
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex, OnceLock};
    static LOADED: OnceLock<Mutex<HashMap<String, Arc<dyn ckeep_embed::Embedder>>>> =
        OnceLock::new();
    let mut loaded = LOADED
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let model = loaded.entry(name.to_string()).or_insert_with(|| {
        ckeep_embed::load(name).unwrap_or_else(|e| panic!("ckeep model pull {name}: {e}"))
    });
    Arc::clone(model)
}
