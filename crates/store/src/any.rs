//! Stores by location: a directory holds the embedded `SQLite` store, a `postgres://` URL names
//! a PostgreSQL one. Callers that serve both hold a [`DynStore`].

use std::path::Path;

use ckeep_core::{ChunkId, DocKey, LexicalStats, Posting, Span};

use crate::{
    CheckReport, DerivedWrite, DocumentWrite, Lacking, Manifest, MetadataFilter, Result,
    SqliteStore, StoreRead, StoreStats, StoreWrite, StoredChunk, StoredDocument, VectorMatrix,
};

/// Any store, chosen at run time.
pub type DynStore = Box<dyn StoreWrite + Send>;

impl std::fmt::Debug for dyn StoreWrite + Send {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("location", &self.location()).finish()
    }
}

/// Whether `location` names a PostgreSQL database (`postgres://…` or `postgresql://…`) rather
/// than a directory; true also in a build without PostgreSQL, which then refuses it clearly.
pub fn is_postgres_url(location: &str) -> bool {
    location.starts_with("postgres://") || location.starts_with("postgresql://")
}

/// Opens the store at `location` (a directory, or a `postgres://…` URL); fails with
/// [`crate::Error::NotFound`] if there is none.
pub fn open(location: &str) -> Result<DynStore> {
    if is_postgres_url(location) {
        return open_postgres(location, false);
    }
    Ok(Box::new(SqliteStore::open(Path::new(location))?))
}

/// Opens the store at `location`, creating an empty one if needed.
pub fn open_or_create(location: &str) -> Result<DynStore> {
    if is_postgres_url(location) {
        return open_postgres(location, true);
    }
    Ok(Box::new(SqliteStore::open_or_create(Path::new(location))?))
}

/// Where a store to replace the one at `location` is built (`ckeep eval recommend --apply
/// --rechunk`), emptied first: a directory inside the store's, so the final rename stays on one
/// file system. PostgreSQL stores are not replaced this way.
pub fn staging_location(location: &str) -> Result<String> {
    if is_postgres_url(location) {
        return Err(crate::Error::Unsupported(
            "a PostgreSQL store cannot be replaced in place; add its documents to a new store \
             (another database or schema) with the new settings"
                .into(),
        ));
    }
    let staged = crate::sqlite::staging_dir(Path::new(location));
    crate::sqlite::remove_staged(&staged)?;
    Ok(staged.display().to_string())
}

/// Removes a replacement built for the store at `location` that is not wanted (a failed
/// build); nothing to do for a PostgreSQL store.
pub fn discard_staged(location: &str) -> Result<()> {
    if is_postgres_url(location) {
        return Ok(());
    }
    crate::sqlite::remove_staged(&crate::sqlite::staging_dir(Path::new(location)))
}

/// Replaces the store at `location` with the closed store at `staged`, which
/// [`staging_location`] named, in one step: a reader opening it sees the old store or the new
/// one. Every connection to both must be closed; another process's is refused
/// ([`crate::Error::Busy`]).
pub fn replace(location: &str, staged: &str) -> Result<()> {
    if is_postgres_url(location) {
        return staging_location(location).map(|_| ());
    }
    crate::sqlite::replace(Path::new(location), Path::new(staged))
}

#[cfg(feature = "postgres")]
fn open_postgres(url: &str, create: bool) -> Result<DynStore> {
    let store =
        if create { crate::PgStore::open_or_create(url)? } else { crate::PgStore::open(url)? };
    Ok(Box::new(store))
}

#[cfg(not(feature = "postgres"))]
fn open_postgres(url: &str, _create: bool) -> Result<DynStore> {
    // The URL may hold a password: name only its scheme.
    let scheme = url.split("://").next().unwrap_or("postgres");
    Err(crate::Error::NotBuilt {
        location: format!("{scheme}://…"),
        backend: "PostgreSQL",
        feature: "postgres",
    })
}

