//! The engine across the store seam: a store that says it searches vectors but then declines a
//! search (`nearest` answers `None`) still gets dense results, from the engine's own scan; and a
//! search reads the store's manifest once, whatever its strategy.
//! Fast tier: `SQLite` in memory and the deterministic test embedder.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use ckeep_core::{ChunkId, DocKey, Document, LexicalStats, Posting, Span};
use ckeep_engine::{Engine, Mode, SearchRequest, Strategy};
use ckeep_store::{
    CheckReport, DerivedWrite, DocumentWrite, Lacking, Manifest, MetadataFilter, Result,
    SqliteStore, StoreRead, StoreStats, StoreWrite, StoredChunk, StoredDocument, VectorMatrix,
};

/// `SQLite`, counting its manifest reads, and (`declines`) claiming a vector search of its own
/// that then answers nothing.
#[derive(Debug)]
struct Seam(SqliteStore, AtomicUsize, bool);

impl Seam {
    fn new(declines: bool) -> Self {
        Self(SqliteStore::in_memory().unwrap(), AtomicUsize::new(0), declines)
    }
}

impl StoreRead for Seam {
    fn location(&self) -> String {
        self.0.location()
    }
    fn manifest(&self) -> Result<Manifest> {
        self.1.fetch_add(1, Ordering::SeqCst);
        self.0.manifest()
    }
    fn document(&self, id: &str) -> Result<Option<StoredDocument>> {
        self.0.document(id)
    }
    fn document_hash(&self, id: &str) -> Result<Option<String>> {
        self.0.document_hash(id)
    }
    fn document_ids(&self) -> Result<Vec<String>> {
        self.0.document_ids()
    }
    fn document_sources(&self) -> Result<Vec<(String, String)>> {
        self.0.document_sources()
    }
    fn document_ids_page(
        &self,
        after: Option<&str>,
        offset: usize,
        limit: usize,
    ) -> Result<Vec<String>> {
        self.0.document_ids_page(after, offset, limit)
    }
    fn document_count(&self) -> Result<usize> {
        self.0.document_count()
    }
    fn chunks_of(&self, id: &str) -> Result<Vec<StoredChunk>> {
        self.0.chunks_of(id)
    }
    fn chunks_by_id(&self, ids: &[ChunkId]) -> Result<Vec<StoredChunk>> {
        self.0.chunks_by_id(ids)
    }
    fn live_chunks(&self, ids: &[ChunkId]) -> Result<Vec<ChunkId>> {
        self.0.live_chunks(ids)
    }
    fn doc_ids_by_key(&self, keys: &[DocKey]) -> Result<Vec<String>> {
        self.0.doc_ids_by_key(keys)
    }
    fn source_maps(&self, keys: &[DocKey]) -> Result<Vec<Option<ckeep_core::SourceMap>>> {
        self.0.source_maps(keys)
    }
    fn span_text(&self, key: DocKey, span: Span) -> Result<String> {
        self.0.span_text(key, span)
    }
    fn span_texts(&self, spans: &[(DocKey, Span)]) -> Result<Vec<String>> {
        self.0.span_texts(spans)
    }
    fn postings(&self, field: &str, terms: &[String]) -> Result<(LexicalStats, Vec<Vec<Posting>>)> {
        self.0.postings(field, terms)
    }
    fn vectors(&self, repr: &str) -> Result<VectorMatrix> {
        self.0.vectors(repr)
    }
    fn each_vector(
        &self,
        repr: &str,
        only: Option<&[ChunkId]>,
        each: &mut dyn FnMut(ChunkId, DocKey, &[f32]),
    ) -> Result<()> {
        self.0.each_vector(repr, only, each)
    }
    fn summaries(&self, id: &str) -> Result<Vec<(String, String)>> {
        self.0.summaries(id)
    }
    fn stats(&self) -> Result<StoreStats> {
        self.0.stats()
    }
    fn check(&self) -> Result<CheckReport> {
        self.0.check()
    }
    fn documents_lacking(&self, what: Lacking<'_>) -> Result<Vec<String>> {
        self.0.documents_lacking(what)
    }
    fn aux(&self, name: &str) -> Result<Option<Vec<u8>>> {
        self.0.aux(name)
    }
    fn doc_keys_where(&self, filter: &MetadataFilter) -> Result<Vec<DocKey>> {
        self.0.doc_keys_where(filter)
    }
    fn generation(&self) -> Result<u64> {
        self.0.generation()
    }
    fn vector_changes(&self, repr: &str, since: u64) -> Result<Option<Vec<ChunkId>>> {
        self.0.vector_changes(repr, since)
    }
    fn begin_read(&self) -> Result<bool> {
        self.0.begin_read()
    }
    fn end_read(&self) -> Result<()> {
        self.0.end_read()
    }
    fn searches_vectors(&self) -> bool {
        self.2 || self.0.searches_vectors()
    }
    fn nearest(
        &self,
        repr: &str,
        query: &[f32],
        k: usize,
        exact: bool,
        docs: Option<&[DocKey]>,
    ) -> Result<Option<VectorMatrix>> {
        if self.2 {
            return Ok(None);
        }
        self.0.nearest(repr, query, k, exact, docs)
    }
}

