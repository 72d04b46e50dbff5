//! Representations checked against direct computations with the real all-MiniLM-L6-v2:
//! - `late`: each chunk's vector is the normalised mean of the whole document's token vectors
//!   whose tokens start inside the chunk;
//! - `contextual`: each chunk's vector is the embedding of "title\nheadings\n\nchunk", its BM25
//!   entry indexes that text, and results still point at the chunk alone;
//! - `summary-avg:α`: the cosine of the query with (1 − α)·chunk + α·summary;
//! - summaries from an OpenAI-compatible chat server (a local one in this test) are stored as
//!   the server wrote them, and a second run asks for nothing again.

use std::sync::{Arc, Mutex};

use ckeep_core::Document;
use ckeep_embed::{Embedder, InputKind};
use ckeep_engine::{Engine, Level, Mode, Representation, SearchRequest, Strategy, Summarizer};
use ckeep_store::{Lacking, SqliteStore, StoreRead};

use ckeep_testkit::data_dir;

fn minilm() -> Arc<dyn Embedder> {
    ckeep_testkit::model("all-MiniLM-L6-v2")
}

/// The first SQuAD dev article, whole (over 512 tokens), and its first three paragraphs.
fn squad_article() -> (String, String) {
    let line = std::fs::read_to_string(data_dir().join("squad_dev/longdoc-v1.1.docs.jsonl"))
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .to_string();
    let doc: serde_json::Value = serde_json::from_str(&line).unwrap();
    let text = doc["text"].as_str().unwrap().to_string();
    let short = text.split("\n\n").take(3).collect::<Vec<_>>().join("\n\n");
    (text, short)
}

fn unit(mut v: Vec<f32>) -> Vec<f32> {
    ckeep_embed::normalize(&mut v);
    v
}

fn max_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max)
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[test]
#[ignore = "real tier (scripts/test.sh): installed models"]
fn late_vectors_are_masked_means_of_the_full_pass() {
    let model = minilm();
    let (long, short) = squad_article();
    let mut engine = Engine::new(SqliteStore::in_memory().unwrap()).with_embedder(model.clone());
    let mut ingest = engine.writer().ingest(&"paragraphs".parse().unwrap()).unwrap();
    ingest.require(&[Representation::Late], &[]).unwrap();
    ingest.add(Document::new("short", "", short.clone())).unwrap();
    ingest.add(Document::new("long", "", long.clone())).unwrap();
    let report = ingest.finish().unwrap();
    assert_eq!(report.derived[0].stage, "representation late");
    let store = engine.store();
    let late = store.vectors("late").unwrap();
    let plain = store.vectors("plain").unwrap();
    assert_eq!(late.ids, plain.ids);
    for (id, text) in [("short", &short), ("long", &long)] {
        // The full pass, computed here from the model's token vectors and their offsets.
        let tv = model.token_vectors(&[text.as_str()], InputKind::Document).unwrap().remove(0);
        assert_eq!(tv.windows > 1, id == "long", "{id}: {} windows", tv.windows);
        let chunks = store.chunks_of(id).unwrap();
        for c in chunks.iter().filter(|c| c.chunk.leaf) {
            let (s, e) = (c.chunk.span.start, c.chunk.span.end);
            let mut mean = vec![0f32; tv.dim];
            let mut n = 0;
            for (i, &(start, _)) in tv.offsets.iter().enumerate() {
                if start >= s && start < e {
                    for (m, x) in mean.iter_mut().zip(&tv.vectors[i * tv.dim..(i + 1) * tv.dim]) {
                        *m += x;
                    }
                    n += 1;
                }
            }
            assert!(n > 0);
            let want = unit(mean);
            let row = late.ids.iter().position(|x| *x == c.id).unwrap();
            assert!(max_diff(late.row(row), &want) < 1e-6, "{id} chunk {}", c.chunk.ordinal);
            // The context changes the vector: it is not the chunk read alone.
            assert!(dot(late.row(row), &unit(plain.row(row).to_vec())) < 0.999);
        }
    }
}