impl<T: StoreRead + ?Sized> StoreRead for Box<T> {
    fn location(&self) -> String {
        (**self).location()
    }
    fn manifest(&self) -> Result<Manifest> {
        (**self).manifest()
    }
    fn document(&self, id: &str) -> Result<Option<StoredDocument>> {
        (**self).document(id)
    }
    fn document_hash(&self, id: &str) -> Result<Option<String>> {
        (**self).document_hash(id)
    }
    fn document_ids(&self) -> Result<Vec<String>> {
        (**self).document_ids()
    }
    fn document_sources(&self) -> Result<Vec<(String, String)>> {
        (**self).document_sources()
    }
    fn document_ids_page(
        &self,
        after: Option<&str>,
        offset: usize,
        limit: usize,
    ) -> Result<Vec<String>> {
        (**self).document_ids_page(after, offset, limit)
    }
    fn document_count(&self) -> Result<usize> {
        (**self).document_count()
    }
    fn chunks_of(&self, id: &str) -> Result<Vec<StoredChunk>> {
        (**self).chunks_of(id)
    }
    fn chunks_by_id(&self, ids: &[ChunkId]) -> Result<Vec<StoredChunk>> {
        (**self).chunks_by_id(ids)
    }
    fn live_chunks(&self, ids: &[ChunkId]) -> Result<Vec<ChunkId>> {
        (**self).live_chunks(ids)
    }
    fn doc_ids_by_key(&self, keys: &[DocKey]) -> Result<Vec<String>> {
        (**self).doc_ids_by_key(keys)
    }
    fn source_maps(
        &self,
        keys: &[ckeep_core::DocKey],
    ) -> Result<Vec<Option<ckeep_core::SourceMap>>> {
        (**self).source_maps(keys)
    }
    fn span_text(&self, key: DocKey, span: Span) -> Result<String> {
        (**self).span_text(key, span)
    }
    fn span_texts(&self, spans: &[(DocKey, Span)]) -> Result<Vec<String>> {
        (**self).span_texts(spans)
    }
    fn postings(&self, field: &str, terms: &[String]) -> Result<(LexicalStats, Vec<Vec<Posting>>)> {
        (**self).postings(field, terms)
    }
    fn vectors(&self, repr: &str) -> Result<VectorMatrix> {
        (**self).vectors(repr)
    }
    fn each_vector(
        &self,
        repr: &str,
        only: Option<&[ChunkId]>,
        each: &mut dyn FnMut(ChunkId, DocKey, &[f32]),
    ) -> Result<()> {
        (**self).each_vector(repr, only, each)
    }
    fn summaries(&self, id: &str) -> Result<Vec<(String, String)>> {
        (**self).summaries(id)
    }
    fn stats(&self) -> Result<StoreStats> {
        (**self).stats()
    }
    fn check(&self) -> Result<CheckReport> {
        (**self).check()
    }
    fn documents_lacking(&self, what: Lacking<'_>) -> Result<Vec<String>> {
        (**self).documents_lacking(what)
    }
    fn aux(&self, name: &str) -> Result<Option<Vec<u8>>> {
        (**self).aux(name)
    }
    fn doc_keys_where(&self, filter: &MetadataFilter) -> Result<Vec<DocKey>> {
        (**self).doc_keys_where(filter)
    }
    fn generation(&self) -> Result<u64> {
        (**self).generation()
    }
    fn vector_changes(&self, repr: &str, since: u64) -> Result<Option<Vec<ChunkId>>> {
        (**self).vector_changes(repr, since)
    }
    fn removed_vectors(
        &self,
        repr: &str,
        each: &mut dyn FnMut(ChunkId, DocKey, &[f32]),
    ) -> Result<()> {
        (**self).removed_vectors(repr, each)
    }
    fn begin_read(&self) -> Result<bool> {
        (**self).begin_read()
    }
    fn end_read(&self) -> Result<()> {
        (**self).end_read()
    }
    fn vector_search(&self) -> Option<&dyn crate::VectorSearch> {
        (**self).vector_search()
    }
}

impl<T: StoreWrite + ?Sized> StoreWrite for Box<T> {
    fn set_manifest(&mut self, manifest: &Manifest) -> Result<()> {
        (**self).set_manifest(manifest)
    }
    fn write_aux(&mut self, put: &[(&str, &[u8])], remove: &[&str]) -> Result<()> {
        (**self).write_aux(put, remove)
    }
    fn forget_removed_vectors(&mut self, repr: &str, before: u64) -> Result<()> {
        (**self).forget_removed_vectors(repr, before)
    }
    fn write_changes(&mut self, docs: Vec<DocumentWrite>, removed: &[String]) -> Result<usize> {
        (**self).write_changes(docs, removed)
    }
    fn write_derived(&mut self, batch: Vec<DerivedWrite>) -> Result<usize> {
        (**self).write_derived(batch)
    }
}
