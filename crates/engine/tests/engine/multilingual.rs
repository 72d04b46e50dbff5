//! Chinese through the engine with real models and real data (`../shared/data/zh`):
//! 1. chunk sizes in model tokens (`unit=tokens`) hold for every chunk, counted by the model's
//!    own tokenizer, for English (all-MiniLM-L6-v2) and Chinese (multilingual-e5-small);
//! 2. dense search with multilingual-e5-small finds DRCD questions' articles, in Traditional and
//!    Simplified characters, and a Traditional question finds the same article in a
//!    Simplified store;
//! 3. the `jieba` analyzer ranks the same articles first with BM25.

use std::sync::Arc;

use ckeep_core::Document;
use ckeep_embed::Embedder;
use ckeep_engine::{AnalyzerChoice, Engine, SearchRequest, Strategy};
use ckeep_store::{SqliteStore, StoreRead};
use ckeep_text::ChunkerSpec;

use ckeep_testkit::{data_dir, model};

/// The first `n` articles of a long-document split, and the first question of each.
fn split(set: &str, n: usize) -> (Vec<Document>, Vec<(String, String)>) {
    let dir = data_dir().join("zh/retrieval").join(set).join("dev");
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap();
    let docs: Vec<Document> = read("docs.jsonl")
        .lines()
        .take(n)
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            Document::new(
                v["doc_id"].as_str().unwrap(),
                v["title"].as_str().unwrap(),
                v["text"].as_str().unwrap(),
            )
        })
        .collect();
    let mut questions: Vec<(String, String)> = Vec::new();
    for l in read("queries.jsonl").lines() {
        let v: serde_json::Value = serde_json::from_str(l).unwrap();
        let doc = v["doc_id"].as_str().unwrap().to_string();
        if docs.iter().any(|d| d.id == doc) && !questions.iter().any(|(_, d)| *d == doc) {
            questions.push((v["question"].as_str().unwrap().to_string(), doc));
        }
    }
    (docs, questions)
}

fn index(
    docs: &[Document],
    chunker: &str,
    model: Option<Arc<dyn Embedder>>,
) -> Engine<SqliteStore> {
    let mut engine = Engine::new(SqliteStore::in_memory().unwrap())
        .with_analyzer(AnalyzerChoice::Fixed(ckeep_engine::Analyzer::Jieba));
    if let Some(m) = model {
        engine = engine.with_embedder(m);
    }
    let mut ingest = engine.writer().ingest(&chunker.parse().unwrap()).unwrap();
    for d in docs {
        ingest.add(d.clone()).unwrap();
    }
    ingest.finish().unwrap();
    engine
}

/// The share of questions whose article ranks first.
fn hit_at_1(engine: &Engine<SqliteStore>, questions: &[(String, String)], mode: &str) -> f64 {
    let strategy: Strategy = format!("mode={mode},level=doc,k=1,exact=true").parse().unwrap();
    let hits = questions
        .iter()
        .filter(|(q, doc)| {
            let mut req = SearchRequest::new(q.as_str());
            req.strategy = Some(strategy.clone());
            engine.search(&req).unwrap().results.first().is_some_and(|r| r.doc_id == *doc)
        })
        .count();
    hits as f64 / questions.len() as f64
}

#[test]
#[ignore = "real tier (scripts/test.sh): installed models and ../shared/data"]
fn chunk_sizes_in_model_tokens_hold_for_every_chunk() {
    let squad =
        std::fs::read_to_string(data_dir().join("squad_dev/longdoc-v1.1.docs.jsonl")).unwrap();
    let v: serde_json::Value = serde_json::from_str(squad.lines().next().unwrap()).unwrap();
    let english = vec![Document::new("en", "", v["text"].as_str().unwrap())];
    let (chinese, _) = split("drcd", 5);
    for (docs, name, max) in
        [(english, "all-MiniLM-L6-v2", 48), (chinese, "multilingual-e5-small", 64)]
    {
        let model = model(name);
        let spec = format!("markdown:{max},unit=tokens");
        let engine = index(&docs, &spec, Some(Arc::clone(&model)));
        let mut chunks = 0;
        for d in &docs {
            let stored = engine.store().chunks_of(&d.id).unwrap();
            for c in stored.iter().map(|c| &c.chunk).filter(|c| c.leaf) {
                let tokens = model.count_text_tokens(c.span.slice(&d.text)).unwrap();
                assert!(tokens <= max, "{name}: a chunk of {tokens} tokens over {max}");
                chunks += 1;
            }
        }
        // The unit is real: counted in words the same spec cuts differently.
        let words: ChunkerSpec = format!("markdown:{max}").parse().unwrap();
        let by_words = docs
            .iter()
            .map(|d| words.chunk(&d.text, &ckeep_text::WordCounter).len())
            .sum::<usize>();
        assert_ne!(chunks, by_words, "{name}: tokens and words give other chunks");
        assert_eq!(engine.store().manifest().unwrap().chunker.unwrap(), spec);
    }
}

#[test]
#[ignore = "real tier (scripts/test.sh): installed models and ../shared/data"]
fn multilingual_dense_and_jieba_bm25_find_chinese_articles() {
    let e5 = model("multilingual-e5-small");
    let (trad, trad_questions) = split("drcd", 30);
    let (simp, simp_questions) = split("drcd_hans", 30);
    let traditional = index(&trad, "paragraphs", Some(Arc::clone(&e5)));
    let simplified = index(&simp, "paragraphs", Some(Arc::clone(&e5)));
    for (engine, questions, what) in [
        (&traditional, &trad_questions, "Traditional"),
        (&simplified, &simp_questions, "Simplified"),
    ] {
        let dense = hit_at_1(engine, questions, "dense");
        let bm25 = hit_at_1(engine, questions, "bm25");
        let hybrid = hit_at_1(engine, questions, "hybrid");
        eprintln!("{what}: hit@1 dense {dense:.3}, jieba BM25 {bm25:.3}, hybrid {hybrid:.3}");
        // 30 articles: a random ranking puts the right one first 3.3 % of the time.
        assert!(dense >= 0.7 && bm25 >= 0.7 && hybrid >= 0.7, "{what}: {dense} {bm25} {hybrid}");
    }
    // Traditional questions against the Simplified store: the model and jieba's folding both
    // bridge the two scripts.
    assert!(hit_at_1(&simplified, &trad_questions, "dense") >= 0.7);
    assert!(hit_at_1(&simplified, &trad_questions, "bm25") >= 0.7);
}
