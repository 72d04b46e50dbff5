//! HNSW and quantised vectors against exact search on real vectors: the 10,033 Wikipedia
//! vital-article summaries cut into 36,755 sentences and embedded with potion-base-8M (a real
//! model, fast enough for a test), queried with 100 of the articles' descriptions. Tolerance:
//! recall@10 ≥ 0.95 (HNSW), ≥ 0.97 (binary codes, the bar their default oversampling was chosen
//! for), ≥ 0.99 (int8 codes).

use std::path::Path;
use std::sync::Arc;

use ckeep_core::Document;
use ckeep_embed::{CachedEmbedder, Embedder};
use ckeep_engine::{ANN_MIN_VECTORS, Engine, Mode, SearchRequest, Strategy};
use ckeep_index::Quantization;
use ckeep_store::{SqliteStore, StoreRead, StoreWrite};

use ckeep_testkit::data_dir;

/// The summaries' sentences in a store under `dir`, embedded with potion-base-8M, and 100
/// descriptions to query with.
fn wiki_sentences(dir: &Path) -> (Engine<SqliteStore>, Vec<String>, Arc<dyn Embedder>) {
    let raw =
        std::fs::read_to_string(data_dir().join("wiki_vital_summaries_en/summaries_en-us.json"))
            .unwrap();
    let map: serde_json::Map<String, serde_json::Value> = serde_json::from_str(&raw).unwrap();
    let model: Arc<dyn Embedder> = Arc::new(CachedEmbedder::new(
        ckeep_embed::load("potion-base-8M").expect("ckeep model pull potion-base-8M"),
        None,
    ));
    let mut engine =
        Engine::new(SqliteStore::open_or_create(dir).unwrap()).with_embedder(model.clone());
    let mut ingest = engine.writer().ingest(&"sentences".parse().unwrap()).unwrap();
    let mut queries = Vec::new();
    for (id, v) in &map {
        let text = v["extract"].as_str().unwrap_or("");
        if !text.trim().is_empty() {
            ingest.add(Document::new(id.clone(), v["title"].as_str().unwrap_or(""), text)).unwrap();
        }
        if let Some(d) = v["description"].as_str().filter(|d| d.len() > 10 && queries.len() < 100) {
            queries.push(d.to_string());
        }
    }
    let report = ingest.finish().unwrap();
    assert!(report.vectors as usize >= ANN_MIN_VECTORS, "{} vectors", report.vectors);
    assert!(report.vector_index_built, "a large collection gets a graph at ingest");
    (engine, queries, model)
}

/// The top 10 chunk ids of a dense search with `spec`.
fn top10(engine: &Engine<SqliteStore>, q: &str, spec: &str) -> Vec<i64> {
    let strategy: Strategy = format!("mode=dense,k=10,{spec}").parse().unwrap();
    let req = SearchRequest::new(q.to_string()).with_strategy(strategy);
    engine.search(&req).unwrap().results.iter().map(|r| r.chunks[0].chunk_id.0).collect()
}

/// The documents `ids` under new ids (`copy-ID`), same title and text.
fn copies_of(engine: &Engine<SqliteStore>, ids: &[String]) -> Vec<Document> {
    ids.iter()
        .map(|id| {
            let d = engine.store().document(id).unwrap().unwrap().document;
            Document::new(format!("copy-{id}"), d.title, d.text)
        })
        .collect()
}

/// Recall@10 of `spec`'s results against the exact scan's, over `queries`.
fn recall(engine: &Engine<SqliteStore>, queries: &[String], spec: &str) -> f64 {
    let mut found = 0;
    for q in queries {
        let exact = top10(engine, q, "exact=true");
        let approx = top10(engine, q, spec);
        found += exact.iter().filter(|c| approx.contains(c)).count();
    }
    found as f64 / (10 * queries.len()) as f64
}

#[test]
#[ignore = "real tier (scripts/test.sh): installed models and ../shared/data"]
fn quantised_vectors_keep_the_exact_ranking_in_a_fraction_of_the_memory() {
    let dir = tempfile::tempdir().unwrap();
    let (mut engine, queries, _) = wiki_sentences(dir.path());
    let n = engine.store().vectors("plain").unwrap().len();
    let float_bytes = n * 256 * 4;
    for (kind, floor, memory_ratio) in
        [(Quantization::Int8, 0.99, 3.0), (Quantization::Binary, 0.97, 5.0)]
    {
        engine.writer().set_quantization(None, kind).unwrap();
        let recall = recall(&engine, &queries, "exact=false");
        let memory = engine.vectors().memory();
        let (_, bytes) = memory.iter().find(|(k, _)| k.ends_with(&format!("@{kind}"))).unwrap();
        eprintln!(
            "{kind}: recall@10 {recall:.4}, {bytes} bytes for {n} vectors ({float_bytes} as float32)"
        );
        assert!(recall >= floor, "{kind}: recall@10 = {recall}");
        assert!(*bytes as f64 * memory_ratio <= float_bytes as f64, "{kind}: {bytes} bytes");
    }
    // Without rescoring, int8 codes alone still rank nearly as the floats do.
    engine.writer().set_quantization(None, Quantization::Int8).unwrap();
    let codes_only = recall(&engine, &queries, "rescore=false");
    assert!(codes_only >= 0.9, "int8 codes alone: recall@10 = {codes_only}");
}

