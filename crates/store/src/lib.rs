//! The store: the single source of truth for documents, chunks, hierarchy, lexical statistics,
//! representations (vectors) and the manifest.
//!
//! # Brief overview
//! - [`StoreRead`] / [`StoreWrite`]: the contract every backend satisfies; `contract` (feature
//!   `testing`) is the one test suite each implementation runs.
//! - [`SqliteStore`]: the embedded default — one `SQLite` file in WAL mode, one transaction per
//!   batch of documents, so a crash leaves every document fully present or absent.
//! - [`PgStore`]: PostgreSQL + pgvector for collections that outgrow one machine: the same
//!   tables and semantics, vector search by HNSW inside the database ([`VectorSearch::nearest`]).
//! - [`open`] / [`open_or_create`]: either, by location (a directory or a `postgres://` URL).
//! - [`DocumentWrite`]: everything about one document, written atomically.
//!
//! ```
//! use ckeep_core::{Chunk, Document, Span};
//! use ckeep_store::{DocumentWrite, SqliteStore, StoreRead, StoreWrite};
//!
//! let mut store = SqliteStore::in_memory().unwrap();
//! let doc = Document::new("a", "A", "Hello world");
//! let chunk = Chunk { span: Span::new(0, 5), ordinal: 0, depth: 0, parent: None, leaf: true, headings: vec![] };
//! store.write_batch(vec![DocumentWrite::new(doc, vec![chunk])]).unwrap();
//! assert_eq!(store.document("a").unwrap().unwrap().document.text, "Hello world");
//! ```

mod any;
#[cfg(feature = "testing")]
pub mod contract;
mod filter;
mod filter_sql;
#[cfg(test)]
mod filter_tests;
mod filter_text;
#[cfg(feature = "postgres")]
mod pg;
mod rules;
mod sqlite;
#[cfg(all(feature = "testing", feature = "postgres"))]
pub mod test_postgres;
mod types;

pub use any::{
    DynStore, discard_staged, is_postgres_url, open, open_or_create, replace, staging_location,
};
pub use filter::{MAX_FILTER_CONDITIONS, MAX_FILTER_DEPTH, MAX_FILTER_VALUES, MetadataFilter};
pub use filter_text::{FILTER_HELP, MAX_FILTER_TEXT_BYTES};
#[cfg(feature = "postgres")]
pub use pg::PgStore;
pub use sqlite::SqliteStore;
pub use types::*;

/// The schema version this build writes and reads.
pub const SCHEMA_VERSION: u32 = 1;

/// Store failures.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// There is no store where one was expected (user error).
    #[error("no store at {path} (create one with `ckeep add`)")]
    NotFound {
        /// The store location.
        path: String,
    },
    /// The store was written by a newer version (user error: upgrade `ckeep`).
    #[error(
        "the store at {path} has schema version {found}, newer than this ckeep's {supported}; upgrade ckeep to open it"
    )]
    NewerSchema {
        /// The store location.
        path: String,
        /// Schema version in the store.
        found: u32,
        /// Newest version this build knows.
        supported: u32,
    },
    /// The location holds something that is not a Context Keeper store (user error).
    #[error("{path} is not a Context Keeper store: {reason}")]
    NotAStore {
        /// The location.
        path: String,
        /// Why not.
        reason: String,
    },
    /// The write would break an invariant, e.g. a chunk span outside its document (a bug in
    /// the caller, i.e. ours).
    #[error("invalid write for document `{doc}`: {reason}")]
    InvalidWrite {
        /// Document id.
        doc: String,
        /// What is wrong.
        reason: String,
    },
    /// The database failed (ours or the machine's: disk full, I/O error, lock timeout).
    #[error("database error: {0}")]
    Database(#[from] rusqlite::Error),
    /// The PostgreSQL server failed or could not be reached (the machine's, or a wrong URL);
    /// a write in progress was rolled back.
    #[cfg(feature = "postgres")]
    #[error("PostgreSQL: {}", postgres_message(.0))]
    Postgres(::postgres::Error),
    /// The location needs a backend this build leaves out (user error: use another build).
    #[error(
        "{location} needs {backend}, which this build of ckeep leaves out (cargo feature `{feature}`)"
    )]
    NotBuilt {
        /// The location asked for.
        location: String,
        /// The backend it needs.
        backend: &'static str,
        /// The cargo feature that builds it.
        feature: &'static str,
    },
    /// A document key that the store does not have (a stale key held by the caller).
    #[error("no document has key {0}")]
    UnknownKey(i64),
    /// What was asked is not available for this kind of store (user error).
    #[error("{0}")]
    Unsupported(String),
    /// Another process has the store open, and what was asked needs it to itself (user error:
    /// stop that process and retry).
    #[error(
        "{path} is open in another process (a `ckeep serve` or `ckeep watch`?); stop it and retry"
    )]
    Busy {
        /// The store location.
        path: String,
    },
    /// Files around the database failed (the machine's).
    #[error("{path}: {source}")]
    Io {
        /// The path.
        path: String,
        /// The OS error.
        source: std::io::Error,
    },
}