#[test]
#[ignore = "real tier (scripts/test.sh): installed models"]
fn contextual_text_is_embedded_and_indexed_but_spans_stay_on_the_chunk() {
    let model = minilm();
    let text =
        "# Falcons\n\nThey hunt at great speed.\n\n## Diet\n\nMostly small birds and insects.";
    let mut engine = Engine::new(SqliteStore::in_memory().unwrap()).with_embedder(model.clone());
    let mut ingest = engine.writer().ingest(&"markdown:64".parse().unwrap()).unwrap();
    let contextual: Representation = "contextual:title,headings".parse().unwrap();
    ingest.require(&[contextual], &[]).unwrap();
    ingest.add(Document::new("f", "Peregrine notes", text)).unwrap();
    ingest.finish().unwrap();
    let store = engine.store();
    let vectors = store.vectors("contextual:title,headings").unwrap();
    let leaves: Vec<_> =
        store.chunks_of("f").unwrap().into_iter().filter(|c| c.chunk.leaf).collect();
    assert_eq!(vectors.len(), leaves.len());
    for c in &leaves {
        let chunk = c.chunk.span.slice(text);
        let input = format!("Peregrine notes\n{}\n\n{chunk}", c.chunk.headings.join(" > "));
        let (want, _) = model.embed(&[input.as_str()], InputKind::Document).unwrap();
        let row = vectors.ids.iter().position(|x| *x == c.id).unwrap();
        assert!(max_diff(vectors.row(row), &want[0]) < 1e-6, "{input:?}");
    }
    // "peregrine" is only in the title: BM25 finds every chunk through the contextual field,
    // none through the plain one, and results show the chunk's own text.
    let bm25 = |repr: Representation| Strategy { repr: vec![repr], ..Strategy::default() };
    let req = SearchRequest::new("peregrine").with_strategy(bm25(contextual)).with_explain(true);
    let res = engine.search(&req).unwrap();
    assert_eq!(res.results.len(), leaves.len());
    for r in &res.results {
        assert!(!r.text.contains("Peregrine"), "{:?}", r.text);
        assert_eq!(r.text, r.spans[0].slice(text));
    }
    let plain = SearchRequest { strategy: Some(bm25(Representation::Plain)), ..req };
    assert!(engine.search(&plain).unwrap().results.is_empty());
}

#[test]
#[ignore = "real tier (scripts/test.sh): installed models"]
fn summary_average_scores_the_mixed_vector() {
    let model = minilm();
    let (_, short) = squad_article();
    let mut engine = Engine::new(SqliteStore::in_memory().unwrap()).with_embedder(model.clone());
    let mut ingest = engine.writer().ingest(&"paragraphs".parse().unwrap()).unwrap();
    ingest.require(&[Representation::SummaryAvg(250)], &[Summarizer::Lead(12)]).unwrap();
    ingest.add(Document::new("sb", "", short.clone())).unwrap();
    ingest.add(Document::new("other", "", "Falcons hunt small birds at great speed.")).unwrap();
    ingest.finish().unwrap();
    let summary = engine.store().summaries("sb").unwrap();
    let first12 = short.split_whitespace().take(12).collect::<Vec<_>>().join(" ");
    assert_eq!(summary, [("lead:12".to_string(), first12)]);
    let query = "Who won the game?";
    let strategy = Strategy {
        mode: Mode::Dense,
        repr: vec![Representation::SummaryAvg(250)],
        k: 10,
        ..Strategy::default()
    };
    let res = engine.search(&SearchRequest::new(query).with_strategy(strategy)).unwrap();
    let (q, _) = model.embed(&[query], InputKind::Query).unwrap();
    let (s, _) = model.embed(&[summary[0].1.as_str()], InputKind::Document).unwrap();
    let s = unit(s[0].clone());
    for r in res.results.iter().filter(|r| r.doc_id == "sb") {
        let (c, _) = model.embed(&[r.text.as_str()], InputKind::Document).unwrap();
        let c = unit(c[0].clone());
        let mixed = unit(c.iter().zip(&s).map(|(c, s)| 0.75 * c + 0.25 * s).collect());
        let want = dot(&unit(q[0].clone()), &mixed);
        assert!((r.score - want).abs() < 1e-5, "{} vs {want}", r.score);
    }
    // The summary alone ranks documents; fused with plain it still ranks both.
    let fused = Strategy {
        mode: Mode::Dense,
        level: Level::Doc,
        repr: vec![Representation::Plain, Representation::Summary],
        ..Strategy::default()
    };
    let res = engine.search(&SearchRequest::new(query).with_strategy(fused)).unwrap();
    assert_eq!(res.results.len(), 2);
    assert_eq!(res.results[0].doc_id, "sb");
}

