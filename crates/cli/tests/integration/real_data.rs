//! The acceptance runs of issue 2 on the shared data.

use crate::{data_dir, json, ok};

#[test]
#[ignore = "real tier (scripts/test.sh): ../shared/data"]
fn notebook_paragraphs_carry_their_section_heading() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    let nb = data_dir().join("fastbook_benchmark/data/01_intro.ipynb");
    let nb = nb.to_str().unwrap();
    json(&store, &["add", nb, "--chunker", "paragraphs"]);
    let shown = json(&store, &["show", nb, "--chunks"]);
    let chunks = shown["chunks"].as_array().unwrap();
    assert!(chunks.len() > 200, "chapter 1 has hundreds of paragraphs, got {}", chunks.len());
    let find = |needle: &str| {
        chunks.iter().find(|c| c["text"].as_str().unwrap().contains(needle)).unwrap()
    };
    let c = find(
        "deep learning is just a modern area in the more general discipline of *machine learning*",
    );
    assert_eq!(
        c["headings"],
        serde_json::json!([
            "# Your Deep Learning Journey",
            "## Your First Model",
            "### What Is Machine Learning?"
        ])
    );
    // Code cells are fenced blocks, and a `#hide` comment inside code is not a heading.
    let code = find("from fastbook import *");
    assert!(code["text"].as_str().unwrap().starts_with("```python"));
    assert!(code["headings"].is_null() || code["headings"].as_array().unwrap().is_empty());
    // Every chunk's text is exactly its span of the stored text.
    let text = ok(&store, &["show", nb]);
    for c in chunks {
        let span = c["span"].as_array().unwrap();
        let (s, e) = (span[0].as_u64().unwrap() as usize, span[1].as_u64().unwrap() as usize);
        assert_eq!(&text[s..e], c["text"].as_str().unwrap());
    }
}

#[test]
#[ignore = "real tier (scripts/test.sh): ../shared/data"]
fn squad_articles_are_stored_whole_and_byte_identical() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    let path = data_dir().join("squad_dev/longdoc-v1.1.docs.jsonl");
    let added = json(&store, &["add", path.to_str().unwrap()]);
    assert_eq!(added["added"], 48);
    let input = std::fs::read_to_string(&path).unwrap();
    for line in input.lines() {
        let doc: serde_json::Value = serde_json::from_str(line).unwrap();
        let id = doc["doc_id"].as_str().unwrap();
        assert_eq!(ok(&store, &["show", id]), doc["text"].as_str().unwrap(), "{id} differs");
    }
    // Re-adding is a no-op.
    let again = json(&store, &["add", path.to_str().unwrap()]);
    assert_eq!((again["added"].as_u64(), again["unchanged"].as_u64()), (Some(0), Some(48)));
    // And BM25 finds the article a question is about.
    let res = json(
        &store,
        &[
            "search",
            "Which NFL team represented the AFC at Super Bowl 50?",
            "--level",
            "doc",
            "-k",
            "3",
        ],
    );
    assert_eq!(res["results"][0]["doc_id"], "Super_Bowl_50");
}
