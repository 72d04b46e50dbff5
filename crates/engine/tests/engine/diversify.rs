//! `diversify=mmr`: near copies of the best result give way to results that say something
//! else, in English and Chinese, at chunk and document level, with similarity from stored
//! vectors or, in a store without them, from the chunks' terms; `--explain` says why.

use std::sync::Arc;

use ckeep_core::Document;
use ckeep_engine::{AnalyzerChoice, Engine, SearchRequest, SimilarityOf};
use ckeep_store::SqliteStore;

/// `(id, text)`: `a` and its two near copies, then two other relevant documents.
const ENGLISH: [(&str, &str); 5] = [
    (
        "a",
        "The Eiffel Tower in Paris is 330 metres tall and was built in 1889 for the World's Fair.",
    ),
    (
        "a~1",
        "The Eiffel Tower in Paris was built in 1889 for the World's Fair and is 330 metres tall.",
    ),
    ("a~2", "The Eiffel Tower in Paris is 330 metres tall, built in 1889 for the World's Fair."),
    (
        "b",
        "Gustave Eiffel's company designed the tower in Paris; its iron lattice weighs 7,300 tonnes.",
    ),
    ("c", "Tourists in Paris queue for the tower's lifts, which climb 276 metres to the top."),
];

const CHINESE: [(&str, &str); 5] = [
    ("a", "埃菲尔铁塔位于巴黎，高三百三十米，建于一八八九年的世界博览会。"),
    ("a~1", "埃菲尔铁塔位于巴黎，建于一八八九年的世界博览会，高三百三十米。"),
    ("a~2", "埃菲尔铁塔位于巴黎，高三百三十米，建于一八八九年。"),
    ("b", "埃菲尔的公司设计了巴黎的这座铁塔，铁架重七千三百吨。"),
    ("c", "游客在巴黎排队乘坐铁塔的电梯，电梯升到二百七十六米。"),
];

fn store(docs: &[(&str, &str)], vectors: bool, chinese: bool) -> Engine<SqliteStore> {
    let mut engine = Engine::new(SqliteStore::in_memory().unwrap());
    if chinese {
        engine = engine.with_analyzer(AnalyzerChoice::Fixed(ckeep_engine::Analyzer::Jieba));
    }
    if vectors {
        engine = engine.with_embedder(Arc::new(ckeep_embed::HashingEmbedder::new(512)));
    }
    let mut ingest = engine.writer().ingest(&"paragraphs".parse().unwrap()).unwrap();
    for (id, text) in docs {
        ingest.add(Document::new(*id, "", *text)).unwrap();
    }
    ingest.finish().unwrap();
    engine
}

fn search(
    engine: &Engine<SqliteStore>,
    query: &str,
    strategy: &str,
) -> Vec<(String, Option<ckeep_engine::Redundancy>)> {
    let req = SearchRequest::new(query).with_strategy(strategy.parse().unwrap()).with_explain(true);
    let res = engine.search(&req).unwrap();
    assert!(
        res.strategy.contains("diversify=") == strategy.contains("diversify="),
        "{}",
        res.strategy
    );
    res.results.into_iter().map(|r| (r.doc_id, r.explain.and_then(|e| e.diversity))).collect()
}

/// How many of `ids` are `a` or one of its copies.
fn family_a(results: &[(String, Option<ckeep_engine::Redundancy>)]) -> usize {
    results.iter().filter(|(id, _)| id == "a" || id.starts_with("a~")).count()
}

#[test]
fn near_copies_give_way_in_english_and_chinese() {
    for (docs, query, chinese) in [
        (&ENGLISH, "how tall is the Eiffel Tower in Paris", false),
        (&CHINESE, "巴黎埃菲尔铁塔有多高", true),
    ] {
        for vectors in [false, true] {
            let engine = store(docs, vectors, chinese);
            for level in ["doc", "chunk"] {
                let case = format!("chinese={chinese} vectors={vectors} level={level}");
                let plain = search(&engine, query, &format!("level={level},k=2"));
                assert_eq!(
                    family_a(&plain),
                    2,
                    "{case}: the copies crowd the plain top 2: {plain:?}"
                );
                assert!(plain.iter().all(|(_, d)| d.is_none()), "{case}: no diversity without mmr");
                let diverse =
                    search(&engine, query, &format!("level={level},k=2,diversify=mmr:0.5"));
                assert_eq!(
                    family_a(&diverse),
                    1,
                    "{case}: one of the family is enough: {diverse:?}"
                );
                assert_eq!(diverse[0].0, plain[0].0, "{case}: the best result stays first");
                let first = diverse[0].1.expect("explained");
                let second = diverse[1].1.expect("explained");
                assert_eq!((first.redundancy, first.similar_to, first.first_rank), (0.0, None, 1));
                assert!(second.first_rank > 2, "{case}: picked from below the copies: {second:?}");
                assert_eq!(second.similar_to, Some(1), "{case}");
                let kind = if vectors { SimilarityOf::Vectors } else { SimilarityOf::Terms };
                assert_eq!(second.similarity, kind, "{case}");
                assert!(second.describe().contains("most like #1"), "{}", second.describe());
                // λ = 1 is the plain ranking.
                let same = search(&engine, query, &format!("level={level},k=2,diversify=mmr:1"));
                let ids =
                    |r: &[(String, _)]| r.iter().map(|(id, _)| id.clone()).collect::<Vec<_>>();
                assert_eq!(ids(&same), ids(&plain), "{case}");
            }
        }
    }
}

/// Dense chunk search scores only as many chunks as it returns: with MMR it must score the
/// whole pool, or there is nothing below the top k to pick from.
#[test]
fn dense_chunk_search_picks_from_below_its_top_k() {
    let engine = store(&ENGLISH, true, false);
    let query = "how tall is the Eiffel Tower in Paris";
    let plain = search(&engine, query, "mode=dense,level=chunk,k=5");
    assert_eq!(plain.len(), 5, "every document is in the pool");
    let novel = search(&engine, query, "mode=dense,level=chunk,k=2,diversify=mmr:0");
    let second = novel[1].1.expect("explained");
    assert!(second.first_rank > 2, "λ = 0 takes the least like the first: {novel:?}");
    let at = plain.iter().position(|(id, _)| *id == novel[1].0).unwrap();
    assert_eq!(second.first_rank, at + 1, "first_rank is its rank in the plain ranking");
}

#[test]
fn a_bad_spec_is_refused_with_its_reason() {
    for (spec, needle) in [
        ("diversify=mmr:2", "from 0 to 1"),
        ("diversify=mmr:0.5:0", "whole number"),
        ("diversify=maxsim", "expected none or mmr"),
    ] {
        let err = spec.parse::<ckeep_engine::Strategy>().unwrap_err().to_string();
        assert!(err.contains(needle), "{spec}: {err}");
    }
}
