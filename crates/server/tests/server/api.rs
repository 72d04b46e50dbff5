//! Every endpoint through the real router (no port): documents in and out byte for byte,
//! search with each option, pair similarity, stats, the API description, authentication and
//! every error code a caller can cause.
#![allow(clippy::too_many_lines)] // each test walks one endpoint family from end to end

use axum::body::Body;
use axum::http::Request;
use ckeep_server::{Limits, ServerConfig};
use serde_json::{Value, json};

use crate::common::{Gated, TestServer, assert_error, minilm, scifact};

#[tokio::test(flavor = "multi_thread")]
#[ignore = "real tier (scripts/test.sh): installed models and ../shared/data"]
async fn documents_round_trip_and_search_finds_them() {
    let server = TestServer::new(ServerConfig::default());
    let docs = scifact(40);
    let (status, added) =
        server.post("/documents", &json!({"documents": docs, "chunker": "sentences"})).await;
    assert_eq!(status, 200, "{added}");
    assert_eq!(added["added"], 40);
    assert_eq!(added["chunker"], "sentences:1");
    assert!(added["vectors"].as_u64().unwrap() >= 40, "{added}");

    // Whole text byte for byte, spans, chunks.
    let id = docs[3]["id"].as_str().unwrap();
    let text = docs[3]["text"].as_str().unwrap();
    let (status, got) = server.get(&format!("/documents/{id}")).await;
    assert_eq!(status, 200);
    assert_eq!(got["text"], text);
    assert_eq!(got["metadata"]["year"], 2021);
    let (_, spans) = server.get(&format!("/documents/{id}?spans=0-10,5-20")).await;
    assert_eq!(spans["spans"][0]["text"], &text[0..10]);
    assert_eq!(spans["spans"][1]["span"], json!([5, 20]));
    let (_, chunks) = server.get(&format!("/documents/{id}?chunks=true")).await;
    let chunks = chunks["chunks"].as_array().unwrap();
    assert!(chunks.len() > 1);
    for c in chunks {
        let (s, e) =
            (c["span"][0].as_u64().unwrap() as usize, c["span"][1].as_u64().unwrap() as usize);
        assert_eq!(c["text"], &text[s..e]);
    }

    // Ids with slashes, a single document, PUT replaces.
    let (status, one) = server
        .post("/documents", &json!({"id": "notes/a b.txt", "text": "Zebrafish regenerate fins.", "metadata": {"year": 1999}}))
        .await;
    assert_eq!(status, 200, "{one}");
    assert_eq!(one["ids"], json!(["notes/a b.txt"]));
    let (status, _) = server.get("/documents/notes/a%20b.txt").await;
    assert_eq!(status, 200);
    let (status, put) = server
        .send(
            "PUT",
            "/documents/notes/a%20b.txt",
            json!({"text": "Axolotls regrow limbs.", "metadata": {"tags": ["regen"]}}).to_string(),
        )
        .await;
    assert_eq!(status, 200, "{put}");
    assert_eq!(put["replaced"], 1);
    let (_, listed) = server.get("/documents?offset=40&limit=5").await;
    assert_eq!(listed["total"], 41);
    assert_eq!(listed["ids"].as_array().unwrap().len(), 1);
    assert_eq!(listed["next"], Value::Null, "the last page");
    // Walking by cursor visits every id once, in order.
    let mut walked: Vec<Value> = Vec::new();
    let mut uri = "/documents?limit=7".to_string();
    loop {
        let (status, page) = server.get(&uri).await;
        assert_eq!(status, 200, "{page}");
        walked.extend(page["ids"].as_array().unwrap().iter().cloned());
        let Some(next) = page["next"].as_str() else { break };
        uri = format!("/documents?limit=7&after={}", urlencode(next));
    }
    let (_, all) = server.get("/documents?limit=100").await;
    assert_eq!(Value::Array(walked), all["ids"]);

    // Search: each mode and option.
    let title = docs[7]["title"].as_str().unwrap();
    for mode in ["bm25", "dense", "hybrid"] {
        let (status, res) = server
            .post("/search", &json!({"query": title, "mode": mode, "level": "doc", "k": 3}))
            .await;
        assert_eq!(status, 200, "{res}");
        assert_eq!(res["results"][0]["doc_id"], docs[7]["id"], "{mode}: {res}");
        assert_eq!(res["results"].as_array().unwrap().len(), 3);
    }
    let (_, res) = server
        .post(
            "/search",
            &json!({"query": "regrow limbs", "strategy": "mode=hybrid,k=2", "explain": true, "expand": "doc"}),
        )
        .await;
    assert_eq!(res["strategy"], "mode=hybrid,level=chunk,expand=doc,k=2");
    assert_eq!(res["results"][0]["doc_id"], "notes/a b.txt");
    assert_eq!(res["results"][0]["text"], "Axolotls regrow limbs.");
    assert!(res["results"][0]["explain"]["chunks"][0]["dense"].is_number(), "{res}");
    // Diversification: the field reaches the engine, and explain says what each result paid.
    let (status, res) = server
        .post(
            "/search",
            &json!({"query": title, "level": "doc", "k": 3, "diversify": "mmr:0.7", "explain": true}),
        )
        .await;
    assert_eq!(status, 200, "{res}");
    assert!(res["strategy"].as_str().unwrap().contains("diversify=mmr:0.7"), "{res}");
    assert_eq!(res["results"][1]["explain"]["diversity"]["lambda"], 0.7, "{res}");
    assert_error(
        &server.post("/search", &json!({"query": title, "diversify": "mmr:9"})).await,
        422,
        "invalid_parameter",
    );
    // Filters: only 2020 documents, and any-of.
    let (_, res) = server
        .post("/search", &json!({"query": title, "mode": "dense", "level": "doc", "k": 20, "filter": {"year": 2020}}))
        .await;
    let ids: Vec<&str> =
        res["results"].as_array().unwrap().iter().map(|r| r["doc_id"].as_str().unwrap()).collect();
    assert_eq!(ids.len(), 20);
    let even: Vec<&str> = docs.iter().step_by(2).map(|d| d["id"].as_str().unwrap()).collect();
    assert!(ids.iter().all(|id| even.contains(id)), "{ids:?}");
    assert!(!ids.contains(&docs[7]["id"].as_str().unwrap()), "doc 7 is from 2021");
    let (_, res) = server
        .post("/search", &json!({"query": "limbs", "mode": "bm25", "filter": {"tags": "regen"}}))
        .await;
    assert_eq!(res["results"][0]["doc_id"], "notes/a b.txt");
    let (_, res) = server
        .post(
            "/search",
            &json!({"query": "limbs", "mode": "bm25", "filter": {"year": [1999, 2021]}}),
        )
        .await;
    let ids: Vec<&str> =
        res["results"].as_array().unwrap().iter().map(|r| r["doc_id"].as_str().unwrap()).collect();
    assert!(
        !ids.contains(&"notes/a b.txt"),
        "PUT replaced the metadata (it has no year now): {ids:?}"
    );
    // The same filter as conditions typed the CLI's way (what the playground sends).
    let (_, typed) = server
        .post(
            "/search",
            &json!({"query": "limbs", "mode": "bm25", "filter": ["year=[1999, 2021]"]}),
        )
        .await;
    assert_eq!(typed["results"], res["results"]);
    assert_error(
        &server.post("/search", &json!({"query": "x", "filter": ["no-equals-sign"]})).await,
        422,
        "invalid_parameter",
    );

    // Delete, then it is gone everywhere.
    let (status, _) = server.send("DELETE", "/documents/notes/a%20b.txt", "").await;
    assert_eq!(status, 204);
    assert_error(&server.get("/documents/notes/a%20b.txt").await, 404, "not_found");
    let (_, res) = server.post("/search", &json!({"query": "axolotls", "mode": "bm25"})).await;
    assert_eq!(res["results"], json!([]));

    // Stats and pair similarity.
    let (_, stats) = server.get("/stats").await;
    assert_eq!(stats["stats"]["documents"], 40);
    assert_eq!(stats["manifest"]["model"], "all-MiniLM-L6-v2");
    let (status, sim) =
        server.post("/similar", &json!({"a": text, "b": text, "explain": true, "top_k": 2})).await;
    assert_eq!(status, 200, "{sim}");
    assert!((sim["chunk_pair"].as_f64().unwrap() - 1.0).abs() < 1e-4, "{sim}");
    assert_eq!(sim["duplicate"], true);
    assert_eq!(sim["top"].as_array().unwrap().len(), 2);
    let other = docs[9]["text"].as_str().unwrap();
    let (_, sim) = server.post("/similar", &json!({"a": text, "b": other})).await;
    assert!(sim["chunk_pair"].as_f64().unwrap() < 0.9, "{sim}");
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "real tier (scripts/test.sh): installed models and ../shared/data"]
async fn the_description_lists_every_route_and_code() {
    let server = TestServer::new(ServerConfig::default());
    let (status, spec) = server.get("/openapi.json").await;
    assert_eq!(status, 200);
    assert_eq!(spec["openapi"], "3.1.0");
    for (method, path) in ckeep_server::ROUTES {
        assert!(spec["paths"][path][method].is_object(), "{method} {path} is not described");
    }
    // And the other way: nothing is described that the server does not route.
    for (path, item) in spec["paths"].as_object().unwrap() {
        for method in item.as_object().unwrap().keys().filter(|m| *m != "parameters") {
            assert!(
                ckeep_server::ROUTES.contains(&(method.as_str(), path.as_str())),
                "{method} {path} is described but not routed"
            );
        }
    }
    // The error codes, one documented value each (as the type derives them).
    let code = &spec["components"]["schemas"]["ErrorCode"];
    let described: Vec<serde_json::Value> = match code["enum"].as_array() {
        Some(values) => values.clone(),
        None => code["oneOf"].as_array().unwrap().iter().map(|v| v["const"].clone()).collect(),
    };
    let codes: Vec<serde_json::Value> =
        ckeep_server::error::ErrorCode::ALL.iter().map(|c| json!(c.as_str())).collect();
    assert_eq!(described, codes);
    let (_, health) = server.get("/health").await;
    assert_eq!(health["status"], "ok");
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "real tier (scripts/test.sh): installed models and ../shared/data"]
async fn a_token_guards_everything_but_health() {
    let config = ServerConfig { token: Some("s3cret-token".into()), ..ServerConfig::default() };
    let server = TestServer::new(config);
    let with = |auth: Option<&str>| {
        let mut b = Request::get("/stats");
        if let Some(a) = auth {
            b = b.header("authorization", a);
        }
        b.body(Body::empty()).unwrap()
    };
    assert_error(&server.call(with(None)).await, 401, "unauthorized");
    assert_error(&server.call(with(Some("Bearer wrong-token!"))).await, 401, "unauthorized");
    assert_error(&server.call(with(Some("s3cret-token"))).await, 401, "unauthorized");
    assert_eq!(server.call(with(Some("Bearer s3cret-token"))).await.0, 200);
    assert_eq!(server.get("/health").await.0, 200);
    let req = Request::post("/search")
        .header("content-type", "application/json")
        .body(Body::from(r#"{"query": "x"}"#))
        .unwrap();
    assert_error(&server.call(req).await, 401, "unauthorized");
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "real tier (scripts/test.sh): installed models and ../shared/data"]
async fn every_caller_mistake_is_a_4xx_with_a_code() {
    let limits = Limits { max_body_bytes: 64 << 10, max_documents: 3, ..Limits::default() };
    let server = TestServer::new(ServerConfig { limits, ..ServerConfig::default() });
    let (status, _) =
        server.post("/documents", &json!({"documents": scifact(2), "chunker": "paragraphs"})).await;
    assert_eq!(status, 200);

    // Malformed bodies.
    assert_error(&server.send("POST", "/search", r#"{"query": "x","#).await, 400, "invalid_json");
    assert_error(&server.send("POST", "/search", "").await, 400, "invalid_json");
    assert_error(
        &server.send("POST", "/search", r#"{"query": "x"} trailing"#).await,
        400,
        "invalid_json",
    );
    let invalid_utf8: Vec<u8> = [&br#"{"query": "caf"#[..], &[0xff, 0xfe], &br#""}"#[..]].concat();
    assert_error(&server.send("POST", "/search", invalid_utf8).await, 400, "invalid_json");
    // Wrong shapes.
    assert_error(&server.post("/search", &json!({"query": 5})).await, 422, "invalid_request");
    assert_error(
        &server.post("/search", &json!({"query": "x", "kk": 1})).await,
        422,
        "invalid_request",
    );
    assert_error(&server.post("/search", &json!({"k": 1})).await, 422, "invalid_request");
    assert_error(
        &server.post("/search", &json!({"query": "x", "k": -1})).await,
        422,
        "invalid_request",
    );
    assert_error(&server.post("/search", &json!(["x"])).await, 422, "invalid_request");
    assert_error(
        &server.post("/documents", &json!({"id": "a", "text": "t", "color": 1})).await,
        422,
        "invalid_request",
    );
    assert_error(&server.post("/documents", &json!("text")).await, 422, "invalid_request");
    // Bad values.
    assert_error(
        &server.post("/search", &json!({"query": "x", "k": 0})).await,
        422,
        "invalid_parameter",
    );
    assert_error(
        &server.post("/search", &json!({"query": "x", "k": 1_000_000_000_000u64})).await,
        422,
        "invalid_parameter",
    );
    assert_error(&server.post("/search", &json!({"query": "   "})).await, 422, "invalid_parameter");
    assert_error(
        &server.post("/search", &json!({"query": "x".repeat(5000)})).await,
        422,
        "invalid_parameter",
    );
    assert_error(
        &server.post("/search", &json!({"query": "x", "mode": "psychic"})).await,
        422,
        "invalid_parameter",
    );
    assert_error(
        &server.post("/search", &json!({"query": "x", "strategy": "k=banana"})).await,
        422,
        "invalid_parameter",
    );
    // A client cannot make the server call a server it names.
    let rerank = json!({"query": "x", "strategy": "k=3,rerank=http://169.254.169.254/v1"});
    assert_error(&server.post("/search", &rerank).await, 422, "invalid_parameter");
    assert_error(
        &server.post("/search", &json!({"query": "x", "repr": "nonsense"})).await,
        422,
        "invalid_parameter",
    );
    assert_error(
        &server.post("/documents", &json!({"id": "", "text": "t"})).await,
        422,
        "invalid_parameter",
    );
    assert_error(
        &server.post("/documents", &json!({"id": "e", "text": " \n"})).await,
        422,
        "invalid_parameter",
    );
    assert_error(
        &server.post("/documents", &json!({"documents": []})).await,
        422,
        "invalid_parameter",
    );
    assert_error(
        &server.post("/documents", &json!({"documents": scifact(4)})).await,
        422,
        "invalid_parameter",
    );
    let twice = json!({"documents": [{"id": "d", "text": "a"}, {"id": "d", "text": "b"}]});
    assert_error(&server.post("/documents", &twice).await, 422, "invalid_parameter");
    assert_error(
        &server.post("/documents", &json!({"id": "z", "text": "t", "chunker": "bogus"})).await,
        422,
        "invalid_parameter",
    );
    assert_error(&server.get("/documents?limit=0").await, 422, "invalid_parameter");
    assert_error(&server.get("/documents?limit=x").await, 422, "invalid_parameter");
    let id = scifact(1)[0]["id"].as_str().unwrap().to_string();
    assert_error(
        &server.get(&format!("/documents/{id}?spans=5-2")).await,
        422,
        "invalid_parameter",
    );
    assert_error(
        &server.get(&format!("/documents/{id}?spans=0-999999")).await,
        422,
        "invalid_parameter",
    );
    assert_error(
        &server.post("/similar", &json!({"a": "x", "b": ""})).await,
        422,
        "invalid_parameter",
    );
    assert_error(
        &server.post("/similar", &json!({"a": "x", "b": "y", "top_k": 0})).await,
        422,
        "invalid_parameter",
    );
    // Conflicts with the store.
    assert_error(
        &server.post("/documents", &json!({"id": "z", "text": "t", "chunker": "sentences"})).await,
        409,
        "conflict",
    );
    // Missing things, methods, media types, sizes.
    assert_error(&server.get("/documents/nope").await, 404, "not_found");
    assert_error(&server.send("DELETE", "/documents/nope", "").await, 404, "not_found");
    assert_error(&server.get("/nope").await, 404, "not_found");
    assert_error(&server.send("PATCH", "/search", "{}").await, 405, "method_not_allowed");
    assert_error(&server.get("/search").await, 405, "method_not_allowed");
    let form = Request::post("/search")
        .header("content-type", "application/x-www-form-urlencoded")
        .body(Body::from("query=x"))
        .unwrap();
    assert_error(&server.call(form).await, 415, "unsupported_media_type");
    let huge = json!({"id": "big", "text": "word ".repeat(20_000)});
    assert_error(&server.post("/documents", &huge).await, 413, "body_too_large");
    // Nothing of the above reached the store.
    let (_, listed) = server.get("/documents").await;
    assert_eq!(listed["total"], 2, "{listed}");
    let report = ckeep_store::SqliteStore::open(&server.store()).unwrap();
    assert!(ckeep_store::StoreRead::check(&report).unwrap().is_ok());
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "real tier (scripts/test.sh): installed models and ../shared/data"]
async fn requests_beyond_the_in_flight_limit_are_turned_away() {
    let limits = Limits { max_in_flight: 1, ..Limits::default() };
    let model = Gated::new(minilm());
    let gate = std::sync::Arc::clone(&model.gate);
    let config = ServerConfig { limits, ..ServerConfig::default() };
    let server = std::sync::Arc::new(TestServer::with_model(config, model));
    let busy = {
        let server = std::sync::Arc::clone(&server);
        tokio::spawn(
            async move { server.post("/documents", &json!({"documents": scifact(60)})).await },
        )
    };
    // The ingest is held at the gate, so it is certainly in flight.
    let entered = std::sync::Arc::clone(&gate);
    tokio::task::spawn_blocking(move || entered.entered()).await.unwrap();
    assert_error(&server.get("/stats").await, 503, "overloaded");
    gate.open();
    assert_eq!(busy.await.unwrap().0, 200);
    assert_eq!(server.get("/stats").await.0, 200, "admitted again once the first is done");
}

/// Percent-encodes a query-string value (every byte but the unreserved ones).
fn urlencode(value: &str) -> String {
    value
        .bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                char::from(b).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}
