//! An OpenAI-compatible chat-completions client (`POST …/v1/chat/completions`): llama.cpp's
//! server, Ollama, vLLM, or OpenAI itself.

use std::time::{Duration, Instant};

use ckeep_models::openai::{OpenAiClient, ServerError};
use serde::Deserialize;
use serde_json::json;

use crate::{Error, Generation, Generator, Prompt, Result};

/// Largest response accepted.
const MAX_RESPONSE: u64 = 4 << 20;

/// A client of one chat endpoint and model.
#[derive(Debug)]
pub struct ChatClient {
    client: OpenAiClient,
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
        let client = OpenAiClient::from_spec(spec, "chat/completions", Duration::from_mins(5))
            .map_err(server_error)?;
        Ok(Self { client })
    }
}

fn server_error(e: ServerError) -> Error {
    Error::Server { url: e.url, message: e.message }
}

impl Generator for ChatClient {
    fn name(&self) -> &str {
        let model = self.client.model();
        if model.is_empty() { self.client.url() } else { model }
    }

    fn generate(&self, prompt: &Prompt) -> Result<Generation> {
        let started = Instant::now();
        let body = json!({
            "messages": [
                {"role": "system", "content": prompt.system},
                {"role": "user", "content": prompt.user},
            ],
            "max_tokens": prompt.max_tokens,
            "temperature": 0,
        });
        let parsed: Response = self
            .client
            .post(body, MAX_RESPONSE, "a chat-completions response")
            .map_err(server_error)?;
        let text =
            parsed.choices.into_iter().next().and_then(|c| c.message.content).ok_or_else(|| {
                server_error(self.client.error("the response has no message content"))
            })?;
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
