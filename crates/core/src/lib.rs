//! Context Keeper's shared vocabulary.
//!
//! # Brief overview
//! A [`Document`] is kept whole; its text is what every [`Span`] points into. A chunker turns a
//! document into [`Chunk`]s (byte spans with an ordinal, a depth in the chunk tree and a parent);
//! a store gives each stored chunk a [`ChunkId`]; retrieval returns [`ChunkHit`]s.
//!
//! This crate has no heavy dependencies so every other crate can use it.
//!
//! ```
//! use ckeep_core::{Document, Span};
//! let doc = Document::new("a", "Title", "Hello world.");
//! let span = Span::new(0, 5);
//! assert_eq!(span.slice(&doc.text), "Hello");
//! ```

pub mod script;
pub mod source_map;

pub use source_map::{Location, SOURCE_MAP_KEY, SourceMap};

use std::fmt;
use std::ops::Range;

use serde::{Deserialize, Serialize};

/// A half-open byte range `[start, end)` into a document's stored text.
///
/// Spans are the currency of provenance: a chunk, a hit or an expanded context is always a set of
/// spans into the text that the store keeps, so citations can be checked byte for byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(into = "[usize; 2]", from = "[usize; 2]")]
pub struct Span {
    /// First byte of the span.
    pub start: usize,
    /// One past the last byte of the span.
    pub end: usize,
}

/// A span as JSON has it: `[start, end]`.
#[cfg(feature = "schema")]
impl schemars::JsonSchema for Span {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Span".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "array",
            "description": "a half-open byte range [start, end) into the document's stored text",
            "items": {"type": "integer", "minimum": 0},
            "minItems": 2,
            "maxItems": 2
        })
    }
}

impl Span {
    /// Builds a span; `start` must not exceed `end`.
    pub fn new(start: usize, end: usize) -> Self {
        debug_assert!(start <= end, "span start {start} after end {end}");
        Self { start, end }
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.end - self.start
    }

    /// Whether the span covers no byte.
    pub fn is_empty(&self) -> bool {
        self.start == self.end
    }

    /// Whether `other` lies inside this span.
    pub fn contains(&self, other: Span) -> bool {
        self.start <= other.start && other.end <= self.end
    }

    /// The text this span covers. Panics if the span is out of bounds or splits a character,
    /// which a chunker never produces (see [`Span::is_valid_in`]).
    pub fn slice<'t>(&self, text: &'t str) -> &'t str {
        &text[self.start..self.end]
    }

    /// Whether the span lies inside `text` and starts and ends on character boundaries.
    pub fn is_valid_in(&self, text: &str) -> bool {
        self.start <= self.end
            && self.end <= text.len()
            && text.is_char_boundary(self.start)
            && text.is_char_boundary(self.end)
    }

    /// The span as a `Range`, for slicing.
    pub fn range(&self) -> Range<usize> {
        self.start..self.end
    }
}

impl From<Span> for [usize; 2] {
    fn from(s: Span) -> Self {
        [s.start, s.end]
    }
}

impl From<[usize; 2]> for Span {
    fn from([start, end]: [usize; 2]) -> Self {
        Self { start, end }
    }
}

impl From<Range<usize>> for Span {
    fn from(r: Range<usize>) -> Self {
        Self::new(r.start, r.end)
    }
}

impl fmt::Display for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}..{}", self.start, self.end)
    }
}

/// A document as Context Keeper keeps it: whole, with normalised UTF-8 text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Document {
    /// The user's identifier (a path for files, the `id`/`_id`/`doc_id` field for JSONL).
    pub id: String,
    /// A human title; may be empty.
    pub title: String,
    /// The stored text; every span of this document points into it.
    pub text: String,
    /// Free-form JSON metadata supplied with the document (an object, or null).
    #[serde(default)]
    pub metadata: serde_json::Value,
    /// Where the document came from (file path, `file.jsonl:LINE`), for messages.
    #[serde(default)]
    pub source: String,
}

impl Document {
    /// A document with no metadata and no source.
    pub fn new(id: impl Into<String>, title: impl Into<String>, text: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            title: title.into(),
            text: text.into(),
            metadata: serde_json::Value::Null,
            source: String::new(),
        }
    }

    /// Hash of everything that is stored about the document (title, text, metadata). Re-adding
    /// a document with the same hash is a no-op; a different hash replaces it.
    pub fn content_hash(&self) -> ContentHash {
        let mut h = blake3::Hasher::new();
        for part in [self.title.as_bytes(), self.text.as_bytes()] {
            h.update(&(part.len() as u64).to_le_bytes());
            h.update(part);
        }
        h.update(self.metadata.to_string().as_bytes());
        ContentHash(*h.finalize().as_bytes())
    }
}

/// A 32-byte BLAKE3 digest of a document's stored content.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ContentHash(pub [u8; 32]);

