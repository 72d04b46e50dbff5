//! Random bodies, paths and queries against the real router (fast tier: the in-repo corpus and
//! the deterministic test embedder): whatever arrives, the answer is a
//! JSON error with a code and a 4xx status, or a success; never a 5xx, never a crash, and the
//! store stays consistent afterwards.

use std::sync::OnceLock;

use axum::body::Body;
use axum::http::Request;
use ckeep_server::ServerConfig;
use proptest::prelude::*;
use proptest::test_runner::TestRunner;
use serde_json::{Value, json};

use crate::common::{TestServer, corpus, test_model};

fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap())
}

fn server() -> &'static TestServer {
    static SERVER: OnceLock<TestServer> = OnceLock::new();
    SERVER.get_or_init(|| {
        runtime().block_on(async {
            let server = TestServer::with_model(ServerConfig::default(), test_model());
            let (status, _) = server
                .post("/documents", &json!({"documents": corpus(), "chunker": "sentences"}))
                .await;
            assert_eq!(status, 200);
            server
        })
    })
}

/// Any JSON value, a few levels deep.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(Value::from),
        ".{0,40}".prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 24, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::from),
            prop::collection::btree_map(field_name(), inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Field names: the real ones (so bodies get past the first check) and random ones.
fn field_name() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "query",
            "k",
            "mode",
            "level",
            "agg",
            "expand",
            "repr",
            "summarizer",
            "strategy",
            "exact",
            "explain",
            "filter",
            "documents",
            "id",
            "text",
            "title",
            "metadata",
            "chunker",
            "a",
            "b",
            "top_k",
            "threshold",
        ])
        .prop_map(str::to_string),
        "[a-z_]{1,8}",
    ]
}

/// A body: random bytes, or random JSON.
fn body() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..300),
        json_value().prop_map(|v| v.to_string().into_bytes()),
        // Objects with the real fields and random values.
        prop::collection::btree_map(field_name(), json_value(), 1..5).prop_map(|m| Value::Object(
            m.into_iter().collect()
        )
        .to_string()
        .into_bytes()),
    ]
}

/// A strategy spec from the real keys with plausible, wrong and hostile values (grids, URLs,
/// long runs).
fn spec() -> impl Strategy<Value = String> {
    let keys: Vec<&str> = ckeep_engine::Strategy::KEYS.iter().copied().chain(["bogus"]).collect();
    let key = prop::sample::select(keys);
    let value = prop_oneof![
        prop::sample::select(vec![
            "bm25",
            "dense",
            "hybrid",
            "hybrid:linear=0.5",
            "doc",
            "chunk",
            "max",
            "mean:3",
            "window:2",
            "parent",
            "mmr:0.7",
            "int8",
            "true",
            "10",
            "0",
            "-1",
            "1e309",
            "http://127.0.0.1:9/x#m",
            "llm:/etc/passwd",
            "http:http://127.0.0.1:9#m",
            "sentences",
            "hierarchy:512,128",
            "{0.3,0.5}",
            "{a,b,c}",
            "{",
            "}",
            "{}",
        ])
        .prop_map(str::to_string),
        "[ -~]{0,12}",
    ];
    prop::collection::vec((key, value), 0..6).prop_map(|parts| {
        parts.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(",")
    })
}

/// A metadata filter: the JSON form nested up to past the depth limit, or the compact form.
fn filter() -> impl Strategy<Value = Value> {
    let condition = prop_oneof![
        ("[a-z]{1,4}", json_value()).prop_map(|(k, v)| json!({k: v})),
        (
            "[a-z]{1,4}",
            prop::sample::select(vec!["$gt", "$in", "$nin", "$prefix", "$exists", "$bad"]),
            json_value()
        )
            .prop_map(|(k, op, v)| json!({k: {op: v}})),
    ];
    let json_form = condition.prop_recursive(40, 120, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(|l| json!({"$and": l})),
            prop::collection::vec(inner.clone(), 0..4).prop_map(|l| json!({"$or": l})),
            inner.prop_map(|f| json!({"$not": f})),
        ]
    });
    let compact = (0..40usize, "[a-z]{1,3}(=|>=|~|\\^=| in )[a-z0-9\\[\\], ]{0,8}", 0..40usize)
        .prop_map(|(open, cond, close)| {
            json!([format!("{}{cond}{}", "(".repeat(open), ")".repeat(close))])
        });
    prop_oneof![json_form, compact]
}

