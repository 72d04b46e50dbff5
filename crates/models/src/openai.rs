//! The one client of OpenAI-compatible servers (llama.cpp, Ollama, TEI, vLLM, OpenAI itself),
//! shared by the embeddings and chat-completions callers: how a `URL[#MODEL]` spec is read, where
//! the API key comes from, and how a request and its answer are checked, written once.

use std::time::Duration;

use serde::de::DeserializeOwned;

/// What went wrong talking to a server; each caller wraps it in its own error type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerError {
    /// The endpoint.
    pub url: String,
    /// What happened, as the user should read it.
    pub message: String,
}

impl std::fmt::Display for ServerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.url, self.message)
    }
}

impl std::error::Error for ServerError {}

/// A client of one endpoint (`…/embeddings` or `…/chat/completions`) and model.
#[derive(Debug)]
pub struct OpenAiClient {
    agent: ureq::Agent,
    url: String,
    model: String,
    key: Option<String>,
}

impl OpenAiClient {
    /// A client of `URL[#MODEL]`: a base URL (`http://localhost:8080/v1`) or the full endpoint
    /// (`route` is `embeddings` or `chat/completions`). The key comes from `CKEEP_API_KEY`, else
    /// `OPENAI_API_KEY`; non-2xx answers become errors carrying the server's own words.
    pub fn from_spec(spec: &str, route: &str, timeout: Duration) -> Result<Self, ServerError> {
        let (url, model) = spec.split_once('#').unwrap_or((spec, ""));
        let url = url.trim_end_matches('/');
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(ServerError {
                url: url.to_string(),
                message: "not an http:// or https:// URL".into(),
            });
        }
        let url = if url.ends_with(&format!("/{route}")) {
            url.to_string()
        } else {
            format!("{url}/{route}")
        };
        let key = std::env::var("CKEEP_API_KEY")
            .or_else(|_| std::env::var("OPENAI_API_KEY"))
            .ok()
            .filter(|k| !k.is_empty());
        let config = ureq::Agent::config_builder()
            .timeout_connect(Some(Duration::from_secs(10)))
            .timeout_global(Some(timeout))
            .http_status_as_error(false)
            .build();
        Ok(Self { agent: config.into(), url, model: model.to_string(), key })
    }

    /// The endpoint.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The model named after `#` (empty when the server has one).
    pub fn model(&self) -> &str {
        &self.model
    }

    /// An error about this endpoint.
    pub fn error(&self, message: impl Into<String>) -> ServerError {
        ServerError { url: self.url.clone(), message: message.into() }
    }

    /// POSTs `body` (with `"model"` added when one was named) and parses an answer of at most
    /// `limit` bytes; `what` names the expected answer in the error when it does not parse.
    pub fn post<T: DeserializeOwned>(
        &self,
        body: serde_json::Value,
        limit: u64,
        what: &str,
    ) -> Result<T, ServerError> {
        self.send(body)?
            .body_mut()
            .with_config()
            .limit(limit)
            .read_json()
            .map_err(|e| self.error(format!("not {what}: {e}")))
    }

    /// POSTs `body` and passes each line of the answer as it arrives (a server-sent event
    /// stream) to `line`, until it returns `false` or the answer ends.
    pub fn post_lines(
        &self,
        body: serde_json::Value,
        line: &mut dyn FnMut(&str) -> Result<bool, ServerError>,
    ) -> Result<(), ServerError> {
        let resp = self.send(body)?;
        let reader = std::io::BufReader::new(resp.into_body().into_reader());
        for text in std::io::BufRead::lines(reader) {
            let text = text.map_err(|e| self.error(format!("reading the stream: {e}")))?;
            if !line(&text)? {
                break;
            }
        }
        Ok(())
    }

    /// The response to `body`, or the server's error.
    fn send(
        &self,
        mut body: serde_json::Value,
    ) -> Result<ureq::http::Response<ureq::Body>, ServerError> {
        if !self.model.is_empty() {
            body["model"] = serde_json::Value::String(self.model.clone());
        }
        let mut req = self.agent.post(&self.url);
        if let Some(key) = &self.key {
            req = req.header("Authorization", &format!("Bearer {key}"));
        }
        let mut resp = req.send_json(&body).map_err(|e| self.error(e.to_string()))?;
        let status = resp.status().as_u16();
        if !(200..300).contains(&status) {
            let text = resp.body_mut().read_to_string().unwrap_or_default();
            let short: String = text.chars().take(300).collect();
            return Err(self.error(format!("HTTP {status}: {short}")));
        }
        Ok(resp)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spec_names_the_endpoint_and_the_model() {
        let long = Duration::from_secs(1);
        let c = OpenAiClient::from_spec("http://h:1/v1/#m-1", "embeddings", long).unwrap();
        assert_eq!((c.url(), c.model()), ("http://h:1/v1/embeddings", "m-1"));
        let c = OpenAiClient::from_spec("https://h/v1/chat/completions", "chat/completions", long)
            .unwrap();
        assert_eq!((c.url(), c.model()), ("https://h/v1/chat/completions", ""));
        let e = OpenAiClient::from_spec("ftp://h", "embeddings", long).unwrap_err();
        assert!(e.to_string().contains("not an http"), "{e}");
    }
}