// Not `#[from]`: that would make the driver's error the source too, and its cause would be
// printed twice.
#[cfg(feature = "postgres")]
impl From<::postgres::Error> for Error {
    fn from(e: ::postgres::Error) -> Self {
        Error::Postgres(e)
    }
}

/// A PostgreSQL error in words: the server's message when it sent one, else the client's
/// (with its cause, such as "connection refused").
#[cfg(feature = "postgres")]
fn postgres_message(e: &::postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        return format!("{}: {}", db.severity(), db.message());
    }
    if e.is_closed() {
        return "lost the connection to the server (it stopped, or the network failed): every \
                acknowledged write is stored; the one in flight may or may not be"
            .into();
    }
    let mut message = e.to_string();
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        message.push_str(": ");
        message.push_str(&c.to_string());
        cause = c.source();
    }
    message
}

impl Error {
    /// Whether the caller is at fault (no store there, a newer schema, not a store) rather than
    /// the database or the machine: decides exit code 2 in the CLI and 4xx over HTTP.
    pub fn is_user_error(&self) -> bool {
        matches!(
            self,
            Self::NotFound { .. }
                | Self::NewerSchema { .. }
                | Self::NotAStore { .. }
                | Self::NotBuilt { .. }
                | Self::Unsupported(_)
                | Self::Busy { .. }
        )
    }
}

