//! An OpenAI-compatible embeddings client (`POST …/v1/embeddings`), for users who run a server:
//! Ollama, TEI, vLLM, llama.cpp or OpenAI itself.

use std::time::Duration;

use ckeep_models::openai::{OpenAiClient, ServerError};
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
    client: OpenAiClient,
    info: ModelInfo,
}

fn server_error(e: ServerError) -> Error {
    Error::Server { url: e.url, message: e.message }
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
        let client = OpenAiClient::from_spec(spec, "embeddings", Duration::from_mins(2))
            .map_err(server_error)?;
        let (url, model) = (client.url().to_string(), client.model().to_string());
        let fingerprint =
            blake3::hash(format!("{url}#{model}").as_bytes()).to_hex()[..16].to_string();
        let mut me = Self {
            info: ModelInfo {
                name: if model.is_empty() { url.clone() } else { model },
                fingerprint,
                architecture: "openai-http".into(),
                dim: 0,
                max_tokens: None,
                normalized: false,
                query_prefix: String::new(),
                document_prefix: String::new(),
                pair_prefix: String::new(),
                source: url,
            },
            client,
        };
        let (probe, _) = me.request(&["dimension probe"])?;
        me.info.dim = probe[0].len();
        me.info.normalized =
            (probe[0].iter().map(|x| x * x).sum::<f32>().sqrt() - 1.0).abs() < 1e-3;
        Ok(me)
    }

    fn request(&self, texts: &[&str]) -> Result<(Vec<Vec<f32>>, usize)> {
        let err = |message: String| server_error(self.client.error(message));
        let body = json!({ "input": texts, "encoding_format": "float" });
        let parsed: Response =
            self.client.post(body, MAX_RESPONSE, "an embeddings response").map_err(server_error)?;
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
