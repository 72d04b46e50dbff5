//! Metadata filters over HTTP: the JSON form with operators and logic, the compact form the
//! playground sends, the same documents either way, and a bad operator named in a 422.

use ckeep_server::ServerConfig;
use serde_json::{Value, json};

use crate::common::{TestServer, assert_error, corpus, test_model};

async fn ids(server: &TestServer, filter: Value) -> Vec<String> {
    let (status, found) = server
        .post(
            "/search",
            &json!({"query": "the", "mode": "dense", "level": "doc", "k": 50, "filter": filter}),
        )
        .await;
    assert_eq!(status, 200, "{found}");
    let mut ids: Vec<String> = found["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["doc_id"].as_str().unwrap().to_string())
        .collect();
    ids.sort();
    ids
}

#[tokio::test(flavor = "multi_thread")]
async fn operators_and_logic_select_the_same_documents_in_both_forms() {
    let server = TestServer::with_model(ServerConfig::default(), test_model());
    let (status, _) = server.post("/documents", &json!({"documents": corpus()})).await;
    assert_eq!(status, 200);
    // What the corpus holds (testdata/corpus.jsonl): the expected ids by its metadata.
    let expected = |keep: &dyn Fn(&Value) -> bool| {
        let mut ids: Vec<String> = corpus()
            .iter()
            .filter(|d| keep(&d["metadata"]))
            .map(|d| d["id"].as_str().unwrap().to_string())
            .collect();
        ids.sort();
        ids
    };
    let recent = expected(&|m| m["year"].as_i64() >= Some(2022));
    assert!(recent.len() >= 3);
    assert_eq!(ids(&server, json!({"year": {"$gte": 2022}})).await, recent);
    assert_eq!(ids(&server, json!(["year>=2022"])).await, recent);
    let asian = expected(&|m| m["lang"] == "zh" || m["lang"] == "ja");
    assert_eq!(ids(&server, json!({"$or": [{"lang": "zh"}, {"lang": "ja"}]})).await, asian);
    assert_eq!(ids(&server, json!(["lang in [zh, ja]"])).await, asian);
    let english = expected(&|m| m.get("lang").is_none());
    assert_eq!(ids(&server, json!({"lang": {"$exists": false}})).await, english);
    assert_eq!(ids(&server, json!({"$not": {"lang": {"$exists": true}}})).await, english);
    let zh_software = expected(&|m| m["lang"] == "zh" && m["topic"] == "software");
    assert_eq!(zh_software.len(), 1);
    assert_eq!(ids(&server, json!(["lang=zh and topic=software"])).await, zh_software);
    assert_eq!(ids(&server, json!(["lang=zh", "topic=software"])).await, zh_software);

    let bad =
        server.post("/search", &json!({"query": "x", "filter": {"year": {"$gtee": 2020}}})).await;
    assert_error(&bad, 422, "invalid_parameter");
    assert!(bad.1["error"]["message"].as_str().unwrap().contains("filter.year.$gtee"), "{}", bad.1);
    let bad = server.post("/search", &json!({"query": "x", "filter": ["year>="]})).await;
    assert_error(&bad, 422, "invalid_parameter");
    assert!(bad.1["error"]["message"].as_str().unwrap().contains("at character 7"), "{}", bad.1);
}

/// A store holding a further model (added beside the server's, as `ckeep add --model A --model
/// B` does): `POST /search` fuses both through the strategy spec, the reader loading the
/// further model itself; each list's part is in the explanation; a model the store lacks is a
/// 422 naming the command that adds it. English and Chinese queries.
#[tokio::test(flavor = "multi_thread")]
async fn a_strategy_fuses_the_stores_further_model() {
    let server = TestServer::with_model(ServerConfig::default(), test_model());
    let (status, _) = server.post("/documents", &json!({"documents": corpus()})).await;
    assert_eq!(status, 200);
    let mut writer =
        ckeep_engine::Engine::new(ckeep_store::SqliteStore::open(&server.store()).unwrap())
            .with_embedder(test_model());
    let added = writer
        .writer()
        .add_model(std::sync::Arc::new(ckeep_embed::HashingEmbedder::new(32)), &mut |_, _, _| {})
        .unwrap();
    assert!(added.documents > 0);
    let strategy = "models=test-hash-64+test-hash-32,mode=hybrid:linear=0.3+0.3,level=doc,k=3";
    for query in ["owls hunt at night", "中国最长的河流"] {
        let (status, found) = server
            .post("/search", &json!({"query": query, "strategy": strategy, "explain": true}))
            .await;
        assert_eq!(status, 200, "{found}");
        let explain = &found["results"][0]["explain"];
        assert_eq!(explain["model"], "test-hash-64+test-hash-32", "{found}");
        let lists: Vec<&str> = explain["chunks"][0]["lists"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l["list"].as_str().unwrap())
            .collect();
        assert!(lists.contains(&"test-hash-32"), "{query}: {lists:?}");
    }
    let missing = server
        .post(
            "/search",
            &json!({"query": "owls", "strategy": "models=test-hash-64+test-hash-16,mode=hybrid"}),
        )
        .await;
    assert_error(&missing, 422, "invalid_parameter");
    let message = missing.1["error"]["message"].as_str().unwrap();
    assert!(message.contains("ckeep add --model test-hash-16"), "{message}");
}
