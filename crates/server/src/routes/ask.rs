//! `POST /ask`: an answer with located citations, whole or streamed as server-sent events.

use std::convert::Infallible;
use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use ckeep_engine::{Answer, Answerer, AskRequest, SearchRequest, StrategyFields};
use serde::Deserialize;
use tokio::sync::mpsc;
use tokio_stream::wrappers::UnboundedReceiverStream;

use super::query::RequestFilter;
use crate::AppState;
use crate::error::{ApiError, ErrorCode};
use crate::json::JsonBody;

/// `POST /ask`: every option of `ckeep ask`. `strategy` is a whole spec; the fields beside it
/// override its parts, as in `/search`.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
pub(crate) struct AskBody {
    /// The question (at most the server's `--max-query-bytes`).
    pub(crate) question: String,
    #[serde(flatten)]
    pub(crate) strategy: StrategyFields,
    /// Only documents whose metadata passes.
    #[serde(default)]
    pub(crate) filter: Option<RequestFilter>,
    /// Tokens of context the answer is written from (default 1,500).
    #[serde(default)]
    pub(crate) context_tokens: Option<usize>,
    /// Leave out the sentences without a located citation.
    #[serde(default)]
    pub(crate) strict: bool,
    /// Longest answer, in tokens (default 256).
    #[serde(default)]
    pub(crate) max_tokens: Option<usize>,
    /// Answer with the context's best sentences, without the language model.
    #[serde(default)]
    pub(crate) extractive: bool,
    /// Stream the answer as server-sent events: `token` events (`{"text"}`) as it is written,
    /// then one `answer` event (the whole answer) or one `error` event.
    #[serde(default)]
    pub(crate) stream: bool,
    /// Fields no one above took: refused.
    #[serde(flatten)]
    #[schemars(skip)]
    pub(crate) unknown: std::collections::BTreeMap<String, serde_json::Value>,
}

impl AskBody {
    /// The engine's request; the engine applies the defaults and checks the bounds.
    pub(crate) fn into_request(self) -> Result<(AskRequest, bool), ApiError> {
        if let Some(name) = self.unknown.keys().next() {
            return Err(ApiError::new(
                ErrorCode::InvalidRequest,
                format!("unknown field `{name}` in the request body"),
            ));
        }
        let filter = self.filter.map(RequestFilter::into_filter).transpose()?;
        let search =
            SearchRequest::from_fields(self.question.clone(), &self.strategy)?.with_filter(filter);
        let request = AskRequest::new(self.question).with_search(search).with_options(
            self.context_tokens,
            self.max_tokens,
            self.strict,
        )?;
        Ok((request, self.extractive))
    }
}

/// `POST /ask`.
pub(crate) async fn ask(
    State(state): State<Arc<AppState>>,
    JsonBody(body): JsonBody<AskBody>,
) -> Result<Response, ApiError> {
    let stream = body.stream;
    let (request, extractive) = body.into_request()?;
    if !stream {
        return Ok(Json(run_ask(&state, request, extractive).await?).into_response());
    }
    let (tx, rx) = mpsc::unbounded_channel::<Event>();
    let state = Arc::clone(&state);
    tokio::spawn(async move {
        let sink = Tokens(tx.clone());
        let last = match answer_with(&state, request, extractive, sink).await {
            Ok(answer) => Event::default().event("answer").json_data(&answer),
            Err(e) => Event::default().event("error").json_data(e.client_body()),
        };
        if let Ok(event) = last {
            let _ = tx.send(event);
        }
    });
    let events =
        tokio_stream::StreamExt::map(UnboundedReceiverStream::new(rx), Ok::<_, Infallible>);
    Ok(Sse::new(events).keep_alive(KeepAlive::default()).into_response())
}

/// The answer to `request` on a reader, for every front end (HTTP and MCP).
pub(crate) async fn run_ask(
    state: &AppState,
    request: AskRequest,
    extractive: bool,
) -> Result<Answer, ApiError> {
    answer_with(state, request, extractive, |_: &str| {}).await
}

async fn answer_with<K: ckeep_engine::Sink + Send + 'static>(
    state: &AppState,
    request: AskRequest,
    extractive: bool,
    mut sink: K,
) -> Result<Answer, ApiError> {
    let answerer =
        if extractive { Arc::new(Answerer::Extractive) } else { state.answerer().await? };
    // Writing an answer takes seconds, not the read timeout's search milliseconds.
    state.workers.read_untimed(move |e| Ok(request.answer(e, &answerer, &mut sink)?)).await
}

/// The model's pieces as `token` events; a client gone cancels the generation.
struct Tokens(mpsc::UnboundedSender<Event>);

impl ckeep_engine::Sink for Tokens {
    fn text(&mut self, piece: &str) {
        if let Ok(event) =
            Event::default().event("token").json_data(serde_json::json!({"text": piece}))
        {
            let _ = self.0.send(event);
        }
    }

    fn cancelled(&self) -> bool {
        self.0.is_closed()
    }
}
