//! Filtered search at 100k chunks (issue 47): latency of filters keeping 0.1 %, 1 % and 50 %
//! of the documents against unfiltered search, per mode, and dense recall@10 against brute
//! force (every vector scored, other documents dropped), beside what post-filtering the
//! unfiltered top 100 would keep (how a retriever that filters after the cut loses results).
//! A chunk whose score ties the 10th result's (to 1e-5) counts as found: with ties at the cut
//! either is the top 10. Every query of a row repeats its filter, so the engine answers the filter once per store
//! generation (its filter cache); "filter evaluation" is what answering it costs the first
//! query: the store's pushed-down read of the matching documents.
//!
//! Collection: the latency benchmark's (`SciFact` abstracts, `SQuAD` long documents,
//! `WikiText-2`, Wikipedia summaries) cut into sentences and embedded with potion-base-8M, whose
//! query embedding takes microseconds, so a latency is the search's. Each document gets
//! `bucket` = its position modulo 1,000. Queries: the first 500 of the latency benchmark's.
//!
//! Run: `cargo bench -p ckeep-engine --bench filters` (needs `ckeep model pull potion-base-8M`).

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Instant;

use ckeep_core::ChunkId;
use ckeep_embed::{Embedder, InputKind};
use ckeep_engine::{Engine, MetadataFilter, SearchRequest, Strategy};
use ckeep_index::dot_all;
use ckeep_store::{SqliteStore, StoreRead, VectorMatrix};
use serde_json::json;

mod common;

use common::{corpus, data_dir, measure, queries};

const MODEL: &str = "potion-base-8M";
const QUERIES: usize = 500;

/// The exact filtered top 10 (with scores) and the top 10 left after filtering the unfiltered
/// top 100.
fn exact_and_post_filtered(
    m: &VectorMatrix,
    q: &[f32],
    allowed: &HashSet<ckeep_core::DocKey>,
) -> (Vec<(ChunkId, f32)>, Vec<ChunkId>) {
    let scores = dot_all(&m.data, m.dim, q);
    let mut order: Vec<usize> = (0..m.len()).collect();
    order.sort_unstable_by(|&a, &b| scores[b].total_cmp(&scores[a]));
    let exact = order.iter().filter(|&&i| allowed.contains(&m.docs[i])).take(10);
    let post = order.iter().take(100).filter(|&&i| allowed.contains(&m.docs[i])).take(10);
    (exact.map(|&i| (m.ids[i], scores[i])).collect(), post.map(|&i| m.ids[i]).collect())
}

/// How many of the exact top 10 `got` holds, counting a chunk tied with `got`'s last score
/// (equal to rounding) as held: with ties at the cut, either one is the top 10.
fn held(exact: &[(ChunkId, f32)], got: &[(ChunkId, f32)]) -> usize {
    let last = got.last().map_or(f32::MAX, |g| g.1);
    exact.iter().filter(|(c, s)| got.iter().any(|g| g.0 == *c) || (s - last).abs() < 1e-5).count()
}

/// The collection in a store under `dir`, each document given its `bucket`; the number of
/// documents.
fn build(dir: &std::path::Path, model: &Arc<dyn Embedder>) -> usize {
    let data = data_dir();
    let started = Instant::now();
    let mut engine =
        Engine::new(SqliteStore::open_or_create(dir).unwrap()).with_embedder(Arc::clone(model));
    let mut ingest = engine.writer().ingest(&"sentences".parse().unwrap()).unwrap();
    let docs = corpus(&data);
    let documents = docs.len();
    for (i, mut d) in docs.into_iter().enumerate() {
        d.metadata = json!({ "bucket": i % 1000 });
        ingest.add(d).unwrap();
    }
    let report = ingest.finish().unwrap();
    println!(
        "{documents} documents, {} chunks embedded with {MODEL} in {:.0} s; {} cores",
        report.chunks,
        started.elapsed().as_secs_f64(),
        std::thread::available_parallelism().map_or(1, std::num::NonZero::get)
    );
    documents
}