/// A count as SQL's `LIMIT` and `OFFSET` take it (signed 64-bit), saturating.
pub(crate) fn sql_count(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// Store results.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Reading from a store.
///
/// Only reads derived from others have default bodies. [`DynStore`] forwards every method
/// to its backend by enum dispatch, so a method added here needs no forwarding code.
#[enum_dispatch::enum_dispatch]
pub trait StoreRead {
    /// Where the store is, for messages.
    fn location(&self) -> String;
    /// The manifest: schema version, chunker, model, analyzer, representations.
    fn manifest(&self) -> Result<Manifest>;
    /// A document with its stored text, or `None`.
    fn document(&self, id: &str) -> Result<Option<StoredDocument>>;
    /// The content hash of a stored document, or `None` if absent.
    fn document_hash(&self, id: &str) -> Result<Option<ContentHashHex>>;
    /// All document ids, sorted.
    fn document_ids(&self) -> Result<Vec<String>>;
    /// Every document's id and source (the file it was loaded from, `file.jsonl:LINE` for a
    /// JSONL line), sorted by id: what `sync` compares with the files that are there now.
    fn document_sources(&self) -> Result<Vec<(String, String)>>;
    /// One page of the sorted document ids: those after `after` (when given), skipping
    /// `offset`, at most `limit`. Only the page is read, so a client can walk any collection.
    fn document_ids_page(
        &self,
        after: Option<&str>,
        offset: usize,
        limit: usize,
    ) -> Result<Vec<String>>;
    /// How many documents the store holds.
    fn document_count(&self) -> Result<usize>;
    /// A document's chunks in ordinal (pre-)order.
    fn chunks_of(&self, id: &str) -> Result<Vec<StoredChunk>>;
    /// Chunks by id, in the order asked; unknown ids are skipped.
    fn chunks_by_id(&self, ids: &[ckeep_core::ChunkId]) -> Result<Vec<StoredChunk>>;
    /// Of `ids`, those of chunks the store has, in the order asked (a cheap existence check).
    fn live_chunks(&self, ids: &[ckeep_core::ChunkId]) -> Result<Vec<ckeep_core::ChunkId>>;
    /// External ids of documents by key, in the order asked.
    fn doc_ids_by_key(&self, keys: &[ckeep_core::DocKey]) -> Result<Vec<String>>;
    /// The source map of each document by key (see [`ckeep_core::SourceMap`]): `None` for a
    /// document that has none, as every document not extracted from a PDF, HTML, EPUB or DOCX.
    fn source_maps(
        &self,
        keys: &[ckeep_core::DocKey],
    ) -> Result<Vec<Option<ckeep_core::SourceMap>>>;
    /// The text of `span` in document `key`.
    fn span_text(&self, key: ckeep_core::DocKey, span: ckeep_core::Span) -> Result<String> {
        Ok(self.span_texts(&[(key, span)])?.pop().unwrap_or_default())
    }
    /// The texts of several spans, in the order asked (one round trip where that matters).
    fn span_texts(&self, spans: &[(ckeep_core::DocKey, ckeep_core::Span)]) -> Result<Vec<String>>;
    /// Statistics of a lexical field and the posting list of each term (sorted by chunk id).
    fn postings(
        &self,
        field: &str,
        terms: &[String],
    ) -> Result<(ckeep_core::LexicalStats, Vec<Vec<ckeep_core::Posting>>)>;
    /// All vectors of a representation, in chunk order, as one matrix.
    fn vectors(&self, repr: &str) -> Result<VectorMatrix>;
    /// Each vector of a representation — or only those of the chunks `only` lists (unknown
    /// ones skipped) — in chunk order, handed to `each` one at a time: a caller that keeps a
    /// compact code of each never holds them all, and rescoring quantised candidates reads
    /// just theirs without allocating a matrix.
    fn each_vector(
        &self,
        repr: &str,
        only: Option<&[ckeep_core::ChunkId]>,
        each: &mut dyn FnMut(ckeep_core::ChunkId, ckeep_core::DocKey, &[f32]),
    ) -> Result<()>;
    /// A document's summaries `(summarizer, text)`.
    fn summaries(&self, id: &str) -> Result<Vec<(String, String)>>;
    /// Counts and sizes.
    fn stats(&self) -> Result<StoreStats>;
    /// Verifies every invariant; the report lists what is wrong (empty when healthy).
    fn check(&self) -> Result<CheckReport>;
    /// Ids of the documents (sorted) that have no vectors of a representation, no entries in a
    /// lexical field, or no summary of a name: what a resumed derivation still has to do.
    fn documents_lacking(&self, what: Lacking<'_>) -> Result<Vec<String>>;
    /// A named blob of derived data kept with the store (e.g. an HNSW graph), or `None`.
    fn aux(&self, name: &str) -> Result<Option<Vec<u8>>>;
    /// Keys of the documents whose metadata passes `filter`, ascending.
    fn doc_keys_where(&self, filter: &MetadataFilter) -> Result<Vec<ckeep_core::DocKey>>;
    /// A number that grows with every committed write, by any writer: caches built from the
    /// store are current while it is unchanged.
    fn generation(&self) -> Result<u64>;
    /// The chunks whose vectors under `repr` were added, replaced or removed by the writes
    /// after generation `since`, each once, ascending: a reader that holds the vectors of
    /// generation `since` reads just these again. `None` when the store keeps no such log back
    /// to `since` (a store that searches its own vectors keeps none); then it reads them all.
    fn vector_changes(&self, repr: &str, since: u64) -> Result<Option<Vec<ckeep_core::ChunkId>>>;
    /// The vectors removed under `repr` while the store kept HNSW segments for it (a blob
    /// `hnsw:{repr}#segments`) and not yet forgotten
    /// ([`StoreWrite::forget_removed_vectors`]), each chunk once, with the vector it had
    /// first: a saved segment's graph still walks through a removed row, so a new process
    /// walks it as the writer's did. None by default (a store that keeps no such log).
    fn removed_vectors(
        &self,
        _repr: &str,
        _each: &mut dyn FnMut(ckeep_core::ChunkId, ckeep_core::DocKey, &[f32]),
    ) -> Result<()> {
        Ok(())
    }
    /// Starts a read snapshot: until [`StoreRead::end_read`], reads see the store as it was
    /// when the first of them ran, whatever other writers commit meanwhile. Returns whether a
    /// snapshot was started (not inside one already); only then call `end_read`.
    fn begin_read(&self) -> Result<bool>;
    /// Ends the snapshot [`StoreRead::begin_read`] started.
    fn end_read(&self) -> Result<()>;
    /// The store's own vector search, when it has one (PostgreSQL with pgvector): callers
    /// then need not load the vectors or build a graph of their own. `None` (the default): the
    /// caller loads the vectors and searches them itself.
    fn vector_search(&self) -> Option<&dyn VectorSearch> {
        None
    }
}

/// A store's own vector search (see [`StoreRead::vector_search`]).
pub trait VectorSearch {
    /// The `k` chunks nearest to the normalised `query` under stored representation `repr`,
    /// found by the store's own vector index (or, when `exact`, by a full scan inside the
    /// database), only of `docs` when given; with their vectors, so the caller scores them
    /// exactly as it scores its own scan.
    fn nearest(
        &self,
        repr: &str,
        query: &[f32],
        k: usize,
        exact: bool,
        docs: Option<&[ckeep_core::DocKey]>,
    ) -> Result<VectorMatrix>;
}

/// A read snapshot held for as long as the guard lives (see [`StoreRead::begin_read`]): a
/// writer committing meanwhile cannot make the reads inside disagree. Inside another snapshot
/// it does nothing.
#[derive(Debug)]
pub struct ReadSnapshot<'a, S: StoreRead + ?Sized>(&'a S, bool);

impl<'a, S: StoreRead + ?Sized> ReadSnapshot<'a, S> {
    /// Starts a snapshot on `store`, unless one is open already.
    pub fn begin(store: &'a S) -> Result<Self> {
        Ok(Self(store, store.begin_read()?))
    }
}

impl<S: StoreRead + ?Sized> Drop for ReadSnapshot<'_, S> {
    fn drop(&mut self) {
        if self.1 {
            // A read-only transaction: ending it cannot lose anything.
            let _ = self.0.end_read();
        }
    }
}

