//! `ckeep adapt` end to end on real abstracts (SciFact's first 150) with `all-MiniLM-L6-v2`:
//! - training lowers the loss, the guard's verdict follows its interval, and `--dry-run`
//!   leaves the store as it was;
//! - an adapted store searches alike from the CLI, HTTP and MCP (and, in python/tests, from
//!   `Store.search`), its dense results differ from the model's own, and `--undo` gives the
//!   original results back byte for byte;
//! - `--save` writes the trained map and `--load` applies it; a file that is not one is refused.

use serde_json::{Value, json};

use crate::errors::Mcp;
use crate::{agent, fails, json, ok};

/// A store of SciFact's first `n` abstracts, titles indexed, embedded by `all-MiniLM-L6-v2`.
fn scifact_store(dir: &std::path::Path, n: usize) -> std::path::PathBuf {
    let (store, file) = (dir.join("s"), dir.join("docs.jsonl"));
    let lines: Vec<String> = ckeep_testkit::scifact_values(n)
        .iter()
        .map(|v| json!({"id": v["_id"], "title": v["title"], "text": v["text"]}).to_string())
        .collect();
    std::fs::write(&file, lines.join("\n")).unwrap();
    let file = file.to_str().unwrap();
    json(&store, &["add", file, "--fields", "title,text", "--model", "all-MiniLM-L6-v2"]);
    store
}

/// The ranked documents and scores of a search's JSON (scores to six digits: an `f32`
/// reaches clients through different JSON writers).
fn ranking(res: &Value) -> Vec<(String, String)> {
    res["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let score = format!("{:.6}", r["score"].as_f64().unwrap());
            (r["doc_id"].as_str().unwrap().to_string(), score)
        })
        .collect()
}

const QUERY: &str = "vitamin D deficiency and the risk of infection";

#[test]
fn adapting_lowers_the_loss_and_only_a_confident_gain_changes_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let store = scifact_store(dir.path(), 150);
    let before = ok(&store, &["--json", "stats"]);
    let report = json(&store, &["adapt", "--dry-run", "--seed", "7"]);
    assert_eq!(report["documents"], 150);
    let model = &report["models"][0];
    assert_eq!(model["model"], "all-MiniLM-L6-v2");
    assert_eq!(model["repr"], "contextual:title");
    assert!(model["train_queries"].as_u64().unwrap() > 150, "{model}");
    assert!(model["heldout_queries"].as_u64().unwrap() >= 30, "{model}");
    let losses: Vec<f64> =
        model["losses"].as_array().unwrap().iter().map(|l| l.as_f64().unwrap()).collect();
    assert!(losses.len() > 2 && losses.last() < losses.first(), "{losses:?}");
    let (low, high) =
        (model["margin_ci"][0].as_f64().unwrap(), model["margin_ci"][1].as_f64().unwrap());
    assert!(low <= high);
    let verdict = model["verdict"].as_str().unwrap();
    assert_eq!(verdict.starts_with("would apply"), low > 0.0, "{verdict}");
    assert_eq!(model["applied"], false);
    assert_eq!(ok(&store, &["--json", "stats"]), before, "a dry run changes nothing");
    // The same seed gives the same training.
    let again = json(&store, &["adapt", "--dry-run", "--seed", "7"]);
    assert_eq!(again["models"][0]["losses"], model["losses"]);

    let (code, err) = fails(&store, &["adapt", "--minutes", "0"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("positive number of minutes"), "{err}");
    let (code, err) = fails(&store, &["adapt", "--undo", "--seed", "3"]);
    assert_eq!(code, 2, "{err}");
}

#[test]
fn an_adapted_store_searches_alike_everywhere_and_undo_restores_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = scifact_store(dir.path(), 60);
    let args = ["search", QUERY, "--mode", "dense", "-k", "10"];
    let original = ok(&store, &[&["--json"][..], &args].concat());

    // The guard decides whether a trained adapter is kept; this test needs one kept, so it
    // trains one without applying it and then loads it.
    let file = dir.path().join("adapter.safetensors");
    let file = file.to_str().unwrap();
    json(&store, &["adapt", "--dry-run", "--save", file]);
    let loaded = json(&store, &["adapt", "--load", file]);
    assert_eq!(loaded["loaded"]["model"], "all-MiniLM-L6-v2", "{loaded}");
    let adapted = json(&store, &args.iter().copied().chain(["--json"]).collect::<Vec<_>>());
    let adapted = ranking(&adapted);
    let plain: Value = serde_json::from_str(&original).unwrap();
    assert_ne!(adapted, ranking(&plain), "the adapter changes dense scores");
    let stats = json(&store, &["stats"]);
    assert_eq!(stats["manifest"]["adapters"][0]["model"], "all-MiniLM-L6-v2", "{stats}");

    // HTTP.
    let (mut server, base) = crate::serve(&store);
    let body = json!({"query": QUERY, "mode": "dense", "k": 10});
    let mut res = agent().post(format!("{base}/search")).send_json(&body).unwrap();
    assert_eq!(res.status(), 200);
    let over_http: Value = res.body_mut().read_json().unwrap();
    assert_eq!(ranking(&over_http), adapted);
    let _ = server.kill();
    let _ = server.wait();

    // MCP.
    let mut mcp = Mcp::start(&store);
    let over_mcp = mcp.tool("search", &json!({"query": QUERY, "mode": "dense", "k": 10}));
    assert_eq!(ranking(&over_mcp), adapted);
    drop(mcp);

    let undone = json(&store, &["adapt", "--undo"]);
    assert_eq!(undone["removed"][0]["model"], "all-MiniLM-L6-v2", "{undone}");
    assert_eq!(ok(&store, &[&["--json"][..], &args].concat()), original, "byte for byte");
    let again = json(&store, &["adapt", "--undo"]);
    assert_eq!(again["removed"], json!([]));

    let bad = dir.path().join("bad.safetensors");
    std::fs::write(&bad, b"not an adapter").unwrap();
    let (code, err) = fails(&store, &["adapt", "--load", bad.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("unreadable"), "{err}");
    assert_eq!(ok(&store, &[&["--json"][..], &args].concat()), original, "nothing changed");
}
