//! The engine across the store seam: a store with a vector search of its own gets dense search
//! from it, scored by the engine (what PostgreSQL does, here over `SQLite`); and a search reads
//! the store's manifest once, whatever its strategy.
//! Fast tier: `SQLite` in memory and the deterministic test embedder.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use ckeep_core::{ChunkId, DocKey, Document, LexicalStats, Posting, Span};
use ckeep_engine::{Engine, Mode, SearchRequest, Strategy};
use ckeep_store::{
    CheckReport, DerivedWrite, DocumentWrite, Lacking, Manifest, MetadataFilter, Result,
    SqliteStore, StoreRead, StoreStats, StoreWrite, StoredChunk, StoredDocument, VectorMatrix,
    VectorSearch,
};

/// `SQLite`, counting its manifest reads and its own vector searches, and (`searches`) offering
/// a vector search of its own: an exact scan of the stored vectors, as a database would run it.
#[derive(Debug)]
struct Seam {
    inner: SqliteStore,
    manifest_reads: AtomicUsize,
    searched: AtomicUsize,
    searches: bool,
}

impl Seam {
    fn new(searches: bool) -> Self {
        Self {
            inner: SqliteStore::in_memory().unwrap(),
            manifest_reads: AtomicUsize::new(0),
            searched: AtomicUsize::new(0),
            searches,
        }
    }
}

impl VectorSearch for Seam {
    fn nearest(
        &self,
        repr: &str,
        query: &[f32],
        k: usize,
        _exact: bool,
        docs: Option<&[DocKey]>,
    ) -> Result<VectorMatrix> {
        self.searched.fetch_add(1, Ordering::SeqCst);
        let all = self.inner.vectors(repr)?;
        let mut rows: Vec<usize> =
            (0..all.len()).filter(|&i| docs.is_none_or(|d| d.contains(&all.docs[i]))).collect();
        let score = |i: usize| -> f32 { all.row(i).iter().zip(query).map(|(a, b)| a * b).sum() };
        rows.sort_by(|&a, &b| score(b).total_cmp(&score(a)));
        rows.truncate(k);
        Ok(VectorMatrix {
            ids: rows.iter().map(|&i| all.ids[i]).collect(),
            docs: rows.iter().map(|&i| all.docs[i]).collect(),
            dim: all.dim,
            data: rows.iter().flat_map(|&i| all.row(i).to_vec()).collect(),
        })
    }
}