impl ContentHash {
    /// Lower-case hex form, as stored and shown.
    pub fn to_hex(&self) -> String {
        use fmt::Write;
        self.0.iter().fold(String::with_capacity(64), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
    }
}

/// A chunk as a chunker produces it: a span of one document plus its place in the chunk tree.
///
/// Chunks of one document are numbered by `ordinal` in pre-order (a parent comes before its
/// children, siblings in text order); `parent` is the parent's ordinal. Depth 0 is the top.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Chunk {
    /// Bytes of the document this chunk covers.
    pub span: Span,
    /// Position in the document's pre-order chunk list.
    pub ordinal: u32,
    /// Depth in the chunk tree (0 = top level).
    pub depth: u16,
    /// Ordinal of the parent chunk, if any.
    pub parent: Option<u32>,
    /// Whether the chunk has no children; leaves are what retrieval indexes.
    pub leaf: bool,
    /// Headings above the chunk, outermost first, e.g. `["# Intro", "## Setup"]`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub headings: Vec<String>,
}

impl Chunk {
    /// The heading path joined as `# Chapter > ## Section`.
    pub fn heading_path(&self) -> String {
        self.headings.join(" > ")
    }
}

/// The store's identifier of one stored chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(transparent)]
pub struct ChunkId(pub i64);

impl fmt::Display for ChunkId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// The store's internal key of one stored document (its external id is a string).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct DocKey(pub i64);

/// A scored chunk, as a retriever returns it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ChunkHit {
    /// The chunk.
    pub chunk: ChunkId,
    /// The document the chunk belongs to.
    pub doc: DocKey,
    /// Higher is better; the scale depends on the retriever.
    pub score: f32,
}

/// One entry of a lexical posting list: a chunk that contains a term.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Posting {
    /// The chunk.
    pub chunk: ChunkId,
    /// Its document.
    pub doc: DocKey,
    /// How often the term occurs in the chunk.
    pub tf: u32,
    /// The chunk's length in terms.
    pub len: u32,
}

/// Collection statistics of one lexical field, as BM25 needs them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct LexicalStats {
    /// Number of indexed chunks.
    pub chunks: u64,
    /// Sum of their lengths in terms.
    pub total_len: u64,
}

/// Orders hits best first, breaking ties by chunk id so rankings are deterministic.
pub fn rank_order(a: &ChunkHit, b: &ChunkHit) -> std::cmp::Ordering {
    b.score.total_cmp(&a.score).then(a.chunk.cmp(&b.chunk))
}

/// How a long input a user or client sent is named in an error: its first 80 characters, and
/// `…` when there is more, so a 4 KB spec or a 64 KB filter is not echoed whole.
pub fn opening(input: &str) -> String {
    let start: String = input.chars().take(80).collect();
    if start.len() < input.len() { format!("{start}…") } else { start }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_input_is_named_by_its_opening() {
        assert_eq!(opening("mode=bm25"), "mode=bm25");
        let long = "长".repeat(100);
        assert_eq!(opening(&long), format!("{}…", "长".repeat(80)));
    }

    #[test]
    fn span_validity_respects_char_boundaries() {
        let text = "héllo";
        assert!(Span::new(0, 1).is_valid_in(text));
        assert!(!Span::new(0, 2).is_valid_in(text), "splits the two-byte é");
        assert!(Span::new(0, 3).is_valid_in(text));
        assert!(!Span::new(0, 7).is_valid_in(text), "out of bounds");
    }

    #[test]
    fn span_serialises_as_pair() {
        let s = serde_json::to_string(&Span::new(3, 9)).unwrap();
        assert_eq!(s, "[3,9]");
        assert_eq!(serde_json::from_str::<Span>("[3,9]").unwrap(), Span::new(3, 9));
    }

    #[test]
    fn content_hash_changes_with_any_field() {
        let base = Document::new("x", "t", "body");
        let mut retitled = base.clone();
        assert_eq!(base.content_hash(), retitled.content_hash());
        retitled.title = "t2".into();
        assert_ne!(base.content_hash(), retitled.content_hash());
        let mut tagged = base.clone();
        tagged.metadata = serde_json::json!({"k": 1});
        assert_ne!(base.content_hash(), tagged.content_hash());
        // Length prefixes keep ("ab","c") and ("a","bc") apart.
        let left = Document::new("x", "ab", "c");
        let right = Document::new("x", "a", "bc");
        assert_ne!(left.content_hash(), right.content_hash());
    }

    #[test]
    fn rank_order_breaks_ties_by_id() {
        let mut hits = [
            ChunkHit { chunk: ChunkId(5), doc: DocKey(1), score: 1.0 },
            ChunkHit { chunk: ChunkId(2), doc: DocKey(1), score: 1.0 },
            ChunkHit { chunk: ChunkId(9), doc: DocKey(1), score: 2.0 },
        ];
        hits.sort_by(rank_order);
        let ids: Vec<i64> = hits.iter().map(|h| h.chunk.0).collect();
        assert_eq!(ids, [9, 2, 5]);
    }
}
