use ckeep_core::{Chunk, ChunkId, DocKey, Document};
use serde::{Deserialize, Serialize};

/// Lower-case hex of a document's content hash.
pub type ContentHashHex = String;

/// What a store was built with. Opening it with something else is an error the engine reports.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Manifest {
    /// Schema version of the store.
    pub schema_version: u32,
    /// Canonical chunker spec, once the first document is added.
    pub chunker: Option<String>,
    /// Embedding model name, once one is used.
    pub model: Option<String>,
    /// Fingerprint of that model (weights, tokenizer, pooling): vectors of two models with the
    /// same fingerprint are interchangeable.
    #[serde(default)]
    pub model_fingerprint: Option<String>,
    /// Where the model was loaded from (a directory or URL), to reopen it without `--model`.
    #[serde(default)]
    pub model_source: Option<String>,
    /// The lexical analyzer's name.
    pub analyzer: Option<String>,
    /// Representations held, by name.
    pub representations: Vec<String>,
    /// Summarizers whose summaries every document gets, by spec.
    #[serde(default)]
    pub summarizers: Vec<String>,
    /// The representation searched when a strategy names none (`contextual:title` for a store
    /// added with `--fields title,text`); `None`: plain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_repr: Option<String>,
    /// How each listed representation's vectors are held in memory for search (`int8`,
    /// `binary`); a representation not listed is held as float32. The stored vectors stay
    /// float32 either way, for rescoring.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub quantize: std::collections::BTreeMap<String, String>,
    /// The strategy searches use when the caller names none (a spec, as `ckeep eval recommend
    /// --apply` wrote it); `None`: the built-in default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_strategy: Option<String>,
    /// Where `default_strategy` came from (the evaluation that chose it), for `stats` and
    /// `--explain`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_strategy_from: Option<String>,
    /// Models whose vectors the store holds beside its own model's, for strategies that fuse
    /// several (`models=A+B`): each stored chunk representation `R` has their vectors under
    /// `R|NAME`. Listed once every document has them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extra_models: Vec<ModelRecord>,
    /// Query adapters learned from the store's documents (`ckeep adapt`), at most one per model:
    /// each maps that model's query vectors before they are searched.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub adapters: Vec<AdapterRecord>,
    /// The `ckeep` version that created the store.
    pub created_by: String,
}

impl Manifest {
    /// The query adapter the store applies to vectors of the model with `fingerprint`, if any.
    pub fn adapter_for(&self, fingerprint: &str) -> Option<&AdapterRecord> {
        self.adapters.iter().find(|a| a.fingerprint == fingerprint)
    }
}

/// A model a store holds vectors of beside its own (see [`Manifest::extra_models`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ModelRecord {
    /// Its name.
    pub name: String,
    /// Its fingerprint (weights, tokenizer, pooling).
    pub fingerprint: String,
    /// Where it was loaded from (a name, directory or URL), to load it again for queries.
    pub source: String,
}

/// A query adapter a store applies (see [`Manifest::adapters`]); its weights are the auxiliary
/// blob `blob` (safetensors).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct AdapterRecord {
    /// The model whose query vectors it maps, by name.
    pub model: String,
    /// That model's fingerprint: the adapter is applied only to vectors of this model.
    pub fingerprint: String,
    /// The auxiliary blob holding its weights; the name changes with the weights, so a cached
    /// copy is never stale.
    pub blob: String,
    /// How it was trained and why it was kept (the guard's figures), for `stats`.
    pub from: String,
}

/// A lexical index entry of one chunk: its distinct terms with counts and its length.
#[derive(Debug, Clone, PartialEq)]
pub struct LexicalEntry {
    /// The field (e.g. `plain`); each field has its own statistics.
    pub field: String,
    /// Ordinal of the chunk in its document.
    pub ordinal: u32,
    /// Distinct terms and their counts.
    pub terms: Vec<(String, u32)>,
    /// Number of terms in the chunk.
    pub len: u32,
}

/// A vector of one chunk under a named representation.
#[derive(Debug, Clone, PartialEq)]
pub struct VectorEntry {
    /// Representation name.
    pub repr: String,
    /// Ordinal of the chunk.
    pub ordinal: u32,
    /// The vector.
    pub vector: Vec<f32>,
}

/// The vectors of one representation as one row-major matrix, for exact scans.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct VectorMatrix {
    /// The chunk of each row.
    pub ids: Vec<ChunkId>,
    /// The document of each row.
    pub docs: Vec<DocKey>,
    /// Columns (0 when empty).
    pub dim: usize,
    /// `ids.len() × dim` values.
    pub data: Vec<f32>,
}

