//! The rerank stage against a `/rerank` server: the top `rerank_k` BM25 results go to the
//! server with the query, come back with scores, and are reordered by them; the rest keep their
//! order; server failures are clear errors. The server (mockito for the HTTP) scores each text
//! by 1 − the cosine of the deterministic test embedder's vectors to the query's: an order
//! surely unlike BM25's, so the reordering shows. This tests the protocol and the reordering,
//! not ranking quality (no cross-encoder weights ship in a package this machine can install);
//! the last test puts a real model behind the server, on real SciFact results.

use std::sync::{Arc, Mutex};

use ckeep_core::Document;
use ckeep_embed::{Embedder, HashingEmbedder, InputKind};
use ckeep_engine::{Engine, Error, SearchRequest, Strategy};
use ckeep_store::SqliteStore;

const DOCS: [(&str, &str); 6] = [
    ("owls", "Owls hunt at night on soft feathers and swallow their prey whole."),
    ("larks", "Larks sing at dawn over the fields, and owls are asleep by then."),
    ("tea", "Oolong tea is partly oxidised; owls have nothing to do with it."),
    ("rivers", "Rivers carry water and silt from the mountains down to the sea."),
    ("night", "The night is long in winter; owls and bats are about."),
    ("feathers", "Feathers keep birds warm and let owls fly without a sound."),
];

fn engine() -> Engine<SqliteStore> {
    let mut engine = Engine::new(SqliteStore::in_memory().unwrap());
    let mut ingest = engine.writer().ingest(&"whole".parse().unwrap()).unwrap();
    for (id, text) in DOCS {
        ingest.add(Document::new(id, id, text)).unwrap();
    }
    ingest.finish().unwrap();
    engine
}

/// The cosine of each text's vector to the query's, under `model`.
fn cosines(model: &dyn Embedder, query: &str, texts: &[String]) -> Vec<f32> {
    let (q, _) = model.embed(&[query], InputKind::Query).unwrap();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let (d, _) = model.embed(&refs, InputKind::Document).unwrap();
    d.iter().map(|v| v.iter().zip(&q[0]).map(|(a, b)| a * b).sum::<f32>()).collect()
}

/// What the server scores with: 1 − the cosine of the test embedder's vectors.
fn server_scores(query: &str, texts: &[String]) -> Vec<f32> {
    cosines(&HashingEmbedder::new(256), query, texts).iter().map(|c| 1.0 - c).collect()
}

/// The indices of `scores`, highest score first.
fn best_first(scores: &[f32]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..scores.len()).collect();
    order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]));
    order
}

/// A `/rerank` server answering in Cohere's shape (or TEI's, with `tei`) with `score`'s
/// scores; it keeps the bodies.
fn server(
    tei: bool,
    score: impl Fn(&str, &[String]) -> Vec<f32> + Send + Sync + 'static,
) -> (mockito::ServerGuard, String, Arc<Mutex<Vec<serde_json::Value>>>) {
    let mut server = mockito::Server::new();
    let url = format!("{}/v1#test-reranker", server.url());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    server
        .mock("POST", "/v1/rerank")
        .with_header("content-type", "application/json")
        .with_body_from_request(move |req| {
            let body: serde_json::Value = serde_json::from_slice(req.body().unwrap()).unwrap();
            let texts: Vec<String> = serde_json::from_value(body["documents"].clone()).unwrap();
            let scores = score(body["query"].as_str().unwrap(), &texts);
            log.lock().unwrap().push(body);
            let items: Vec<serde_json::Value> = scores
                .iter()
                .enumerate()
                .map(|(i, s)| {
                    if tei {
                        serde_json::json!({"index": i, "score": s})
                    } else {
                        serde_json::json!({"index": i, "relevance_score": s})
                    }
                })
                .collect();
            let answer =
                if tei { serde_json::json!(items) } else { serde_json::json!({"results": items}) };
            answer.to_string().into()
        })
        .create();
    (server, url, seen)
}

fn request(query: &str, spec: &str) -> SearchRequest {
    SearchRequest::new(query).with_strategy(spec.parse::<Strategy>().unwrap())
}