impl StoreRead for Seam {
    fn location(&self) -> String {
        self.inner.location()
    }
    fn manifest(&self) -> Result<Manifest> {
        self.manifest_reads.fetch_add(1, Ordering::SeqCst);
        self.inner.manifest()
    }
    fn document(&self, id: &str) -> Result<Option<StoredDocument>> {
        self.inner.document(id)
    }
    fn document_hash(&self, id: &str) -> Result<Option<String>> {
        self.inner.document_hash(id)
    }
    fn document_ids(&self) -> Result<Vec<String>> {
        self.inner.document_ids()
    }
    fn document_sources(&self) -> Result<Vec<(String, String)>> {
        self.inner.document_sources()
    }
    fn document_ids_page(
        &self,
        after: Option<&str>,
        offset: usize,
        limit: usize,
    ) -> Result<Vec<String>> {
        self.inner.document_ids_page(after, offset, limit)
    }
    fn document_count(&self) -> Result<usize> {
        self.inner.document_count()
    }
    fn chunks_of(&self, id: &str) -> Result<Vec<StoredChunk>> {
        self.inner.chunks_of(id)
    }
    fn chunks_by_id(&self, ids: &[ChunkId]) -> Result<Vec<StoredChunk>> {
        self.inner.chunks_by_id(ids)
    }
    fn live_chunks(&self, ids: &[ChunkId]) -> Result<Vec<ChunkId>> {
        self.inner.live_chunks(ids)
    }
    fn doc_ids_by_key(&self, keys: &[DocKey]) -> Result<Vec<String>> {
        self.inner.doc_ids_by_key(keys)
    }
    fn source_maps(&self, keys: &[DocKey]) -> Result<Vec<Option<ckeep_core::SourceMap>>> {
        self.inner.source_maps(keys)
    }
    fn span_texts(&self, spans: &[(DocKey, Span)]) -> Result<Vec<String>> {
        self.inner.span_texts(spans)
    }
    fn postings(&self, field: &str, terms: &[String]) -> Result<(LexicalStats, Vec<Vec<Posting>>)> {
        self.inner.postings(field, terms)
    }
    fn vectors(&self, repr: &str) -> Result<VectorMatrix> {
        self.inner.vectors(repr)
    }
    fn each_vector(
        &self,
        repr: &str,
        only: Option<&[ChunkId]>,
        each: &mut dyn FnMut(ChunkId, DocKey, &[f32]),
    ) -> Result<()> {
        self.inner.each_vector(repr, only, each)
    }
    fn summaries(&self, id: &str) -> Result<Vec<(String, String)>> {
        self.inner.summaries(id)
    }
    fn stats(&self) -> Result<StoreStats> {
        self.inner.stats()
    }
    fn check(&self) -> Result<CheckReport> {
        self.inner.check()
    }
    fn documents_lacking(&self, what: Lacking<'_>) -> Result<Vec<String>> {
        self.inner.documents_lacking(what)
    }
    fn aux(&self, name: &str) -> Result<Option<Vec<u8>>> {
        self.inner.aux(name)
    }
    fn doc_keys_where(&self, filter: &MetadataFilter) -> Result<Vec<DocKey>> {
        self.inner.doc_keys_where(filter)
    }
    fn generation(&self) -> Result<u64> {
        self.inner.generation()
    }
    fn vector_changes(&self, repr: &str, since: u64) -> Result<Option<Vec<ChunkId>>> {
        self.inner.vector_changes(repr, since)
    }
    fn begin_read(&self) -> Result<bool> {
        self.inner.begin_read()
    }
    fn end_read(&self) -> Result<()> {
        self.inner.end_read()
    }
    fn vector_search(&self) -> Option<&dyn VectorSearch> {
        self.searches.then_some(self as &dyn VectorSearch)
    }
}

impl StoreWrite for Seam {
    fn set_manifest(&mut self, manifest: &Manifest) -> Result<()> {
        self.inner.set_manifest(manifest)
    }
    fn write_aux(&mut self, put: &[(&str, &[u8])], remove: &[&str]) -> Result<()> {
        self.inner.write_aux(put, remove)
    }
    fn write_changes(&mut self, docs: Vec<DocumentWrite>, removed: &[String]) -> Result<usize> {
        self.inner.write_changes(docs, removed)
    }
    fn write_derived(&mut self, batch: Vec<DerivedWrite>) -> Result<usize> {
        self.inner.write_derived(batch)
    }
}

/// An engine over `store` with three short documents, English and Chinese, embedded.
fn engine_over(store: Seam) -> Engine<Seam> {
    let mut engine =
        Engine::new(store).with_embedder(Arc::new(ckeep_embed::HashingEmbedder::new(256)));
    let mut ingest = engine.writer().ingest(&"paragraphs".parse().unwrap()).unwrap();
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
fn a_store_with_its_own_vector_search_answers_dense_searches() {
    let engine = engine_over(Seam::new(true));
    let search = |query: &str| {
        let strategy = Strategy { mode: Mode::Dense, k: 3, ..Strategy::default() };
        let req = SearchRequest::new(query).with_strategy(strategy);
        let hits = engine.search(&req).unwrap().results;
        hits.into_iter().map(|r| r.doc_id).collect::<Vec<_>>()
    };
    assert_eq!(search("water of rivers").first().map(String::as_str), Some("rivers"));
    assert_eq!(search("山上的河流").first().map(String::as_str), Some("河流"));
    assert_eq!(engine.store().searched.load(Ordering::SeqCst), 2, "the store's search ran");
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
            let req =
                SearchRequest::new(query).with_strategy(strategy.clone()).with_explain(explain);
            let before = engine.store().manifest_reads.load(Ordering::SeqCst);
            let res = engine.search(&req).unwrap();
            assert!(!res.results.is_empty(), "{spec}: {query}");
            assert_eq!(
                engine.store().manifest_reads.load(Ordering::SeqCst) - before,
                1,
                "{spec}: {query}"
            );
        }
    }
}