impl StoreWrite for Seam {
    fn set_manifest(&mut self, manifest: &Manifest) -> Result<()> {
        self.0.set_manifest(manifest)
    }
    fn set_aux(&mut self, name: &str, data: &[u8]) -> Result<()> {
        self.0.set_aux(name, data)
    }
    fn write_changes(&mut self, docs: Vec<DocumentWrite>, removed: &[String]) -> Result<usize> {
        self.0.write_changes(docs, removed)
    }
    fn write_derived(&mut self, batch: Vec<DerivedWrite>) -> Result<usize> {
        self.0.write_derived(batch)
    }
}

/// An engine over `store` with three short documents, English and Chinese, embedded.
fn engine_over(store: Seam) -> Engine<Seam> {
    let mut engine =
        Engine::new(store).with_embedder(Arc::new(ckeep_embed::HashingEmbedder::new(256)));
    let mut ingest = engine.ingest(&"paragraphs".parse().unwrap()).unwrap();
    for (id, text) in [
        ("rivers", "Rivers carry water from the mountains down to the sea."),
        ("bread", "Knead the dough, let it rise, then bake the bread."),
        ("河流", "河流把山上的水带到大海。"),
    ] {
        ingest.add(Document::new(id, "", text)).unwrap();
    }
    ingest.finish().unwrap();
    engine
}

#[test]
fn a_store_that_declines_a_vector_search_still_gets_dense_results() {
    let engine = engine_over(Seam::new(true));
    let search = |query: &str| {
        let strategy = Strategy { mode: Mode::Dense, k: 3, ..Strategy::default() };
        let req = SearchRequest { query: query.into(), strategy, explain: false, filter: None };
        let hits = engine.search(&req).unwrap().results;
        hits.into_iter().map(|r| r.doc_id).collect::<Vec<_>>()
    };
    assert_eq!(search("water of rivers").first().map(String::as_str), Some("rivers"));
    assert_eq!(search("山上的河流").first().map(String::as_str), Some("河流"));
}

#[test]
fn a_search_reads_the_manifest_once() {
    let engine = engine_over(Seam::new(false));
    for spec in [
        "mode=bm25",
        "mode=dense",
        "mode=hybrid,level=doc",
        "mode=hybrid:linear=0.5,expand=window:1",
        "mode=dense,repr=plain+window-avg:1,level=doc,exact=true",
        "mode=bm25,chunker=paragraphs,analyzer=jieba",
    ] {
        let strategy: Strategy = spec.parse().unwrap();
        for (query, explain) in [("water of rivers", false), ("山上的河流", true)] {
            let req = SearchRequest {
                query: query.into(),
                strategy: strategy.clone(),
                explain,
                filter: None,
            };
            let before = engine.store().1.load(Ordering::SeqCst);
            let res = engine.search(&req).unwrap();
            assert!(!res.results.is_empty(), "{spec}: {query}");
            assert_eq!(engine.store().1.load(Ordering::SeqCst) - before, 1, "{spec}: {query}");
        }
    }
}