fn main() {
    let data = data_dir();
    let model = ckeep_embed::load(MODEL).expect("ckeep model pull potion-base-8M");
    let dir = tempfile::tempdir().unwrap();
    let documents = build(dir.path(), &model);
    let engine = Engine::new(SqliteStore::open(dir.path()).unwrap()).with_embedder(model.clone());
    let queries: Vec<String> = queries(&data).into_iter().take(QUERIES).collect();
    let mut m = engine.store().vectors("plain").unwrap();
    m.data.chunks_mut(m.dim).for_each(ckeep_embed::normalize);
    let vectors: Vec<Vec<f32>> = queries
        .iter()
        .map(|q| {
            let mut v = model.embed(&[q.as_str()], InputKind::Query).unwrap().0.remove(0);
            ckeep_embed::normalize(&mut v);
            v
        })
        .collect();

    let filters = [("none", None), ("0.1 %", Some("bucket = 7")), ("1 %", Some("bucket < 10"))];
    let filters = filters.into_iter().chain([("50 %", Some("bucket < 500"))]);
    println!("{} queries, top 10 chunks with text", queries.len());
    println!();
    println!(
        "| filter | documents kept | chunks kept | dense plan | dense p50 ms | vs none | bm25 p50 ms | vs none | hybrid p50 ms | vs none | dense recall@10 | exact=true p50 ms, recall@10 | post-filter top-100 recall@10 | filter evaluation ms |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    let mut unfiltered = [0.0f64; 3];
    for (name, text) in filters {
        let filter = text.map(|t| MetadataFilter::parse(t).unwrap());
        let allowed: HashSet<_> = match &filter {
            Some(f) => engine.store().doc_keys_where(f).unwrap().into_iter().collect(),
            None => m.docs.iter().copied().collect(),
        };
        let kept = m.docs.iter().filter(|d| allowed.contains(d)).count();
        let kept_docs = if filter.is_some() { allowed.len() } else { documents };
        let evaluation = filter.as_ref().map_or(0.0, |f| {
            let t = Instant::now();
            for _ in 0..20 {
                std::hint::black_box(engine.store().doc_keys_where(f).unwrap());
            }
            t.elapsed().as_secs_f64() * 1e3 / 20.0
        });
        let request = |q: &str, spec: &str, explain: bool| {
            SearchRequest::new(q.to_string())
                .with_strategy(spec.parse::<Strategy>().unwrap())
                .with_explain(explain)
                .with_filter(filter.clone())
        };
        let plan = engine
            .search(&request("warm up", "mode=dense,k=10", true))
            .unwrap()
            .filter
            .and_then(|p| p.dense)
            .map_or("graph (no filter)".to_string(), |by| format!("{by:?}"));
        let mut p50 = [0.0f64; 3];
        for (i, spec) in
            ["mode=dense,k=10", "mode=bm25,k=10", "mode=hybrid,k=10"].iter().enumerate()
        {
            p50[i] = measure(&queries, |q| {
                std::hint::black_box(engine.search(&request(q, spec, false)).unwrap());
            })
            .0;
        }
        if filter.is_none() {
            unfiltered = p50;
        }
        // What exactness costs: every matching chunk scored, whichever plan the filter gets.
        let exact_p50 = measure(&queries, |q| {
            std::hint::black_box(
                engine.search(&request(q, "mode=dense,k=10,exact=true", false)).unwrap(),
            );
        })
        .0;
        let (mut found, mut exact_found, mut post_found, mut wanted) = (0, 0, 0, 0);
        for (q, v) in queries.iter().zip(&vectors) {
            let (exact, post) = exact_and_post_filtered(&m, v, &allowed);
            let top = |spec: &str| -> Vec<(ChunkId, f32)> {
                let res = engine.search(&request(q, spec, false)).unwrap();
                res.results.iter().map(|r| (r.chunks[0].chunk_id, r.score)).collect()
            };
            let (got, scanned) = (top("mode=dense,k=10"), top("mode=dense,k=10,exact=true"));
            wanted += exact.len();
            found += held(&exact, &got);
            exact_found += held(&exact, &scanned);
            post_found += exact.iter().filter(|(c, _)| post.contains(c)).count();
        }
        let ratio = |i: usize| p50[i] / unfiltered[i];
        println!(
            "| {name} | {kept_docs} | {kept} ({:.2} %) | {plan} | {:.2} | {:.2}× | {:.2} | {:.2}× | {:.2} | {:.2}× | {:.4} | {exact_p50:.2}, {:.4} | {:.4} | {evaluation:.2} |",
            kept as f64 * 100.0 / m.len() as f64,
            p50[0],
            ratio(0),
            p50[1],
            ratio(1),
            p50[2],
            ratio(2),
            found as f64 / wanted.max(1) as f64,
            exact_found as f64 / wanted.max(1) as f64,
            post_found as f64 / wanted.max(1) as f64,
        );
    }
}