/// The graph an int8 representation's codes walk, and its bytes, if `engine` has read one.
fn codes_graph_bytes(engine: &Engine<SqliteStore>) -> Option<usize> {
    engine.vectors().memory().into_iter().find(|(k, _)| k == "plain@int8:hnsw").map(|(_, b)| b)
}

#[test]
#[ignore = "real tier (scripts/test.sh): installed models and ../shared/data"]
fn int8_codes_walk_the_stored_graph_and_add_rebuilds_it() {
    let dir = tempfile::tempdir().unwrap();
    let (mut engine, queries, model) = wiki_sentences(dir.path());
    let n = engine.store().vectors("plain").unwrap().len();
    engine.writer().set_quantization(None, Quantization::Int8).unwrap();
    let through_graph = recall(&engine, &queries, "exact=false");
    let graph = codes_graph_bytes(&engine).expect("the codes walk the graph built at ingest");
    eprintln!(
        "int8 codes through the graph: recall@10 {through_graph:.4}; graph {} bytes per vector",
        graph / n
    );
    assert!(through_graph >= 0.99, "int8 through the graph: recall@10 = {through_graph}");
    assert!(graph / n < 200, "{graph} bytes of graph for {n} vectors");
    // A stale graph is not walked: the codes are scanned (and rank as well), until a build
    // (which `ckeep add` runs) makes one over the float32 vectors again.
    SqliteStore::open(dir.path()).unwrap().set_aux("hnsw:plain", b"stale").unwrap();
    let reopen =
        || Engine::new(SqliteStore::open(dir.path()).unwrap()).with_embedder(Arc::clone(&model));
    let mut scanning = reopen();
    let scanned = recall(&scanning, &queries, "exact=false");
    assert_eq!(codes_graph_bytes(&scanning), None, "a stale graph is not walked");
    assert!(scanned >= 0.99, "int8 scan: recall@10 = {scanned}");
    assert!(
        scanning.writer().refresh_vector_index().unwrap(),
        "the int8 representation's graph is rebuilt"
    );
    assert!(!scanning.writer().refresh_vector_index().unwrap(), "and current once saved");
    let rebuilt = reopen();
    let again = recall(&rebuilt, &queries, "exact=false");
    assert!(codes_graph_bytes(&rebuilt).is_some(), "the rebuilt graph is walked");
    assert!(again >= 0.99, "int8 through the rebuilt graph: recall@10 = {again}");
}

