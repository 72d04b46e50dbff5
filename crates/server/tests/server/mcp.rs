//! The MCP tools in-process, through the SDK's own client over an in-memory pipe (the fast
//! tier: the deterministic test embedder and the in-repo corpus). `tests/mcp` drives the real
//! binary with the reference Python client.

use std::sync::Arc;

use crate::common::{TestServer, corpus, test_model};
use ckeep_server::ServerConfig;
use ckeep_server::mcp::{McpOptions, McpServer};
use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::{RoleClient, ServiceExt};
use serde_json::json;

async fn connect(server: &TestServer, options: McpOptions) -> RunningService<RoleClient, ()> {
    let (server_io, client_io) = tokio::io::duplex(1 << 16);
    let service = McpServer::new(Arc::clone(&server.state), options);
    tokio::spawn(async move {
        if let Ok(running) = service.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    ().serve(client_io).await.expect("the handshake succeeds")
}

/// A tool's structured answer and whether it is an error.
async fn call(
    client: &RunningService<RoleClient, ()>,
    tool: &'static str,
    args: serde_json::Value,
) -> (bool, serde_json::Value) {
    let serde_json::Value::Object(args) = args else { panic!("arguments are an object") };
    let res =
        client.call_tool(CallToolRequestParams::new(tool).with_arguments(args)).await.unwrap();
    (res.is_error == Some(true), res.structured_content.expect("structured content"))
}

async fn loaded_server() -> TestServer {
    let server = TestServer::with_model(ServerConfig::default(), test_model());
    let (status, body) = server.post("/documents", &json!({"documents": corpus()})).await;
    assert!(status.is_success(), "{body}");
    server
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_answer_with_ids_spans_and_text() {
    let server = loaded_server().await;
    let client = connect(&server, McpOptions::default()).await;
    let info = client.peer_info().expect("server info");
    assert_eq!(info.server_info.as_ref().map(|i| i.name.as_str()), Some("ckeep"));
    let mut tools: Vec<String> =
        client.list_all_tools().await.unwrap().into_iter().map(|t| t.name.to_string()).collect();
    tools.sort();
    assert_eq!(tools, ["ask", "search", "show", "similar"], "read-only without allow_write");

    let (error, res) =
        call(&client, "search", json!({"query": "owls hunt at night", "k": 3, "mode": "bm25"}))
            .await;
    assert!(!error, "{res}");
    let hits = res["results"].as_array().unwrap();
    assert!(!hits.is_empty() && hits.len() <= 3);
    for hit in hits {
        let (error, shown) = call(&client, "show", json!({"id": hit["doc_id"]})).await;
        assert!(!error, "{shown}");
        let text = shown["text"].as_str().unwrap();
        for span in hit["spans"].as_array().unwrap() {
            let (start, end) = (span[0].as_u64().unwrap(), span[1].as_u64().unwrap());
            let part = &text[start as usize..end as usize];
            assert!(hit["text"].as_str().unwrap().contains(part));
        }
    }
    let (error, res) = call(&client, "similar", json!({"a": "a cat sat", "b": "a cat sat"})).await;
    assert!(!error && res["chunk_pair"].as_f64().unwrap() > 0.99, "{res}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mistakes_are_tool_errors_and_writes_need_permission() {
    let server = loaded_server().await;
    let reader = connect(&server, McpOptions::default()).await;
    let (error, res) = call(&reader, "search", json!({"query": "x", "level": "page"})).await;
    assert!(error && res["error"]["code"] == "invalid_parameter", "{res}");
    let (error, res) = call(&reader, "show", json!({"id": "nope"})).await;
    assert!(error && res["error"]["code"] == "not_found", "{res}");
    let (error, res) = call(&reader, "show", json!({"id": "nope", "spans": [[5, 1]]})).await;
    assert!(error && res["error"]["message"].as_str().unwrap().contains("ends before"), "{res}");
    let refused = reader
        .call_tool(
            CallToolRequestParams::new("add")
                .with_arguments(json!({"id": "x", "text": "y"}).as_object().unwrap().clone()),
        )
        .await;
    assert!(
        refused.as_ref().is_err_and(|e| e.to_string().contains("tool not found")),
        "a read-only session has no add tool: {refused:?}"
    );

    let writer = connect(&server, McpOptions { allow_write: true, roots: Vec::new() }).await;
    let (error, res) =
        call(&writer, "add", json!({"id": "tea", "text": "乌龙茶产于福建。", "title": "茶"})).await;
    assert!(!error && res["ids"] == json!(["tea"]), "{res}");
    let (error, res) = call(&writer, "add", json!({"path": "/etc"})).await;
    assert!(error && res["error"]["message"].as_str().unwrap().contains("does not read paths"));
    let (error, res) =
        call(&writer, "search", json!({"query": "乌龙茶", "mode": "bm25", "k": 1})).await;
    assert!(!error && res["results"][0]["doc_id"] == "tea", "{res}");
}

/// A default strategy recorded in the store (as `ckeep eval recommend --apply` does) is what
/// HTTP and MCP searches use when they name none; a part they name replaces its part, and a
/// whole strategy replaces it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stores_default_strategy_is_used_unless_a_search_names_one() {
    let server = loaded_server().await;
    let location = server.store().display().to_string();
    let mut writer = ckeep_engine::Engine::new(ckeep_store::open(&location).unwrap());
    let chosen: ckeep_engine::Strategy = "mode=bm25,k1=1.2,b=0.75,k=2".parse().unwrap();
    writer.writer().set_default_strategy(Some(&chosen), "a test").unwrap();

    let (status, res) = server.post("/search", &json!({"query": "owls hunt at night"})).await;
    assert_eq!(status, 200, "{res}");
    assert_eq!(res["strategy"], chosen.to_string());
    assert!((1..=2).contains(&res["results"].as_array().unwrap().len()), "{res}");
    let (_, res) = server.post("/search", &json!({"query": "owls hunt", "k": 3})).await;
    assert_eq!(res["strategy"], "mode=bm25,k1=1.2,b=0.75,level=chunk,k=3");
    let (_, res) =
        server.post("/search", &json!({"query": "owls hunt", "strategy": "mode=bm25"})).await;
    assert_eq!(res["strategy"], "mode=bm25,level=chunk,k=10");
    let (_, res) = server.post("/search", &json!({"query": "owls hunt", "explain": true})).await;
    assert_eq!(res["default_strategy"], json!({"strategy": chosen.to_string(), "from": "a test"}));
    let (_, stats) = server.get("/stats").await;
    assert_eq!(stats["default_strategy"]["from"], "a test");

    let client = connect(&server, McpOptions::default()).await;
    let (error, res) = call(&client, "search", json!({"query": "owls hunt at night"})).await;
    assert!(!error, "{res}");
    assert_eq!(res["strategy"], chosen.to_string());
    let (error, res) = call(&client, "search", json!({"query": "owls", "mode": "dense"})).await;
    assert!(!error, "{res}");
    assert_eq!(res["strategy"], "mode=dense,level=chunk,k=2");

    // Back to the built-in default.
    writer.writer().set_default_strategy(None, "").unwrap();
    let (_, res) = server.post("/search", &json!({"query": "owls hunt at night"})).await;
    assert_eq!(res["strategy"], "mode=bm25,level=chunk,k=10");
}