/// A mock OpenAI-compatible chat server (mockito): answers each request with a summary naming
/// the title it was given, and keeps the request bodies. It lives as long as the returned guard.
fn chat_server() -> (mockito::ServerGuard, String, Arc<Mutex<Vec<serde_json::Value>>>) {
    let mut server = mockito::Server::new();
    let url = format!("{}/v1#test-model", server.url());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    server
        .mock("POST", "/v1/chat/completions")
        .with_header("content-type", "application/json")
        .with_body_from_request(move |req| {
            let req: serde_json::Value = serde_json::from_slice(req.body().unwrap()).unwrap();
            let user = req["messages"][1]["content"].as_str().unwrap_or("").to_string();
            let title = user.lines().next().unwrap_or("").trim_start_matches("Title: ").to_string();
            log.lock().unwrap().push(req);
            serde_json::json!({
                "choices": [{"message": {"role": "assistant", "content": format!(" About {title}. ")}}],
                "usage": {"prompt_tokens": 50, "completion_tokens": 7}
            })
            .to_string()
            .into()
        })
        .create();
    (server, url, seen)
}

#[test]
#[ignore = "real tier (scripts/test.sh): installed models"]
fn summaries_from_a_chat_server_are_stored_once() {
    let (_server, url, seen) = chat_server();
    let summarizer: Summarizer = format!("http:{url}").parse().unwrap();
    let mut engine = Engine::new(SqliteStore::in_memory().unwrap()).with_embedder(minilm());
    let mut ingest = engine.writer().ingest(&"sentences".parse().unwrap()).unwrap();
    ingest.require(&[Representation::Summary], std::slice::from_ref(&summarizer)).unwrap();
    ingest.add(Document::new("a", "Falcons", "Falcons hunt birds. They are fast.")).unwrap();
    ingest.add(Document::new("b", "Tea", "Tea is brewed from leaves.")).unwrap();
    let report = ingest.finish().unwrap();
    assert_eq!(report.derived[0].generated_tokens, 14);
    let name = summarizer.to_string();
    assert_eq!(engine.store().summaries("a").unwrap(), [(name.clone(), "About Falcons.".into())]);
    assert_eq!(engine.store().summaries("b").unwrap(), [(name.clone(), "About Tea.".into())]);
    let requests = seen.lock().unwrap().clone();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0]["model"], "test-model");
    assert!(
        requests[0]["messages"][1]["content"].as_str().unwrap().contains("Falcons hunt birds.")
    );
    assert_eq!(engine.store().vectors(&format!("summary:{name}")).unwrap().len(), 2);
    // Nothing is asked again: every document has its summary.
    let ingest = engine.writer().ingest(&"sentences".parse().unwrap()).unwrap();
    ingest.finish().unwrap();
    assert_eq!(seen.lock().unwrap().len(), 2);
    assert!(engine.store().documents_lacking(Lacking::Summary(&name)).unwrap().is_empty());
}

#[test]
fn a_failing_chat_server_is_named_and_nothing_is_half_written() {
    let mut server = mockito::Server::new();
    let unavailable = server
        .mock("POST", "/v1/chat/completions")
        .with_status(503)
        .with_body(r#"{"error":"model not loaded"}"#)
        .create();
    let summarizer: Summarizer = format!("http:{}/v1", server.url()).parse().unwrap();
    let mut engine = Engine::new(SqliteStore::in_memory().unwrap());
    let mut ingest = engine.writer().ingest(&"sentences".parse().unwrap()).unwrap();
    ingest.require(&[], std::slice::from_ref(&summarizer)).unwrap();
    ingest.add(Document::new("a", "", "Some text here.")).unwrap();
    let err = ingest.finish().unwrap_err().to_string();
    assert!(err.contains("503") && err.contains("model not loaded"), "{err}");
    unavailable.assert();
    // The document is stored; its summary is still to do, for the next run.
    assert!(engine.store().document("a").unwrap().is_some());
    let lacking =
        engine.store().documents_lacking(Lacking::Summary(&summarizer.to_string())).unwrap();
    assert_eq!(lacking, ["a"]);
}

#[test]
#[ignore = "real tier (scripts/test.sh): installed models"]
fn late_chunking_is_refused_up_front_for_a_static_model() {
    let potion = ckeep_embed::load("potion-base-8M").expect("ckeep model pull potion-base-8M");
    let mut engine = Engine::new(SqliteStore::in_memory().unwrap()).with_embedder(potion);
    let mut ingest = engine.writer().ingest(&"sentences".parse().unwrap()).unwrap();
    let err = ingest.require(&[Representation::Late], &[]).unwrap_err().to_string();
    assert!(err.contains("late chunking") && err.contains("model2vec"), "{err}");
    assert!(engine.store().manifest().unwrap().representations.iter().all(|r| r != "late"));
}
