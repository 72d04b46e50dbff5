//! An OpenAI-compatible embeddings client (`POST …/v1/embeddings`), for users who run a server:
//! Ollama, TEI, vLLM, llama.cpp or OpenAI itself.

use std::time::Duration;

use serde::Deserialize;
use serde_json::json;

use crate::{EmbedStats, Embedder, Error, ModelInfo, Result};

/// Inputs per request: servers cap batch sizes (OpenAI at 2,048, TEI at 32 by default).
const REQUEST_BATCH: usize = 32;
/// Largest response accepted (a batch of large vectors as JSON text).
const MAX_RESPONSE: u64 = 256 << 20;

/// A client of one embeddings endpoint and model.
#[derive(Debug)]
pub struct HttpEmbedder {
    agent: ureq::Agent,
    url: String,
    model: String,
    key: Option<String>,
    info: ModelInfo,
}

#[derive(Deserialize)]
struct Response {
    data: Vec<Item>,
    #[serde(default)]
    usage: Option<Usage>,
}

#[derive(Deserialize)]
struct Item {
    embedding: Vec<f32>,
    #[serde(default)]
    index: Option<usize>,
}

#[derive(Deserialize)]
struct Usage {
    #[serde(default)]
    prompt_tokens: usize,
}

impl HttpEmbedder {
    /// Connects to `URL[#MODEL]`: a base URL (`http://localhost:11434/v1`) or the full
    /// `/embeddings` endpoint. The API key comes from `CKEEP_API_KEY` or `OPENAI_API_KEY`. One
    /// probe request learns the dimension, so a wrong URL fails here rather than mid-ingest.
    pub fn from_spec(spec: &str) -> Result<Self> {
        let (url, model) = spec.split_once('#').unwrap_or((spec, ""));
        let url = url.trim_end_matches('/');
        let url = if url.ends_with("/embeddings") {
            url.to_string()
        } else {
            format!("{url}/embeddings")
        };
        let key = std::env::var("CKEEP_API_KEY")
            .or_else(|_| std::env::var("OPENAI_API_KEY"))
            .ok()
            .filter(|k| !k.is_empty());
        let config = ureq::Agent::config_builder()
            .timeout_global(Some(Duration::from_mins(2)))
            .http_status_as_error(false)
            .build();
        let fingerprint =
            blake3::hash(format!("{url}#{model}").as_bytes()).to_hex()[..16].to_string();
        let mut me = Self {
            agent: config.into(),
            info: ModelInfo {
                name: if model.is_empty() { url.clone() } else { model.to_string() },
                fingerprint,
                architecture: "openai-http".into(),
                dim: 0,
                max_tokens: None,
                normalized: false,
                query_prefix: String::new(),
                document_prefix: String::new(),
                pair_prefix: String::new(),
                source: url.clone(),
            },
            url,
            model: model.to_string(),
            key,
        };
        let (probe, _) = me.request(&["dimension probe"])?;
        me.info.dim = probe[0].len();
        me.info.normalized =
            (probe[0].iter().map(|x| x * x).sum::<f32>().sqrt() - 1.0).abs() < 1e-3;
        Ok(me)
    }

    fn request(&self, texts: &[&str]) -> Result<(Vec<Vec<f32>>, usize)> {
        let err = |message: String| Error::Server { url: self.url.clone(), message };
        let mut body = json!({ "input": texts, "encoding_format": "float" });
        if !self.model.is_empty() {
            body["model"] = json!(self.model);
        }
        let mut req = self.agent.post(&self.url);
        if let Some(key) = &self.key {
            req = req.header("Authorization", &format!("Bearer {key}"));
        }
        let mut resp = req.send_json(&body).map_err(|e| err(e.to_string()))?;
        let status = resp.status().as_u16();
        if status != 200 {
            let text = resp.body_mut().read_to_string().unwrap_or_default();
            let short: String = text.chars().take(300).collect();
            return Err(err(format!("HTTP {status}: {short}")));
        }
        let parsed: Response = resp
            .body_mut()
            .with_config()
            .limit(MAX_RESPONSE)
            .read_json()
            .map_err(|e| err(format!("not an embeddings response: {e}")))?;
        if parsed.data.len() != texts.len() {
            return Err(err(format!(
                "{} embeddings for {} inputs",
                parsed.data.len(),
                texts.len()
            )));
        }
        let mut out = vec![Vec::new(); texts.len()];
        for (i, item) in parsed.data.into_iter().enumerate() {
            let at = item.index.unwrap_or(i);
            let slot = out.get_mut(at).ok_or_else(|| err(format!("index {at} out of range")))?;
            *slot = item.embedding;
        }
        let dim = out[0].len();
        if dim == 0
            || out.iter().any(|v| v.len() != dim)
            || (self.info.dim > 0 && dim != self.info.dim)
        {
            return Err(err("vectors of different or zero dimensions".into()));
        }
        Ok((out, parsed.usage.map_or(0, |u| u.prompt_tokens)))
    }
}

impl Embedder for HttpEmbedder {
    fn info(&self) -> &ModelInfo {
        &self.info
    }

    /// A server's tokenizer is not at hand.
    fn count_text_tokens(&self, _text: &str) -> Option<usize> {
        None
    }

    fn embed_raw(&self, texts: &[&str]) -> Result<(Vec<Vec<f32>>, EmbedStats)> {
        let mut stats = EmbedStats::default();
        let mut out = Vec::with_capacity(texts.len());
        for batch in texts.chunks(REQUEST_BATCH) {
            let (vectors, tokens) = self.request(batch)?;
            stats.tokens += tokens;
            out.extend(vectors);
        }
        Ok((out, stats))
    }

    fn token_vectors(
        &self,
        _texts: &[&str],
        _kind: crate::InputKind,
    ) -> Result<Vec<crate::TokenVectors>> {
        Err(crate::no_token_vectors(&self.info))
    }
}
