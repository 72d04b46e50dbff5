//! The playground's Evaluate view on the store: `POST /evaluate` runs what `ckeep eval
//! recommend` runs, `GET /evaluate/{id}` follows it to its recommendation, and
//! `POST /evaluate/{id}/apply` makes the winner the default every search then uses.

use ckeep_server::ServerConfig;
use serde_json::{Value, json};

use crate::common::{TestServer, assert_error, corpus, scifact, test_model};

/// Follows evaluation `id` until it is no longer running. The bound only turns a hung
/// evaluation into a failure; a slow machine waits as long as it needs below it.
async fn finished(server: &TestServer, id: u64) -> Value {
    for _ in 0..6000 {
        let (status, job) = server.get(&format!("/evaluate/{id}")).await;
        assert_eq!(status, 200, "{job}");
        if job["state"] != "running" {
            return job;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("evaluation {id} never finished");
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "real tier (scripts/test.sh): ../shared/data"]
async fn an_evaluation_recommends_and_its_winner_becomes_the_default() {
    let server = TestServer::with_model(ServerConfig::default(), test_model());
    let (status, added) = server.post("/documents", &json!({"documents": scifact(300)})).await;
    assert_eq!(status, 200, "{added}");
    let (status, started) = server
        .post("/evaluate", &json!({"count": 100, "strategies": ["mode=bm25,k1=1.2,b=0.75"]}))
        .await;
    assert_eq!(status, 202, "{started}");
    assert_eq!(started["state"], "running");
    let job = finished(&server, started["id"].as_u64().unwrap()).await;
    assert_eq!(job["state"], "done", "{job}");
    assert_eq!(job["test_set"]["queries"], 100);
    let rec = &job["recommendation"];
    // The same seeded set and candidates as the CLI's test: BM25's classic parameters win
    // with confidence over the store's default.
    assert_eq!(rec["candidates"][0]["strategy"], "mode=bm25,level=chunk,k=10");
    let winner = rec["candidates"][rec["winner"].as_u64().unwrap() as usize]["strategy"].clone();
    assert_eq!(winner, "mode=bm25,k1=1.2,b=0.75,level=chunk,k=10");
    assert_eq!(rec["confident"], true);
    let ci = &rec["candidates"][1]["margin_ci"];
    assert!(ci[0].as_f64().unwrap() > 0.0 && ci[0].as_f64() <= ci[1].as_f64(), "{ci}");
    assert_eq!(job["applied"], Value::Null);
    let (_, stats) = server.get("/stats").await;
    assert_eq!(stats["default_strategy"]["from"], "built-in");

    let (status, applied) =
        server.post(&format!("/evaluate/{}/apply", job["id"]), &json!({})).await;
    assert_eq!(status, 200, "{applied}");
    assert_eq!(applied["applied"], "applied");
    let (_, stats) = server.get("/stats").await;
    assert_eq!(stats["default_strategy"]["strategy"], winner);
    assert!(stats["default_strategy"]["from"].as_str().unwrap().contains("eval recommend"));
    let (_, found) = server.post("/search", &json!({"query": "tumour growth"})).await;
    assert_eq!(found["strategy"], winner);
    let (_, explicit) =
        server.post("/search", &json!({"query": "tumour growth", "strategy": "mode=bm25"})).await;
    assert_eq!(explicit["strategy"], "mode=bm25,level=chunk,k=10");
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_evaluations_are_refused_and_change_nothing() {
    let server = TestServer::with_model(ServerConfig::default(), test_model());
    // No documents yet.
    assert_error(&server.post("/evaluate", &json!({})).await, 422, "invalid_parameter");
    let (status, _) = server.post("/documents", &json!({"documents": corpus()})).await;
    assert_eq!(status, 200);
    for body in [
        json!({"count": 0}),
        json!({"folds": 1}),
        json!({"generator": "magic"}),
        json!({"generator": "llm"}),
        json!({"metric": "accuracy"}),
        json!({"strategies": ["mode=nonsense"]}),
    ] {
        let got = server.post("/evaluate", &body).await;
        assert_error(&got, 422, "invalid_parameter");
    }
    assert_error(&server.post("/evaluate", &json!({"bogus": 1})).await, 422, "invalid_request");
    assert_error(&server.get("/evaluate/999").await, 404, "not_found");
    assert_error(&server.post("/evaluate/999/apply", &json!({})).await, 404, "not_found");
    // An evaluation that failed is kept with its error, and has nothing to apply.
    let (_, listed) = server.get("/evaluate/1").await;
    assert_eq!(listed["state"], "failed", "{listed}");
    assert!(listed["error"].as_str().unwrap().contains("no documents"), "{listed}");
    assert_error(&server.post("/evaluate/1/apply", &json!({})).await, 409, "conflict");
    let (_, stats) = server.get("/stats").await;
    assert_eq!(stats["default_strategy"]["from"], "built-in");
}