/// Bodies of `/search`, `/ask` (answered extractively: the fuzzer tests the routes, not a
/// language model) and `/evaluate` built from their real fields.
fn structured() -> impl Strategy<Value = (&'static str, Value)> {
    let query = prop_oneof![".{0,30}".boxed(), Just("tea".to_string()).boxed()];
    let search = (query.clone(), spec(), prop::option::of(filter()), 0..1200usize).prop_map(
        |(q, spec, filter, k)| {
            ("/search", json!({"query": q, "strategy": spec, "filter": filter, "k": k}))
        },
    );
    let ask = (query, spec(), prop::option::of(filter())).prop_map(|(q, spec, filter)| {
        ("/ask", json!({"question": q, "strategy": spec, "filter": filter, "extractive": true}))
    });
    let evaluate = (prop::collection::vec(spec(), 0..3), 0..4usize).prop_map(|(specs, count)| {
        ("/evaluate", json!({"strategies": specs, "count": count, "folds": 2}))
    });
    prop_oneof![4 => search, 3 => ask, 1 => evaluate]
}

fn check(status: u16, bytes: &[u8], what: &str) -> Result<(), TestCaseError> {
    prop_assert!(status < 500, "{what}: {status} {}", String::from_utf8_lossy(bytes));
    if status >= 400 {
        let v: Value = serde_json::from_slice(bytes)
            .map_err(|e| TestCaseError::fail(format!("{what}: error is not JSON: {e}")))?;
        prop_assert!(v["error"]["code"].is_string(), "{what}: {v}");
    }
    Ok(())
}

async fn send(server: &TestServer, method: &str, uri: &str, body: Vec<u8>) -> (u16, Vec<u8>) {
    use http_body_util::BodyExt;
    use tower::ServiceExt;
    let req = Request::builder()
        .method(method)
        .uri(uri)
        .header("content-type", "application/json")
        .body(Body::from(body))
        .unwrap();
    let res =
        ckeep_server::router(std::sync::Arc::clone(&server.state)).oneshot(req).await.unwrap();
    let status = res.status().as_u16();
    (status, res.into_body().collect().await.unwrap().to_bytes().to_vec())
}

/// Both kinds of random request, then the store check: in one test, so the check always runs
/// after every request has been answered, whatever order the harness runs tests in.
#[test]
fn random_requests_get_4xx_or_success_and_leave_the_store_consistent() {
    let config =
        ProptestConfig { cases: 400, source_file: Some(file!()), ..ProptestConfig::default() };
    let routes = prop::sample::select(vec![
        ("POST", "/search"),
        ("POST", "/documents"),
        ("POST", "/similar"),
        ("PUT", "/documents/fuzz"),
    ]);
    TestRunner::new(config.clone())
        .run(&(routes, body()), |(route, body)| {
            let (status, bytes) = runtime().block_on(send(server(), route.0, route.1, body));
            check(status, &bytes, &format!("{} {}", route.0, route.1))
        })
        .unwrap();
    TestRunner::new(config.clone())
        .run(&structured(), |(route, body)| {
            let (status, bytes) =
                runtime().block_on(send(server(), "POST", route, body.to_string().into_bytes()));
            check(status, &bytes, &format!("POST {route} {body}"))
        })
        .unwrap();
    let methods = prop::sample::select(vec!["GET", "DELETE", "POST", "PATCH"]);
    TestRunner::new(config)
        .run(
            &("[a-zA-Z0-9/%._~-]{0,30}", "[a-z0-9=&,%-]{0,30}", methods),
            |(path, query, method)| {
                let Ok(uri) = format!("/documents/{path}?{query}").parse::<axum::http::Uri>()
                else {
                    return Ok(());
                };
                let (status, bytes) =
                    runtime().block_on(send(server(), method, &uri.to_string(), Vec::new()));
                check(status, &bytes, &uri.to_string())
            },
        )
        .unwrap();
    let store = ckeep_store::SqliteStore::open(&server().store()).unwrap();
    let report = ckeep_store::StoreRead::check(&store).unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
}
