//! Filtered dense search against brute force on real vectors: the 10,033 Wikipedia
//! vital-article summaries cut into sentences (36,755 chunks) and embedded with potion-base-8M,
//! each article given a `bucket` (its position modulo 1,000) and a Chinese `区` label. Filters
//! keeping 0.1 %, 1 % and 50 % of the articles must return k results whenever k matching chunks
//! exist, only matching ones, and the exact filtered top-k (the first two pre-filter, so
//! exactly; the third walks the graph, so at the graph's own recall).

use std::collections::HashSet;
use std::sync::Arc;

use ckeep_core::{ChunkId, Document};
use ckeep_embed::{CachedEmbedder, Embedder, InputKind};
use ckeep_engine::{Engine, FilteredBy, MetadataFilter, SearchRequest, Strategy};
use ckeep_store::{SqliteStore, StoreRead};
use serde_json::json;

use ckeep_testkit::data_dir;

/// The exact filtered top 10: every vector scored, those of other documents dropped.
fn brute_force(
    engine: &Engine<SqliteStore>,
    model: &dyn Embedder,
    query: &str,
    filter: &MetadataFilter,
) -> Vec<(ChunkId, f32)> {
    let allowed: HashSet<_> = engine.store().doc_keys_where(filter).unwrap().into_iter().collect();
    let (mut q, _) = model.embed(&[query], InputKind::Query).unwrap();
    let mut q = q.pop().unwrap();
    ckeep_embed::normalize(&mut q);
    let m = engine.store().vectors("plain").unwrap();
    let mut scored: Vec<(f32, ChunkId)> = (0..m.len())
        .filter(|&i| allowed.contains(&m.docs[i]))
        .map(|i| {
            let mut row = m.data[i * m.dim..(i + 1) * m.dim].to_vec();
            ckeep_embed::normalize(&mut row);
            (row.iter().zip(&q).map(|(a, b)| a * b).sum(), m.ids[i])
        })
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    scored.into_iter().take(10).map(|(s, c)| (c, s)).collect()
}

/// A filter's answer is reused while the store is unchanged, and never after a write: the
/// document added or removed is in or out of the very next search.
#[test]
fn a_write_is_seen_by_the_next_filtered_search() {
    let mut engine = Engine::new(SqliteStore::in_memory().unwrap());
    let add = |engine: &mut Engine<SqliteStore>, id: &str, lang: &str| {
        let mut ingest = engine.writer().ingest(&"sentences".parse().unwrap()).unwrap();
        let mut doc = Document::new(id, "", "The river floods in spring.");
        doc.metadata = json!({ "lang": lang });
        ingest.add(doc).unwrap();
        ingest.finish().unwrap();
    };
    add(&mut engine, "a", "en");
    add(&mut engine, "b", "de");
    let ids = |engine: &Engine<SqliteStore>| -> Vec<String> {
        let req = SearchRequest::new("river")
            .with_strategy("mode=bm25".parse().unwrap())
            .with_explain(true)
            .with_filter(Some(MetadataFilter::parse("lang = en").unwrap()));
        let res = engine.search(&req).unwrap();
        assert_eq!(res.filter.as_ref().unwrap().documents, res.results.len());
        assert_eq!(res.filter.as_ref().unwrap().dense, None, "BM25 has no dense plan");
        res.results.into_iter().map(|r| r.doc_id).collect()
    };
    assert_eq!(ids(&engine), ["a"]);
    assert_eq!(ids(&engine), ["a"]);
    add(&mut engine, "c", "en");
    assert_eq!(ids(&engine).len(), 2, "the added document passes at once");
    let mut ingest = engine.writer().ingest(&"sentences".parse().unwrap()).unwrap();
    ingest.remove(["a".to_string()]);
    ingest.finish().unwrap();
    assert_eq!(ids(&engine), ["c"], "the removed one is gone at once");
}

#[test]
#[ignore = "real tier (scripts/test.sh): installed models and ../shared/data"]
fn selective_and_broad_filters_return_the_exact_filtered_top_k() {
    let raw =
        std::fs::read_to_string(data_dir().join("wiki_vital_summaries_en/summaries_en-us.json"))
            .unwrap();
    let map: serde_json::Map<String, serde_json::Value> = serde_json::from_str(&raw).unwrap();
    let model: Arc<dyn Embedder> = Arc::new(CachedEmbedder::new(
        ckeep_embed::load("potion-base-8M").expect("ckeep model pull potion-base-8M"),
        None,
    ));
    let dir = tempfile::tempdir().unwrap();
    let mut engine =
        Engine::new(SqliteStore::open_or_create(dir.path()).unwrap()).with_embedder(model.clone());
    let mut ingest = engine.writer().ingest(&"sentences".parse().unwrap()).unwrap();
    let mut queries = Vec::new();
    for (i, (id, v)) in map.iter().enumerate() {
        let text = v["extract"].as_str().unwrap_or("");
        if text.trim().is_empty() {
            continue;
        }
        let mut doc = Document::new(id.clone(), v["title"].as_str().unwrap_or(""), text);
        doc.metadata = json!({"bucket": i % 1000, "区": if i % 2 == 0 { "东区" } else { "西区" }});
        ingest.add(doc).unwrap();
        if let Some(d) = v["description"].as_str().filter(|d| d.len() > 10 && queries.len() < 30) {
            queries.push(d.to_string());
        }
    }
    assert!(ingest.finish().unwrap().vector_index_built);

    let cases = [
        ("bucket = 7", FilteredBy::PreFilter, 1.0),
        ("bucket < 10", FilteredBy::PreFilter, 1.0),
        ("区 = 东区", FilteredBy::FilteredGraph, 0.95),
    ];
    for (text, plan, floor) in cases {
        let filter = MetadataFilter::parse(text).unwrap();
        let mut found = 0;
        for q in &queries {
            let req = SearchRequest::new(q.clone())
                .with_strategy("mode=dense,k=10".parse::<Strategy>().unwrap())
                .with_explain(true)
                .with_filter(Some(filter.clone()));
            let res = engine.search(&req).unwrap();
            let how = res.filter.as_ref().expect("explain reports the filter plan");
            assert_eq!(how.dense, Some(plan), "{text}: {how:?}");
            let want = brute_force(&engine, model.as_ref(), q, &filter);
            let got: Vec<ChunkId> = res.results.iter().map(|r| r.chunks[0].chunk_id).collect();
            assert_eq!(got.len(), want.len().min(10), "{text}: k results when k chunks match");
            // A tie at the cut (equal scores to rounding) may be broken either way.
            let last = res.results.last().map_or(f32::MAX, |r| r.score);
            found +=
                want.iter().filter(|(c, s)| got.contains(c) || (s - last).abs() < 1e-5).count();
        }
        let recall = found as f64 / (10 * queries.len()) as f64;
        eprintln!("{text}: recall@10 against brute force {recall:.4}");
        assert!(recall >= floor, "{text}: recall@10 = {recall}");
    }
    // The graph returns only the chunks asked for, so diversification must ask for its whole
    // pool: λ = 0 then takes results from below the plain top k.
    let deepest = queries
        .iter()
        .filter_map(|q| {
            let req = SearchRequest::new(q.clone())
                .with_strategy("mode=dense,k=3,diversify=mmr:0".parse::<Strategy>().unwrap())
                .with_explain(true);
            let res = engine.search(&req).unwrap();
            res.results.iter().filter_map(|r| Some(r.explain.as_ref()?.diversity?.first_rank)).max()
        })
        .max();
    assert!(deepest > Some(3), "MMR picked from the top 3 only: {deepest:?}");
}