#[test]
#[ignore = "real tier (scripts/test.sh): installed models and ../shared/data"]
fn hnsw_finds_what_exact_search_finds() {
    let dir = tempfile::tempdir().unwrap();
    let (engine, queries, model) = wiki_sentences(dir.path());
    let search = |engine: &Engine<SqliteStore>, q: &str, exact: bool| -> Vec<i64> {
        top10(engine, q, if exact { "exact=true" } else { "exact=false" })
    };
    let recall = recall(&engine, &queries, "exact=false");
    eprintln!("HNSW recall@10 against exact search: {recall:.4} over {} queries", queries.len());
    assert!(recall >= 0.95, "recall@10 = {recall}");
    // A reopened store uses the persisted graph; the same queries give the same results.
    let reopened =
        Engine::new(SqliteStore::open(dir.path()).unwrap()).with_embedder(Arc::clone(&model));
    for q in queries.iter().take(20) {
        assert_eq!(search(&reopened, q, false), search(&engine, q, false));
    }

    // A server's engines: the writer leaves the graph to a background build. After a write
    // the stored graph lacks the new row, which queries scan exactly (the new document is
    // found) beside the graph's walk; stopping, the server freezes it into a segment of its
    // own and saves that, not the whole graph again.
    let mut writer = Engine::new(SqliteStore::open(dir.path()).unwrap())
        .with_embedder(Arc::clone(&model))
        .with_background_index();
    let reader = writer.reader(SqliteStore::open(dir.path()).unwrap());
    assert!(reader.vectors().build().unwrap().is_empty(), "it holds the saved graph");
    let probe = "Quokkas are small wallabies that smile for photographs on Rottnest Island.";
    let mut ingest = writer.writer().ingest(&"sentences".parse().unwrap()).unwrap();
    ingest.add(Document::new("quokka", "Quokka", probe)).unwrap();
    let report = ingest.finish().unwrap();
    assert!(!report.vector_index_built, "the writer leaves the graph to the background");
    let top = |engine: &Engine<SqliteStore>| -> String {
        let strategy = Strategy { mode: Mode::Dense, k: 1, ..Strategy::default() };
        let req = SearchRequest::new(probe).with_strategy(strategy);
        engine.search(&req).unwrap().results[0].doc_id.clone()
    };
    assert_eq!(top(&reader), "quokka", "stale graph: an exact scan finds the new document");
    let q = &queries[0];
    assert_eq!(search(&reader, q, false), search(&reader, q, true), "the new row is scanned");
    let whole = writer.store().aux("hnsw:plain").unwrap();
    assert!(reader.vectors().build().unwrap().is_empty(), "one row is too few to freeze");
    let last = reader.vectors().compact().unwrap();
    assert_eq!(last.len(), 1, "stopping freezes it into a segment");
    writer.writer().save_vector_index(last).unwrap();
    assert!(reader.vectors().build().unwrap().is_empty(), "and current once saved");
    assert_eq!(writer.store().aux("hnsw:plain").unwrap(), whole, "the whole graph is kept");
    assert_eq!(top(&reader), "quokka", "the segment has it");
    let next = Engine::new(SqliteStore::open(dir.path()).unwrap()).with_embedder(model);
    assert_eq!(top(&next), "quokka", "and a new process reads it");
}

#[test]
#[ignore = "real tier (scripts/test.sh): installed models and ../shared/data"]
fn adding_to_a_store_keeps_its_stored_graph_and_saves_only_the_change() {
    let dir = tempfile::tempdir().unwrap();
    let (mut engine, queries, model) = wiki_sentences(dir.path());
    // The stored graph keeps the chunk ids it was built over, after its stamp.
    let blob = engine.store().aux("hnsw:plain").unwrap().unwrap();
    assert_eq!(&blob[32..36], b"IDS1");
    // 30 documents removed, their texts added again under new ids, and one new document.
    let ids = engine.store().document_ids().unwrap();
    let gone = &ids[100..130];
    let copies = copies_of(&engine, gone);
    let probe = "Quokkas are small wallabies that smile for photographs on Rottnest Island.";
    let mut ingest = engine.writer().ingest(&"sentences".parse().unwrap()).unwrap();
    ingest.remove(gone.iter().cloned());
    for d in copies {
        ingest.add(d).unwrap();
    }
    ingest.add(Document::new("quokka", "Quokka", probe)).unwrap();
    let report = ingest.finish().unwrap();
    assert!(report.vector_index_built, "the removed rows are saved as tombstones");
    assert_eq!(engine.store().aux("hnsw:plain").unwrap(), Some(blob), "the graph is kept");
    // A new process finds the saved state current, and searches the changed rows: the
    // stored graph without the removed ones, and the new ones (too few to freeze) scanned.
    let next = Engine::new(SqliteStore::open(dir.path()).unwrap()).with_embedder(model);
    assert!(next.vectors().build().unwrap().is_empty(), "nothing more to save");
    let after = recall(&next, &queries, "exact=false");
    eprintln!("recall@10 {after:.4} on the stored graph with the changed rows");
    assert!(after >= 0.95, "recall@10 = {after}");
    let strategy = Strategy { mode: Mode::Dense, k: 10, ..Strategy::default() };
    let req = SearchRequest::new(probe).with_strategy(strategy);
    let found: Vec<String> =
        next.search(&req).unwrap().results.into_iter().map(|r| r.doc_id).collect();
    assert_eq!(found[0], "quokka");
    assert!(found.iter().all(|d| !gone.contains(d)), "{found:?}");
}

