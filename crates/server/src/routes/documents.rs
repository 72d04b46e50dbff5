//! Documents: add or replace (one or many), get (whole text, spans or chunks), list, delete.

use std::sync::Arc;

use axum::Json;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use ckeep_core::{Document, Span};
use ckeep_engine::{DocumentPart, DocumentView};
use ckeep_store::StoreRead;
use ckeep_text::ChunkerSpec;
use serde::{Deserialize, Serialize};

use crate::AppState;
use crate::error::{ApiError, ErrorCode};
use crate::json::JsonBody;

/// The document id from the path, or a JSON error when it does not decode (e.g. `%FF`).
fn doc_id(path: Result<Path<String>, PathRejection>) -> Result<String, ApiError> {
    path.map(|Path(id)| id)
        .map_err(|e| ApiError::invalid(format!("the document id: {}", e.body_text())))
}

/// A parsed body of the wrong shape is the caller's mistake (422).
fn from_value<T: serde::de::DeserializeOwned>(v: serde_json::Value) -> Result<T, ApiError> {
    serde_json::from_value(v).map_err(|e| ApiError::new(ErrorCode::InvalidRequest, e.to_string()))
}

/// Longest document id, in bytes.
const MAX_ID_BYTES: usize = 1024;

/// Most ids one listing returns.
const MAX_LIST: usize = 10_000;

/// A document as clients send it.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct NewDocument {
    /// Its id (1 to 1024 bytes, no control characters); a stored document of that id is
    /// replaced.
    pub(crate) id: String,
    /// Its text, stored whole.
    pub(crate) text: String,
    /// Its title.
    #[serde(default)]
    pub(crate) title: String,
    /// Metadata that filters can select on.
    #[serde(default)]
    pub(crate) metadata: Option<serde_json::Map<String, serde_json::Value>>,
    /// Where it came from (default `http`).
    #[serde(default)]
    pub(crate) source: Option<String>,
}

/// What `POST /documents` takes: one document object, or several with the chunker. The
/// handler tells them apart itself (for errors that name the field); this is their schema.
#[derive(schemars::JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)] // a description: the body is read by `add`
pub(crate) enum AddBody {
    /// Several documents.
    Batch(Batch),
    /// One document, with the chunker beside its fields.
    One {
        #[serde(flatten)]
        document: NewDocument,
        /// Must be the store's once it has one.
        #[serde(default)]
        chunker: Option<String>,
    },
}

/// `POST /documents`: several documents and the chunker (which must be the store's once it
/// has one).
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Batch {
    /// The documents, at most the server's `--max-documents`.
    documents: Vec<NewDocument>,
    /// The chunker; it must be the store's once the store has one.
    #[serde(default)]
    chunker: Option<String>,
}

/// `PUT /documents/{id}`: one document; the id comes from the path.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct PutBody {
    /// Its text, stored whole.
    text: String,
    /// Its title.
    #[serde(default)]
    title: String,
    /// Metadata that filters can select on.
    #[serde(default)]
    metadata: Option<serde_json::Map<String, serde_json::Value>>,
    /// Where it came from (default `http`).
    #[serde(default)]
    source: Option<String>,
    /// The chunker; it must be the store's once the store has one.
    #[serde(default)]
    chunker: Option<String>,
}

#[derive(Serialize, schemars::JsonSchema)]
/// What an add did: the documents' ids, the chunker, and the ingest's counts.
pub(crate) struct AddResponse {
    /// The ids of the documents sent.
    ids: Vec<String>,
    /// The chunker they were cut with.
    chunker: String,
    #[serde(flatten)]
    report: ckeep_engine::IngestReport,
}

impl NewDocument {
    pub(crate) fn into_document(self, index: usize) -> Result<Document, ApiError> {
        let at = |m: &str| ApiError::invalid(format!("documents[{index}]: {m}"));
        if self.id.is_empty() || self.id.len() > MAX_ID_BYTES {
            return Err(at(&format!("`id` must have 1 to {MAX_ID_BYTES} bytes")));
        }
        if self.id.chars().any(char::is_control) {
            return Err(at("`id` must not contain control characters"));
        }
        if self.text.trim().is_empty() {
            return Err(at(&format!("document `{}` has empty text", self.id)));
        }
        let mut doc = Document::new(self.id, self.title, self.text);
        doc.metadata = self.metadata.map_or(serde_json::Value::Null, serde_json::Value::Object);
        doc.source = self.source.unwrap_or_else(|| "http".to_string());
        Ok(doc)
    }
}

