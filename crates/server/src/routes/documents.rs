//! Documents: add or replace (one or many), get (whole text, spans or chunks), list, delete.

use std::sync::Arc;

use axum::Json;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use ckeep_core::{Document, Span};
use ckeep_store::{StoreRead, StoreWrite};
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
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct NewDocument {
    pub(crate) id: String,
    pub(crate) text: String,
    #[serde(default)]
    pub(crate) title: String,
    #[serde(default)]
    pub(crate) metadata: Option<serde_json::Map<String, serde_json::Value>>,
    #[serde(default)]
    pub(crate) source: Option<String>,
}

/// `POST /documents`: several documents and the chunker (which must be the store's once it
/// has one).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Batch {
    documents: Vec<NewDocument>,
    #[serde(default)]
    chunker: Option<String>,
}

/// `PUT /documents/{id}`: one document; the id comes from the path.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PutBody {
    text: String,
    #[serde(default)]
    title: String,
    #[serde(default)]
    metadata: Option<serde_json::Map<String, serde_json::Value>>,
    #[serde(default)]
    source: Option<String>,
    #[serde(default)]
    chunker: Option<String>,
}

#[derive(Serialize)]
struct AddResponse {
    ids: Vec<String>,
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
#[derive(Debug, Deserialize)]
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
) -> Result<Json<serde_json::Value>, ApiError> {
    let id = doc_id(id)?;
    let Query(options) = options.map_err(|e| ApiError::invalid(e.body_text()))?;
    let spans = options.spans.as_deref().map(parse_spans).transpose()?;
    read_document(&state, id, options.chunks, spans).await.map(Json)
}

/// A stored document described, with its whole text, chosen spans of it (each checked to lie
/// inside the text at character boundaries), or its chunks; for every front end.
pub(crate) async fn read_document(
    state: &AppState,
    id: String,
    with_chunks: bool,
    spans: Option<Vec<Span>>,
) -> Result<serde_json::Value, ApiError> {
    let (doc, chunks) = state
        .workers
        .read(move |e| {
            // One snapshot, so the chunks belong to the text returned.
            let searcher = e.searcher()?;
            let doc = searcher.document(&id)?;
            let chunks = if with_chunks { Some(searcher.store().chunks_of(&id)?) } else { None };
            Ok((doc, chunks))
        })
        .await?;
    let text = &doc.document.text;
    let map = ckeep_core::SourceMap::of(&doc.document.metadata);
    let located = |mut v: serde_json::Value, span: Span| {
        if let Some(m) = &map {
            v["location"] = serde_json::to_value(m.locate(span)).unwrap_or_default();
        }
        v
    };
    let mut value = doc.describe();
    if let Some(chunks) = chunks {
        value["chunks"] = chunks
            .iter()
            .map(|c| {
                let mut v = serde_json::to_value(c).unwrap_or_default();
                v["text"] = c.chunk.span.slice(text).into();
                located(v, c.chunk.span)
            })
            .collect();
    } else if let Some(spans) = spans {
        let mut out = Vec::with_capacity(spans.len());
        for s in spans {
            if s.end > text.len()
                || !text.is_char_boundary(s.start)
                || !text.is_char_boundary(s.end)
            {
                return Err(ApiError::invalid(format!(
                    "span {}-{} is not inside the {}-byte text at character boundaries",
                    s.start,
                    s.end,
                    text.len()
                )));
            }
            out.push(located(serde_json::json!({"span": s, "text": s.slice(text)}), s));
        }
        value["spans"] = out.into();
    } else {
        value["text"] = text.as_str().into();
    }
    Ok(value)
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
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ListOptions {
    #[serde(default)]
    offset: usize,
    #[serde(default = "default_limit")]
    limit: usize,
    /// Ids after this one (the `next` of the previous page): a cursor that stays cheap however
    /// deep the page, and stable while documents are added before it.
    after: Option<String>,
}

fn default_limit() -> usize {
    1000
}

/// `GET /documents`: ids in byte order, a page at a time, read from the store page by page.
pub(crate) async fn list(
    State(state): State<Arc<AppState>>,
    options: Result<Query<ListOptions>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<serde_json::Value>, ApiError> {
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
    Ok(Json(serde_json::json!({
        "total": total,
        "offset": offset,
        "after": options.after,
        "ids": page,
        "next": next,
    })))
}

/// `DELETE /documents/{id}`: 204 when it was there, 404 when not.
pub(crate) async fn delete(
    State(state): State<Arc<AppState>>,
    id: Result<Path<String>, PathRejection>,
) -> Result<StatusCode, ApiError> {
    let id = doc_id(id)?;
    let missing = ckeep_engine::Error::DocumentNotFound(id.clone());
    let removed = state.workers.write(move |e| Ok(e.store_mut().remove(&[id])?)).await?;
    if removed == 0 {
        return Err(missing.into());
    }
    state.wrote();
    Ok(StatusCode::NO_CONTENT)
}