impl VectorMatrix {
    /// Rows.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether there are no rows.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// Row `i`.
    pub fn row(&self, i: usize) -> &[f32] {
        &self.data[i * self.dim..(i + 1) * self.dim]
    }
}

/// Everything about one document, written in one transaction.
#[derive(Debug, Clone, PartialEq)]
pub struct DocumentWrite {
    /// The document, whole.
    pub document: Document,
    /// Its chunk tree in ordinal order.
    pub chunks: Vec<Chunk>,
    /// Lexical entries of (some of) its chunks.
    pub lexical: Vec<LexicalEntry>,
    /// Vectors of its chunks.
    pub vectors: Vec<VectorEntry>,
    /// Summaries `(summarizer, text)`.
    pub summaries: Vec<(String, String)>,
}

impl DocumentWrite {
    /// A document and its chunks, nothing indexed yet.
    pub fn new(document: Document, chunks: Vec<Chunk>) -> Self {
        Self { document, chunks, lexical: Vec::new(), vectors: Vec::new(), summaries: Vec::new() }
    }
}

/// Entries computed for a stored document after it was written (summaries, a new
/// representation's vectors, a new lexical field), added in one transaction. Entries of the same
/// summary names, representations and fields replace the document's old ones.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DerivedWrite {
    /// The document's id.
    pub doc_id: String,
    /// The content hash the entries were computed from: if the stored document has changed
    /// since, the write is skipped for it.
    pub hash: ContentHashHex,
    /// Summaries `(summarizer, text)`.
    pub summaries: Vec<(String, String)>,
    /// Lexical entries.
    pub lexical: Vec<LexicalEntry>,
    /// Vectors (document-level vectors, such as a summary's, belong to the first chunk).
    pub vectors: Vec<VectorEntry>,
}

/// What a document can lack, for [`crate::StoreRead::documents_lacking`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lacking<'a> {
    /// Any vector of this representation.
    Vectors(&'a str),
    /// Any entry of this lexical field.
    Field(&'a str),
    /// This summary.
    Summary(&'a str),
}

/// A stored document with its key and hash.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredDocument {
    /// The store's key.
    pub key: DocKey,
    /// The document as stored.
    pub document: Document,
    /// Hex content hash.
    pub hash: ContentHashHex,
    /// Number of chunks.
    pub chunks: u64,
}

/// A stored chunk: its id, document and place in the tree.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct StoredChunk {
    /// The chunk's id.
    pub id: ChunkId,
    /// The document's key.
    #[serde(skip)]
    pub doc: DocKey,
    /// The document's id.
    pub doc_id: String,
    /// Span, ordinal, depth, parent and headings.
    #[serde(flatten)]
    pub chunk: Chunk,
}

/// Counts and sizes of a store.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct StoreStats {
    /// Documents.
    pub documents: u64,
    /// Chunks, all levels.
    pub chunks: u64,
    /// Leaf chunks.
    pub leaf_chunks: u64,
    /// Bytes of stored document text.
    pub text_bytes: u64,
    /// Per lexical field: `(field, chunks indexed, distinct terms, postings)`.
    pub lexical: Vec<LexicalFieldStats>,
    /// Per representation: `(name, vectors, bytes)`.
    pub representations: Vec<RepresentationStats>,
    /// Size of the store on disk in bytes (0 in memory).
    pub disk_bytes: u64,
}

/// Size of one lexical field.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct LexicalFieldStats {
    /// Field name.
    pub field: String,
    /// Chunks indexed.
    pub chunks: u64,
    /// Distinct terms.
    pub terms: u64,
    /// Postings.
    pub postings: u64,
}

/// Size of one representation.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct RepresentationStats {
    /// Name.
    pub name: String,
    /// Number of vectors.
    pub vectors: u64,
    /// Bytes of vector data.
    pub bytes: u64,
}

/// The result of [`crate::StoreRead::check`].
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct CheckReport {
    /// Documents checked.
    pub documents: u64,
    /// Chunks checked.
    pub chunks: u64,
    /// Problems found; empty when the store is healthy.
    pub problems: Vec<String>,
}

impl CheckReport {
    /// Whether nothing is wrong.
    pub fn is_ok(&self) -> bool {
        self.problems.is_empty()
    }
}