/// `POST /documents`: `{"documents": [...], "chunker"?}` or a single document object.
pub(crate) async fn add(
    State(state): State<Arc<AppState>>,
    JsonBody(body): JsonBody<serde_json::Value>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let batch: Batch = if body.get("documents").is_some() {
        from_value(body)?
    } else if body.is_object() {
        let mut body = body;
        let chunker = body
            .as_object_mut()
            .and_then(|o| o.remove("chunker"))
            .map(|c| c.as_str().map(str::to_string).ok_or(c));
        let chunker = match chunker {
            Some(Err(_)) => return Err(ApiError::invalid("`chunker` must be a string")),
            Some(Ok(c)) => Some(c),
            None => None,
        };
        Batch { documents: vec![from_value(body)?], chunker }
    } else {
        return Err(ApiError::new(
            ErrorCode::InvalidRequest,
            "expected an object: a document, or {\"documents\": [...]}",
        ));
    };
    let max = state.config.limits.max_documents;
    if batch.documents.is_empty() {
        return Err(ApiError::invalid("`documents` is empty"));
    }
    if batch.documents.len() > max {
        return Err(ApiError::invalid(format!(
            "{} documents in one request; the limit is {max}",
            batch.documents.len()
        )));
    }
    let mut seen = std::collections::HashSet::new();
    let docs = batch
        .documents
        .into_iter()
        .enumerate()
        .map(|(i, d)| d.into_document(i))
        .collect::<Result<Vec<_>, _>>()?;
    if let Some(d) = docs.iter().find(|d| !seen.insert(d.id.clone())) {
        return Err(ApiError::invalid(format!("document id `{}` appears twice", d.id)));
    }
    ingest(&state, docs, batch.chunker).await.map(Json)
}

/// `PUT /documents/{id}`.
pub(crate) async fn put(
    State(state): State<Arc<AppState>>,
    id: Result<Path<String>, PathRejection>,
    JsonBody(body): JsonBody<PutBody>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let doc = NewDocument {
        id: doc_id(id)?,
        text: body.text,
        title: body.title,
        metadata: body.metadata,
        source: body.source,
    }
    .into_document(0)?;
    ingest(&state, vec![doc], body.chunker).await.map(Json)
}

/// Chunks, embeds and stores `docs` on the writer: one transaction per batch, acknowledged
/// only once committed. Every front end (HTTP and MCP) adds through here.
pub(crate) async fn ingest(
    state: &AppState,
    docs: Vec<Document>,
    chunker: Option<String>,
) -> Result<serde_json::Value, ApiError> {
    let chunker: Option<ChunkerSpec> = chunker
        .map(|c| c.parse().map_err(|e: ckeep_text::Error| ApiError::invalid(e.to_string())))
        .transpose()?;
    let ids: Vec<String> = docs.iter().map(|d| d.id.clone()).collect();
    let (report, chunker) = state
        .workers
        .write(move |engine| {
            let chunker = engine.searcher()?.chunker_for(chunker.as_ref(), None)?;
            let mut ingest = engine.writer().ingest(&chunker)?;
            for doc in docs {
                ingest.add(doc)?;
            }
            Ok((ingest.finish()?, chunker))
        })
        .await?;
    state.wrote();
    let out = AddResponse { ids, chunker: chunker.to_string(), report };
    serde_json::to_value(out).map_err(|e| ApiError::internal(e.to_string()))
}

/// `GET /documents/{id}` options.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct GetOptions {
    /// List the chunks (with their text) instead of the whole text.
    #[serde(default)]
    chunks: bool,
    /// Only these byte spans: `start-end,start-end`.
    #[serde(default)]
    spans: Option<String>,
}

