//! Metadata filters over HTTP: the JSON form with operators and logic, the compact form the
//! playground sends, the same documents either way, and a bad operator named in a 422.

mod common;

use ckeep_server::ServerConfig;
use serde_json::{Value, json};

use common::{TestServer, assert_error, corpus, test_model};

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