#[test]
#[ignore = "real tier (scripts/test.sh): installed models and ../shared/data"]
fn a_server_keeps_approximate_search_through_ten_thousand_changes() {
    let dir = tempfile::tempdir().unwrap();
    let (_, queries, model) = wiki_sentences(dir.path());
    let mut writer = Engine::new(SqliteStore::open(dir.path()).unwrap())
        .with_embedder(Arc::clone(&model))
        .with_background_index();
    let reader = writer.reader(SqliteStore::open(dir.path()).unwrap());
    assert!(reader.vectors().build().unwrap().is_empty(), "the ingest persisted the graph");
    let before = recall(&reader, &queries, "exact=false");

    // Ten rounds, each removing 140 documents and adding 140 (their texts under new ids):
    // about 10,000 vector changes in all. After each round the reader applies the change log
    // and the server's indexer makes a pass: it freezes every 4,096 rows written since into a
    // segment with a graph of its own and saves what is new (segments, removed rows), never
    // the whole graph again.
    let ids = writer.store().document_ids().unwrap();
    let (mut removed, mut added, mut saved) = (0, 0, 0);
    let whole = writer.store().aux("hnsw:plain").unwrap().unwrap();
    let graph_bytes = || {
        let memory = reader.vectors().memory();
        memory.iter().find(|(k, _)| k == "plain:hnsw").map_or(0, |(_, b)| *b)
    };
    for round in 0..10 {
        let gone: Vec<String> = ids[round * 140..(round + 1) * 140].to_vec();
        let docs = copies_of(&writer, &gone);
        removed += gone.iter().map(|id| writer.store().chunks_of(id).unwrap().len()).sum::<usize>();
        let mut ingest = writer.writer().ingest(&"sentences".parse().unwrap()).unwrap();
        ingest.remove(gone.iter().cloned());
        for d in docs {
            ingest.add(d).unwrap();
        }
        added += ingest.finish().unwrap().vectors as usize;
        // Searchable at once: the first sentence of a new copy is its own best match, and no
        // removed document comes back.
        let probe = writer.store().document(&format!("copy-{}", gone[0])).unwrap().unwrap();
        let strategy = Strategy { mode: Mode::Dense, k: 10, ..Strategy::default() };
        let first = probe.document.text.split(". ").next().unwrap().to_string();
        let req = SearchRequest::new(first).with_strategy(strategy);
        let found: Vec<String> =
            reader.search(&req).unwrap().results.into_iter().map(|r| r.doc_id).collect();
        assert!(found.contains(&probe.document.id), "round {round}: {found:?}");
        assert!(found.iter().all(|d| !gone.contains(d)), "round {round}: {found:?}");
        let persisted = reader.vectors().build().unwrap();
        assert!(persisted.len() <= 1, "round {round}: one save");
        let bytes: usize = persisted.iter().map(ckeep_engine::VectorIndexBuild::bytes).sum();
        assert!(bytes < whole.len() / 3, "round {round}: {bytes} bytes, not the whole graph");
        saved += persisted.len();
        writer.writer().save_vector_index(persisted).unwrap();
    }
    assert!(removed + added >= 9_000, "{removed} removed, {added} added");
    assert_eq!(saved, 10, "each pass saves its change");
    assert_eq!(writer.store().aux("hnsw:plain").unwrap().unwrap(), whole, "the graph is kept");
    let graphs = graph_bytes();
    let after = recall(&reader, &queries, "exact=false");
    eprintln!(
        "recall@10 {before:.4} before and {after:.4} after {removed} removals and {added} \
         additions ({graphs} graph bytes in memory)"
    );
    assert!(after >= 0.99, "recall@10 after the changes: {after}");

    // Stopping, a server freezes the rows written since the last segment into one and saves
    // it: a new process finds every row in a saved graph (nothing to build) and searches them
    // as well. Before, `check` sees the saved segments behind by those rows, not damaged.
    let behind = &writer.vectors().check().unwrap()[0];
    assert!(!behind.current && behind.problem.is_none() && behind.segments >= 1, "{behind:?}");
    assert!(behind.missing > Some(0) && behind.removed == Some(0), "{behind:?}");
    let last = reader.vectors().compact().unwrap();
    assert_eq!(last.len(), 1, "the rows written since the last segment");
    writer.writer().save_vector_index(last).unwrap();
    let saved = &writer.vectors().check().unwrap()[0];
    assert!(saved.current && saved.missing == Some(0) && saved.problem.is_none(), "{saved:?}");
    let next = Engine::new(SqliteStore::open(dir.path()).unwrap()).with_embedder(model);
    assert!(next.vectors().build().unwrap().is_empty(), "the saved graph is current");
    let restarted = recall(&next, &queries, "exact=false");
    eprintln!("recall@10 {restarted:.4} in a new process, on the saved graph");
    assert!(restarted >= 0.95, "recall@10 on the saved graph: {restarted}");
    // A damaged graph is a problem `check` reports (and the next build replaces).
    let mut damaged = Engine::new(SqliteStore::open(dir.path()).unwrap());
    let blob = damaged.store().aux("hnsw:plain").unwrap().unwrap();
    damaged.store_mut().set_aux("hnsw:plain", &blob[..blob.len() - 1000]).unwrap();
    let problem = damaged.vectors().check().unwrap()[0].problem.clone();
    assert_eq!(problem.as_deref(), Some("the stored graph cannot be read"));
}