#[test]
fn the_top_results_are_reordered_by_the_servers_scores() {
    let engine = engine();
    for tei in [false, true] {
        let (_guard, url, seen) = server(tei, server_scores);
        let query = "owls hunt at night";
        let first = engine.search(&request(query, "k=6")).unwrap();
        let ids = |r: &ckeep_engine::SearchResponse| -> Vec<String> {
            r.results.iter().map(|x| x.doc_id.clone()).collect()
        };
        let reranked =
            engine.search(&request(query, &format!("k=3,rerank={url},rerank_k=4"))).unwrap();
        // The server saw the first stage's top 4, in order, and the model it was named.
        let body = seen.lock().unwrap().last().cloned().unwrap();
        let sent: Vec<String> = serde_json::from_value(body["documents"].clone()).unwrap();
        let top4: Vec<String> = first.results[..4].iter().map(|r| r.text.clone()).collect();
        assert_eq!(sent, top4);
        assert_eq!(body["model"], "test-reranker");
        assert_eq!(body["query"], query);
        // Those four sorted by the server's scores, cut to k = 3, ranks renumbered.
        let scores = server_scores(query, &top4);
        let order = best_first(&scores);
        let want: Vec<String> =
            order[..3].iter().map(|&i| first.results[i].doc_id.clone()).collect();
        assert_eq!(ids(&reranked), want, "tei shape: {tei}");
        assert_ne!(want, ids(&first)[..3], "the server's order differs from BM25's here");
        assert_eq!(reranked.results.iter().map(|r| r.rank).collect::<Vec<_>>(), [1, 2, 3]);
        assert!((reranked.results[0].score - scores[order[0]]).abs() < 1e-6);
        assert!(reranked.strategy.contains("rerank=") && reranked.strategy.contains("rerank_k=4"));
        // With k above rerank_k, the results past it keep the first stage's order.
        let wide = engine.search(&request(query, &format!("k=6,rerank={url},rerank_k=2"))).unwrap();
        assert_eq!(ids(&wide)[2..], ids(&first)[2..]);
    }
}

#[test]
fn a_failing_or_confused_server_is_a_clear_error() {
    let engine = engine();
    let mut server = mockito::Server::new();
    server.mock("POST", "/down/rerank").with_status(503).with_body("overloaded").create();
    server
        .mock("POST", "/short/rerank")
        .with_body(r#"{"results": [{"index": 0, "relevance_score": 1.0}]}"#)
        .create();
    let spec = |path: &str| format!("k=3,rerank={}/{path}", server.url());
    match engine.search(&request("owls", &spec("down"))) {
        Err(Error::Server(m)) => assert!(m.contains("503") && m.contains("overloaded"), "{m}"),
        other => panic!("{other:?}"),
    }
    match engine.search(&request("owls", &spec("short"))) {
        Err(Error::Server(m)) => assert!(m.contains("no score for candidate 1"), "{m}"),
        other => panic!("{other:?}"),
    }
    match engine.search(&request("owls", "k=3,rerank=ftp://nowhere")) {
        Err(e) => assert!(e.is_user_error(), "{e}"),
        Ok(r) => panic!("{r:?}"),
    }
    assert!("rerank=".parse::<Strategy>().is_err());
    assert!("rerank=http://h,rerank_k=0".parse::<Strategy>().is_err());
}

/// A `/rerank` server in front of a real model (all-MiniLM-L6-v2, scoring each text by its
/// cosine to the query: a bi-encoder, not a cross-encoder, so nothing here is a claim about
/// ranking quality) reorders real SciFact results: BM25's top 20 for a real claim come back in
/// the order of the cosines the test computes itself with the model.
#[test]
#[ignore = "real tier (scripts/test.sh): installed models and ../shared/data"]
fn a_server_with_a_real_model_reorders_real_results() {
    let data = std::env::var_os("CKEEP_DATA").map_or_else(
        || std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data"),
        std::path::PathBuf::from,
    );
    let model = ckeep_embed::load("all-MiniLM-L6-v2").expect("ckeep model pull all-MiniLM-L6-v2");
    let mut engine = Engine::new(SqliteStore::in_memory().unwrap());
    let mut ingest = engine.writer().ingest(&"whole".parse().unwrap()).unwrap();
    let corpus = std::fs::read_to_string(data.join("beir_scifact/corpus.jsonl")).unwrap();
    for line in corpus.lines().take(2000) {
        let doc: serde_json::Value = serde_json::from_str(line).unwrap();
        let (id, text) = (doc["_id"].as_str().unwrap(), doc["text"].as_str().unwrap());
        ingest.add(Document::new(id, id, text)).unwrap();
    }
    ingest.finish().unwrap();
    let served = Arc::clone(&model);
    let (_guard, url, _) =
        server(false, move |query, texts| cosines(served.as_ref(), query, texts));
    let query = "Vitamin D deficiency is associated with an increased risk of depression.";
    let first = engine.search(&request(query, "k=20")).unwrap();
    assert_eq!(first.results.len(), 20, "BM25 finds twenty abstracts");
    let reranked =
        engine.search(&request(query, &format!("k=20,rerank={url},rerank_k=20"))).unwrap();
    let texts: Vec<String> = first.results.iter().map(|r| r.text.clone()).collect();
    let order = best_first(&cosines(model.as_ref(), query, &texts));
    let want: Vec<&str> = order.iter().map(|&i| first.results[i].doc_id.as_str()).collect();
    let got: Vec<&str> = reranked.results.iter().map(|r| r.doc_id.as_str()).collect();
    assert_eq!(got, want);
    assert_ne!(
        got[..5],
        first.results[..5].iter().map(|r| r.doc_id.as_str()).collect::<Vec<_>>()[..]
    );
}
