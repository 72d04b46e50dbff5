//! A stored document as every front end shows it (`ckeep show --json`, `GET /documents/{id}`,
//! MCP's `show`, Python's `Store.show` and `Store.chunks`): what it is, and its whole text,
//! chosen spans of it, or its chunks, each span with where it came from in the source file.

use ckeep_core::{Location, SourceMap, Span};
use ckeep_store::{StoreRead, StoredChunk};
use serde::Serialize;

use crate::engine::Searcher;
use crate::error::{Error, Result};

/// Which part of a document to show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DocumentPart {
    /// The whole stored text.
    Text,
    /// These byte spans of it (each must lie inside the text at character boundaries).
    Spans(Vec<Span>),
    /// Its chunks, with their text.
    Chunks,
}

/// A stored document: what it is, and the part of it asked for.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct DocumentView {
    /// Its id.
    pub doc_id: String,
    /// Its title.
    pub title: String,
    /// Its metadata (`null` when it has none).
    pub metadata: serde_json::Value,
    /// Where it was loaded from.
    pub source: String,
    /// The BLAKE3 hash of its content, in hex.
    pub hash: String,
    /// Bytes of text.
    pub bytes: usize,
    /// Chunks stored.
    pub chunk_count: u64,
    /// The whole text (when neither spans nor chunks were asked for).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// The spans asked for, with their text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spans: Option<Vec<SpanText>>,
    /// The chunks, with their text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chunks: Option<Vec<ChunkView>>,
}

/// A span of a document and its text.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SpanText {
    /// The byte span.
    pub span: Span,
    /// Its text.
    pub text: String,
    /// Where it came from in the source file (PDF, HTML, EPUB, DOCX).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub location: Option<Location>,
}

/// A stored chunk and its text.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ChunkView {
    /// The chunk: id, span, place in the tree, headings.
    #[serde(flatten)]
    pub chunk: StoredChunk,
    /// Its text.
    pub text: String,
    /// Where it came from in the source file (PDF, HTML, EPUB, DOCX).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub location: Option<Location>,
}

impl<S: StoreRead> Searcher<'_, S> {
    /// Document `id` with `part` of it; a document that is not there, or a span outside its
    /// text, is the caller's mistake.
    pub fn view(&self, id: &str, part: DocumentPart) -> Result<DocumentView> {
        let doc = self.document(id)?;
        let text = &doc.document.text;
        let map = SourceMap::of(&doc.document.metadata);
        let locate = |span: Span| map.as_ref().map(|m| m.locate(span));
        let mut view = DocumentView {
            doc_id: doc.document.id.clone(),
            title: doc.document.title.clone(),
            metadata: doc.document.metadata.clone(),
            source: doc.document.source.clone(),
            hash: doc.hash.clone(),
            bytes: text.len(),
            chunk_count: doc.chunks,
            text: None,
            spans: None,
            chunks: None,
        };
        match part {
            DocumentPart::Text => view.text = Some(text.clone()),
            DocumentPart::Chunks => {
                let chunks = self.store().chunks_of(id)?.into_iter().map(|c| ChunkView {
                    text: c.chunk.span.slice(text).to_string(),
                    location: locate(c.chunk.span),
                    chunk: c,
                });
                view.chunks = Some(chunks.collect());
            }
            DocumentPart::Spans(spans) => {
                let mut out = Vec::with_capacity(spans.len());
                for s in spans {
                    let inside = s.start <= s.end
                        && s.end <= text.len()
                        && text.is_char_boundary(s.start)
                        && text.is_char_boundary(s.end);
                    if !inside {
                        return Err(Error::Invalid(format!(
                            "span {}-{} is not inside the {}-byte text at character boundaries",
                            s.start,
                            s.end,
                            text.len()
                        )));
                    }
                    out.push(SpanText {
                        span: s,
                        text: s.slice(text).to_string(),
                        location: locate(s),
                    });
                }
                view.spans = Some(out);
            }
        }
        Ok(view)
    }
}