/// Writing to a store. Every method is atomic: it fully happens or not at all.
#[enum_dispatch::enum_dispatch]
pub trait StoreWrite: StoreRead {
    /// Replaces the manifest.
    fn set_manifest(&mut self, manifest: &Manifest) -> Result<()>;
    /// Stores (or replaces) a named blob of derived data; its owner stamps it to detect
    /// staleness.
    fn set_aux(&mut self, name: &str, data: &[u8]) -> Result<()> {
        self.write_aux(&[(name, data)], &[])
    }
    /// Stores (or replaces) the named blobs `put` and removes the blobs `remove`, in one
    /// transaction: blobs that refer to each other (a segment list and its segments) change
    /// together or not at all, whenever the process stops.
    fn write_aux(&mut self, put: &[(&str, &[u8])], remove: &[&str]) -> Result<()>;
    /// Forgets the vectors removed under `repr` by the writes before generation `before`
    /// (see [`StoreRead::removed_vectors`]): a segment save has written those it needs.
    fn forget_removed_vectors(&mut self, _repr: &str, _before: u64) -> Result<()> {
        Ok(())
    }
    /// Removes the documents `removed` (and everything derived from them), then adds `docs`,
    /// replacing any stored under the same id, all in one transaction: a reader sees the whole
    /// change or none of it (a watched folder's batch of edits and deletions). Returns how many
    /// of `removed` existed.
    fn write_changes(&mut self, docs: Vec<DocumentWrite>, removed: &[String]) -> Result<usize>;
    /// Adds entries derived from stored documents, in one transaction; returns for how many
    /// documents they were applied (documents removed or changed since are skipped).
    fn write_derived(&mut self, batch: Vec<DerivedWrite>) -> Result<usize>;
    /// Adds documents, replacing any stored under the same id, in one transaction.
    fn write_batch(&mut self, docs: Vec<DocumentWrite>) -> Result<()> {
        self.write_changes(docs, &[]).map(drop)
    }
    /// Removes documents and everything derived from them; returns how many existed.
    fn remove(&mut self, ids: &[String]) -> Result<usize> {
        self.write_changes(Vec::new(), ids)
    }
}
