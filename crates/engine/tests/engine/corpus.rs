//! The engine end to end on the in-repo corpus (`testdata/corpus.jsonl`: English, Chinese and
//! Japanese) with `SQLite` and the deterministic test embedder: the fast tier's cover of ingest,
//! every search mode, filters, aggregation, exact spans and re-adding.

use std::sync::Arc;

use ckeep_core::Document;
use ckeep_engine::{Engine, MetadataFilter, SearchRequest};
use ckeep_store::{SqliteStore, StoreRead};

fn engine() -> Engine<SqliteStore> {
    let mut engine = Engine::new(SqliteStore::in_memory().unwrap())
        .with_embedder(Arc::new(ckeep_embed::HashingEmbedder::new(1024)));
    let mut ingest = engine.writer().ingest(&"paragraphs".parse().unwrap()).unwrap();
    for d in ckeep_testkit::corpus() {
        ingest.add(d).unwrap();
    }
    let report = ingest.finish().unwrap();
    assert_eq!((report.documents, report.added), (12, 12));
    assert_eq!(report.vectors, report.chunks, "one vector per leaf chunk");
    engine
}

fn search(engine: &Engine<SqliteStore>, query: &str, strategy: &str) -> Vec<String> {
    let req = SearchRequest::new(query).with_strategy(strategy.parse().unwrap());
    engine.search(&req).unwrap().results.into_iter().map(|r| r.doc_id).collect()
}

#[test]
fn every_mode_finds_the_document_in_every_script() {
    let engine = engine();
    // A mixed corpus with Han text gets the analyzer that reads it, chosen on the first batch.
    assert_eq!(
        engine.store().manifest().unwrap().analyzer.as_deref(),
        Some("cjk-uax29-bigram+en/v1")
    );
    for mode in ["bm25", "dense", "hybrid"] {
        for (query, want) in [
            ("owls hunt in the dark night", "owls"),
            ("knead the dough and bake", "bread"),
            ("write-ahead logging readers writer", "sqlite"),
            ("明天会下雨吗", "天气"),
            ("中国最长的河流", "河流"),
            ("桜の花見", "桜"),
        ] {
            let got = search(&engine, query, &format!("mode={mode},level=doc,k=3"));
            assert_eq!(got.first().map(String::as_str), Some(want), "{mode}: {query} -> {got:?}");
        }
    }
}

#[test]
fn results_carry_exact_spans_and_filters_select_before_ranking() {
    let engine = engine();
    let req = SearchRequest::new("rivers carry water to the sea")
        .with_strategy("mode=hybrid,level=chunk,k=5".parse().unwrap())
        .with_explain(true);
    let res = engine.search(&req).unwrap();
    let top = &res.results[0];
    assert_eq!(top.doc_id, "rivers");
    let stored = engine.store().document("rivers").unwrap().unwrap().document.text;
    for span in &top.spans {
        assert!(top.text.contains(span.slice(&stored)), "the text is the span's bytes");
    }
    assert!(res.results.iter().all(|r| r.explain.is_some()));
    // Only 2020 documents: `rivers` is one; `volcanoes` (2021) is not, however well it matches.
    let mut filtered = req.clone();
    filtered.query = "molten rock and ash".into();
    filtered.filter = Some(MetadataFilter(serde_json::from_str(r#"{"year": 2020}"#).unwrap()));
    let ids: Vec<String> =
        engine.search(&filtered).unwrap().results.into_iter().map(|r| r.doc_id).collect();
    assert!(!ids.is_empty() && !ids.contains(&"volcanoes".to_string()), "{ids:?}");
}

#[test]
fn re_adding_unchanged_documents_changes_nothing_and_an_edit_replaces() {
    let mut engine = engine();
    let generation = engine.store().generation().unwrap();
    let mut ingest = engine.writer().ingest(&"paragraphs".parse().unwrap()).unwrap();
    for d in ckeep_testkit::corpus() {
        ingest.add(d).unwrap();
    }
    let report = ingest.finish().unwrap();
    assert_eq!((report.unchanged, report.added, report.replaced), (12, 0, 0));
    assert_eq!(engine.store().generation().unwrap(), generation);
    let mut ingest = engine.writer().ingest(&"paragraphs".parse().unwrap()).unwrap();
    ingest
        .add(Document::new("tea", "Green tea", "Steep green tea leaves in cooler water."))
        .unwrap();
    assert_eq!(ingest.finish().unwrap().replaced, 1);
    assert_eq!(search(&engine, "steep leaves in cooler water", "mode=bm25,level=doc,k=1"), ["tea"]);
    assert!(engine.store().check().unwrap().is_ok());
}