#[test]
#[ignore = "real tier (scripts/test.sh): installed models and ../shared/data"]
fn a_server_keeps_int8_codes_on_graphs_through_ten_thousand_changes() {
    let dir = tempfile::tempdir().unwrap();
    let (mut setup, queries, model) = wiki_sentences(dir.path());
    setup.writer().set_quantization(None, Quantization::Int8).unwrap();
    let mut writer = Engine::new(SqliteStore::open(dir.path()).unwrap())
        .with_embedder(Arc::clone(&model))
        .with_background_index();
    let reader = writer.reader(SqliteStore::open(dir.path()).unwrap());
    let before = recall(&reader, &queries, "exact=false");
    let first_graph = codes_graph_bytes(&reader).expect("the codes walk the stored graph");

    // Ten rounds of 140 documents removed and 140 added under new ids, as above; after each,
    // the server's indexer pass: the rows written since wait in the scanned tail until there
    // are enough to freeze into a segment with a graph of its own; what it changed is saved,
    // never the whole graph.
    let whole = writer.store().aux("hnsw:plain").unwrap().unwrap();
    let ids = writer.store().document_ids().unwrap();
    let mut changes = 0;
    for round in 0..10 {
        let gone: Vec<String> = ids[round * 140..(round + 1) * 140].to_vec();
        let docs = copies_of(&writer, &gone);
        changes += gone.iter().map(|id| writer.store().chunks_of(id).unwrap().len()).sum::<usize>();
        let mut ingest = writer.writer().ingest(&"sentences".parse().unwrap()).unwrap();
        ingest.remove(gone.iter().cloned());
        for d in docs {
            ingest.add(d).unwrap();
        }
        changes += ingest.finish().unwrap().vectors as usize;
        let probe = writer.store().document(&format!("copy-{}", gone[0])).unwrap().unwrap();
        let first = probe.document.text.split(". ").next().unwrap().to_string();
        let strategy = Strategy { mode: Mode::Dense, k: 10, ..Strategy::default() };
        let req = SearchRequest::new(first).with_strategy(strategy);
        let found: Vec<String> =
            reader.search(&req).unwrap().results.into_iter().map(|r| r.doc_id).collect();
        assert!(found.contains(&probe.document.id), "round {round}: {found:?}");
        assert!(found.iter().all(|d| !gone.contains(d)), "round {round}: {found:?}");
        let persisted = reader.vectors().build().unwrap();
        let bytes: usize = persisted.iter().map(ckeep_engine::VectorIndexBuild::bytes).sum();
        assert!(bytes < whole.len() / 3, "round {round}: {bytes} bytes, not the whole graph");
        writer.writer().save_vector_index(persisted).unwrap();
    }
    assert_eq!(writer.store().aux("hnsw:plain").unwrap().unwrap(), whole, "the graph is kept");
    assert!(changes >= 9_000, "{changes} changes");
    let graphs = codes_graph_bytes(&reader).unwrap();
    assert!(
        graphs > first_graph,
        "the frozen rows got graphs: {graphs} bytes, {first_graph} before"
    );
    let after = recall(&reader, &queries, "exact=false");
    eprintln!(
        "int8 recall@10 {before:.4} before and {after:.4} after {changes} changes; graphs \
         {first_graph} then {graphs} bytes"
    );
    assert!(after >= 0.99, "int8 recall@10 after the changes: {after}");

    // Stopping, the server saves the rest: a new process walks the saved graphs with its codes.
    let last = reader.vectors().compact().unwrap();
    writer.writer().save_vector_index(last).unwrap();
    let saved = &writer.vectors().check().unwrap()[0];
    assert!(saved.current && saved.segments >= 1 && saved.problem.is_none(), "{saved:?}");
    let next = Engine::new(SqliteStore::open(dir.path()).unwrap()).with_embedder(model);
    let restarted = recall(&next, &queries, "exact=false");
    let walked = codes_graph_bytes(&next).unwrap_or(0);
    eprintln!("int8 recall@10 {restarted:.4} in a new process, walking {walked} graph bytes");
    assert!(walked > first_graph, "the saved segments' graphs are walked: {walked} bytes");
    assert!(restarted >= 0.99, "int8 recall@10 on the saved graphs: {restarted}");
}