/// `GET /documents/{id}`: the whole stored text, chosen spans of it, or its chunks.
pub(crate) async fn get(
    State(state): State<Arc<AppState>>,
    id: Result<Path<String>, PathRejection>,
    options: Result<Query<GetOptions>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<DocumentView>, ApiError> {
    let id = doc_id(id)?;
    let Query(options) = options.map_err(|e| ApiError::invalid(e.body_text()))?;
    let spans = options.spans.as_deref().map(parse_spans).transpose()?;
    read_document(&state, id, options.chunks, spans).await.map(Json)
}

/// A stored document with its whole text, chosen spans of it or its chunks, as the engine shows
/// it ([`ckeep_engine::Searcher::view`]); for every front end.
pub(crate) async fn read_document(
    state: &AppState,
    id: String,
    with_chunks: bool,
    spans: Option<Vec<Span>>,
) -> Result<DocumentView, ApiError> {
    let part = match (with_chunks, spans) {
        (true, _) => DocumentPart::Chunks,
        (false, Some(spans)) => DocumentPart::Spans(spans),
        (false, None) => DocumentPart::Text,
    };
    // One snapshot, so the chunks belong to the text returned.
    state.workers.read(move |e| Ok(e.searcher()?.view(&id, part)?)).await
}

fn parse_spans(list: &str) -> Result<Vec<Span>, ApiError> {
    list.split(',')
        .map(|part| {
            let (a, b) = part.split_once('-').unwrap_or((part, ""));
            match (a.trim().parse::<usize>(), b.trim().parse::<usize>()) {
                (Ok(start), Ok(end)) if start <= end => Ok(Span { start, end }),
                _ => Err(ApiError::invalid(format!(
                    "`{part}` is not a span START-END with START <= END"
                ))),
            }
        })
        .collect()
}

/// `GET /documents` options.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ListOptions {
    /// Ids to pass over first (`after` is cheaper for deep pages).
    #[serde(default)]
    offset: usize,
    /// Most ids on the page.
    #[serde(default = "default_limit")]
    #[schemars(range(min = 1, max = 10_000))]
    limit: usize,
    /// Ids after this one (the `next` of the previous page): a cursor that stays cheap however
    /// deep the page, and stable while documents are added before it.
    after: Option<String>,
}

fn default_limit() -> usize {
    1000
}

/// A page of document ids.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub(crate) struct DocumentPage {
    /// Documents in the store.
    total: usize,
    /// The offset asked for.
    offset: usize,
    /// The `after` asked for.
    after: Option<String>,
    /// The ids, in byte order.
    ids: Vec<String>,
    /// The last id of a full page, to pass as `after` for the next; `null` on the last page.
    next: Option<String>,
}

/// `GET /documents`: ids in byte order, a page at a time, read from the store page by page.
pub(crate) async fn list(
    State(state): State<Arc<AppState>>,
    options: Result<Query<ListOptions>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<DocumentPage>, ApiError> {
    let Query(options) = options.map_err(|e| ApiError::invalid(e.body_text()))?;
    if options.limit == 0 || options.limit > MAX_LIST {
        return Err(ApiError::invalid(format!("`limit` must be 1 to {MAX_LIST}")));
    }
    let (offset, limit) = (options.offset, options.limit);
    let after = options.after.clone();
    let (total, page) = state
        .workers
        .read(move |e| {
            let store = e.store();
            let _snapshot = ckeep_store::ReadSnapshot::begin(store)?;
            Ok((store.document_count()?, store.document_ids_page(after.as_deref(), offset, limit)?))
        })
        .await?;
    let next = (page.len() == limit).then(|| page.last().cloned()).flatten();
    Ok(Json(DocumentPage { total, offset, after: options.after, ids: page, next }))
}

/// `DELETE /documents/{id}`: 204 when it was there, 404 when not.
pub(crate) async fn delete(
    State(state): State<Arc<AppState>>,
    id: Result<Path<String>, PathRejection>,
) -> Result<StatusCode, ApiError> {
    let request = ckeep_engine::RemoveRequest::new([doc_id(id)?])?;
    state.workers.write(move |e| Ok(e.writer().remove(&request)?)).await?;
    state.wrote();
    Ok(StatusCode::NO_CONTENT)
}
