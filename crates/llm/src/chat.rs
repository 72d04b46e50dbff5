//! An OpenAI-compatible chat-completions client (`POST …/v1/chat/completions`): llama.cpp's
//! server, Ollama, vLLM, or OpenAI itself.

use std::time::{Duration, Instant};

use ckeep_models::openai::{OpenAiClient, ServerError};
use serde::Deserialize;
use serde_json::json;

use crate::{Error, Generation, Generator, Prompt, Result, Sink};

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

/// One event of a streamed answer.
#[derive(Deserialize)]
struct Chunk {
    #[serde(default)]
    choices: Vec<ChunkChoice>,
    #[serde(default)]
    usage: Option<Usage>,
}

#[derive(Deserialize)]
struct ChunkChoice {
    #[serde(default)]
    delta: Option<Message>,
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
        let body = request(prompt);
        let parsed: Response = self
            .client
            .post(body, MAX_RESPONSE, "a chat-completions response")
            .map_err(server_error)?;
        let text =
            parsed.choices.into_iter().next().and_then(|c| c.message.content).ok_or_else(|| {
                server_error(self.client.error("the response has no message content"))
            })?;
        let mut text = text;
        if let Some(end) = prompt.one_line.then(|| crate::line_end(text.as_bytes())).flatten() {
            text.truncate(end);
        }
        Ok(finish(text, parsed.usage, 0, started))
    }

    /// The answer as server-sent events (`"stream": true`), passed on as they come; a one-line
    /// answer or a cancelled one closes the stream early (the server stops generating).
    fn stream(&self, prompt: &Prompt, sink: &mut dyn Sink) -> Result<Generation> {
        let started = Instant::now();
        let mut body = request(prompt);
        body["stream"] = json!(true);
        body["stream_options"] = json!({"include_usage": true});
        let mut text = String::new();
        let mut usage = None;
        let mut cancelled = false;
        let mut deltas = 0;
        let mut events = 0;
        self.client
            .post_lines(body, &mut |line| {
                if sink.cancelled() {
                    cancelled = true;
                    return Ok(false);
                }
                let Some(data) = line.strip_prefix("data:").map(str::trim) else { return Ok(true) };
                events += 1;
                if data == "[DONE]" {
                    return Ok(false);
                }
                let chunk: Chunk = serde_json::from_str(data)
                    .map_err(|e| self.client.error(format!("not a chat-completions chunk: {e}")))?;
                usage = chunk.usage.or(usage.take());
                let Some(piece) = chunk.choices.into_iter().next().and_then(|c| c.delta?.content)
                else {
                    return Ok(true);
                };
                deltas += 1;
                let before = text.len();
                text.push_str(&piece);
                if let Some(end) =
                    prompt.one_line.then(|| crate::line_end(text.as_bytes())).flatten()
                {
                    text.truncate(end);
                    sink.text(text.get(before.min(end)..).unwrap_or_default());
                    return Ok(false);
                }
                sink.text(&text[before..]);
                Ok(true)
            })
            .map_err(server_error)?;
        if cancelled {
            return Err(Error::Cancelled);
        }
        // A body with no event at all is not a chat-completions stream (a web page, a proxy's
        // error): an empty answer would hide that.
        if events == 0 {
            return Err(server_error(
                self.client.error("the answer is not a chat-completions event stream"),
            ));
        }
        Ok(finish(text, usage, deltas, started))
    }
}

/// The generation, with the server's token counts (else `pieces` written, none read).
fn finish(text: String, usage: Option<Usage>, pieces: usize, started: Instant) -> Generation {
    let (prompt_tokens, completion_tokens) =
        usage.map_or((0, pieces), |u| (u.prompt_tokens, u.completion_tokens));
    Generation {
        text,
        prompt_tokens,
        completion_tokens,
        seconds: started.elapsed().as_secs_f64(),
        cached: false,
    }
}

/// The chat request for `prompt` (greedy).
fn request(prompt: &Prompt) -> serde_json::Value {
    json!({
        "messages": [
            {"role": "system", "content": prompt.system},
            {"role": "user", "content": prompt.user},
        ],
        "max_tokens": prompt.max_tokens,
        "temperature": 0,
    })
}
