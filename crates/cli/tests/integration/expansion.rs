//! Context expansion after ranking, on a real SQuAD article: sentence windows, parents, whole
//! documents and auto-merging, always within the document and with overlaps merged.

use crate::{data_dir, json};

fn article(dir: &std::path::Path) -> String {
    let all =
        std::fs::read_to_string(data_dir().join("squad_dev/longdoc-v1.1.docs.jsonl")).unwrap();
    let path = dir.join("a.jsonl");
    std::fs::write(&path, all.lines().take(2).collect::<Vec<_>>().join("\n")).unwrap();
    path.to_str().unwrap().to_string()
}

fn spans(r: &serde_json::Value, key: &str) -> Vec<(u64, u64)> {
    r[key]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let s = if key == "chunks" { &s["span"] } else { s };
            (s[0].as_u64().unwrap(), s[1].as_u64().unwrap())
        })
        .collect()
}

#[test]
#[ignore = "real tier (scripts/test.sh): installed models and ../shared/data"]
fn windows_parents_and_documents() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    json(&store, &["add", &article(dir.path()), "--chunker", "sentences"]);
    let q = "Which team won Super Bowl 50?";
    let plain = json(&store, &["search", q, "-k", "3"]);
    let window = json(&store, &["search", q, "-k", "3", "--expand", "window:1", "--explain"]);
    assert_eq!(window["strategy"], "mode=bm25,level=chunk,expand=window:1,k=3");
    let top = &window["results"][0];
    assert_eq!(top["explain"]["expansion"], "window:1");
    // The context contains the hit, and is longer: a sentence more on each side (or merged).
    let (hit, ctx) = (spans(top, "chunks")[0], spans(top, "spans")[0]);
    assert!(ctx.0 <= hit.0 && hit.1 <= ctx.1 && ctx.1 - ctx.0 > hit.1 - hit.0);
    assert!(top["text"].as_str().unwrap().contains(plain["results"][0]["text"].as_str().unwrap()));
    // Contexts of one document never overlap across results.
    let results = window["results"].as_array().unwrap();
    for (i, a) in results.iter().enumerate() {
        for b in &results[i + 1..] {
            if a["doc_id"] == b["doc_id"] {
                for x in spans(a, "spans") {
                    for y in spans(b, "spans") {
                        assert!(x.1 <= y.0 || y.1 <= x.0, "{x:?} overlaps {y:?}");
                    }
                }
            }
        }
    }
    let doc = json(&store, &["search", q, "-k", "3", "--expand", "doc"]);
    let text = json(&store, &["show", doc["results"][0]["doc_id"].as_str().unwrap()]);
    let whole = doc["results"][0]["spans"][0][1].as_u64().unwrap();
    assert_eq!(doc["results"][0]["spans"][0][0], 0);
    assert!(whole > 10_000, "{text}");
}

#[test]
#[ignore = "real tier (scripts/test.sh): installed models and ../shared/data"]
fn auto_merging_keeps_the_best_child_score() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    json(&store, &["add", &article(dir.path()), "--chunker", "hierarchy:256,64,16"]);
    let q = "Super Bowl 50 Denver Broncos Carolina Panthers";
    let merged = json(&store, &["search", q, "-k", "20", "--expand", "merge:0.3"]);
    let results = merged["results"].as_array().unwrap();
    let parent =
        results.iter().find(|r| r["chunks"].as_array().unwrap().len() > 1).expect("a merge");
    let best = parent["chunks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["score"].as_f64().unwrap())
        .fold(0.0, f64::max);
    assert!((parent["score"].as_f64().unwrap() - best).abs() < 1e-6);
    let (ctx, kids) = (spans(parent, "spans")[0], spans(parent, "chunks"));
    assert!(kids.iter().all(|k| ctx.0 <= k.0 && k.1 <= ctx.1), "children inside the parent");
    // The parent is a stored chunk of the tree.
    let tree = json(&store, &["show", parent["doc_id"].as_str().unwrap(), "--chunks"]);
    assert!(tree["chunks"].as_array().unwrap().iter().any(|c| {
        c["span"][0].as_u64() == Some(ctx.0)
            && c["span"][1].as_u64() == Some(ctx.1)
            && !c["leaf"].as_bool().unwrap()
    }));
    let parents = json(&store, &["search", q, "-k", "3", "--expand", "parent"]);
    assert!(parents["results"][0]["text"].as_str().unwrap().split_whitespace().count() > 16);
}
