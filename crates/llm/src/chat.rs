//! An OpenAI-compatible chat-completions client (`POST …/v1/chat/completions`): llama.cpp's
//! server, Ollama, vLLM, or OpenAI itself.

use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::json;

use crate::{Error, Generation, Generator, Prompt, Result};

/// Largest response accepted.
const MAX_RESPONSE: u64 = 4 << 20;

/// A client of one chat endpoint and model.
#[derive(Debug)]
pub struct ChatClient {
    agent: ureq::Agent,
    url: String,
    model: String,
    key: Option<String>,
}

#[derive(Deserialize)]
struct Response {
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<Usage>,
}

#[derive(Deserialize)]
struct Choice {
    message: Message,
}

#[derive(Deserialize)]
struct Message {
    #[serde(default)]
    content: Option<String>,
}

#[derive(Deserialize)]
struct Usage {
    #[serde(default)]
    prompt_tokens: usize,
    #[serde(default)]
    completion_tokens: usize,
}

impl ChatClient {
    /// A client of `URL[#MODEL]`: a base URL (`http://localhost:8080/v1`) or the full
    /// `/chat/completions` endpoint. The key comes from `CKEEP_API_KEY` or `OPENAI_API_KEY`.
    pub fn from_spec(spec: &str) -> Result<Self> {
        let (url, model) = spec.split_once('#').unwrap_or((spec, ""));
        let url = url.trim_end_matches('/');
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(Error::Server {
                url: url.to_string(),
                message: "not an http:// or https:// URL".into(),
            });
        }
        let url = if url.ends_with("/chat/completions") {
            url.to_string()
        } else {
            format!("{url}/chat/completions")
        };
        let key = std::env::var("CKEEP_API_KEY")
            .or_else(|_| std::env::var("OPENAI_API_KEY"))
            .ok()
            .filter(|k| !k.is_empty());
        let config = ureq::Agent::config_builder()
            .timeout_global(Some(Duration::from_mins(5)))
            .http_status_as_error(false)
            .build();
        Ok(Self { agent: config.into(), url, model: model.to_string(), key })
    }
}

impl Generator for ChatClient {
    fn name(&self) -> &str {
        if self.model.is_empty() { &self.url } else { &self.model }
    }

    fn generate(&self, prompt: &Prompt) -> Result<Generation> {
        let err = |message: String| Error::Server { url: self.url.clone(), message };
        let started = Instant::now();
        let mut body = json!({
            "messages": [
                {"role": "system", "content": prompt.system},
                {"role": "user", "content": prompt.user},
            ],
            "max_tokens": prompt.max_tokens,
            "temperature": 0,
        });
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
            .map_err(|e| err(format!("not a chat-completions response: {e}")))?;
        let text = parsed
            .choices
            .into_iter()
            .next()
            .and_then(|c| c.message.content)
            .ok_or_else(|| err("the response has no message content".into()))?;
        let (prompt_tokens, completion_tokens) =
            parsed.usage.map_or((0, 0), |u| (u.prompt_tokens, u.completion_tokens));
        Ok(Generation {
            text,
            prompt_tokens,
            completion_tokens,
            seconds: started.elapsed().as_secs_f64(),
            cached: false,
        })
    }
}
