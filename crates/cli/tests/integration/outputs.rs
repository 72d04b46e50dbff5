//! Plain output ends with a newline, for every sub-command that prints to stdout, so the shell
//! prompt or the next command's output never lands on the last line. `show DOC` is the one
//! exception by design: it prints the stored text byte for byte (a pipe gets exactly the
//! document; only a terminal gets a newline added when the text lacks one). And `search --json`
//! answers in the shape the reference documents.

use std::path::Path;

use crate::{ckeep, ok};

/// Runs `ckeep ARGS…` in `dir` on `store` and returns stdout, which must not be empty.
fn plain(dir: &Path, store: &Path, args: &[&str]) -> String {
    let out = ckeep(store).current_dir(dir).args(args).output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(!stdout.is_empty(), "{args:?} printed nothing");
    stdout
}

#[test]
fn every_plain_output_ends_with_a_newline() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let store = d.join("s");
    let corpus = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/corpus.jsonl");
    std::fs::create_dir_all(d.join("notes")).unwrap();
    // A document whose text ends without a newline.
    std::fs::write(d.join("notes/tail.md"), "# Tail\n\nNo newline at the end").unwrap();
    std::fs::write(
        d.join("page.html"),
        "<html><head><title>T</title></head><body><h1>Heading</h1><p>Para</p></body></html>",
    )
    .unwrap();
    std::fs::write(
        d.join("pairs.tsv"),
        "1\tHow do I learn Rust?\tHow can I learn Rust?\tp1\n0\tHow do I learn Rust?\tWhat is the capital of France?\tp2\n",
    )
    .unwrap();
    std::fs::write(
        d.join("docs.jsonl"),
        "{\"doc_id\": \"cats\", \"title\": \"Cats\", \"text\": \"Cats purr.\"}\n{\"doc_id\": \"dogs\", \"title\": \"Dogs\", \"text\": \"Dogs bark.\"}\n",
    )
    .unwrap();
    std::fs::write(
        d.join("queries.jsonl"),
        "{\"qid\": \"1\", \"question\": \"what purrs\", \"doc_id\": \"cats\", \"answers\": [\"purr\"]}\n",
    )
    .unwrap();
    std::fs::write(d.join("run.trec"), "1 Q0 cats 1 2.0 x\n1 Q0 dogs 2 1.0 x\n").unwrap();
    std::fs::write(d.join("qrels.txt"), "1 0 cats 1\n").unwrap();

    let commands: &[&[&str]] = &[
        &["add", corpus, "--model", "test-hash-256", "--chunker", "paragraphs"],
        &["add", "notes"],
        &["sync", "notes", "--dry-run"],
        &["sync", "notes"],
        &["search", "owls at night"],
        &["search", "owls at night", "--level", "doc", "--explain", "--mode", "hybrid"],
        &["show", "owls", "--chunks"],
        &["show", "notes/tail.md", "--chunks"],
        &["extract", "page.html"],
        &["extract", "page.html", "--stats"],
        &["stats"],
        &["check"],
        &["dedup", "--threshold", "0.5", "--explain"],
        &["rm", "notes/tail.md"],
        &["embed", "hello world", "--model", "test-hash-64"],
        &["model", "list"],
        &["similar", "How do I learn Rust?", "How can I learn Rust?", "--model", "test-hash-64"],
        &["similar", "a b c d", "a b c e", "--model", "test-hash-64", "--explain"],
        &["pairs", "pairs.tsv", "--model", "test-hash-64"],
        &["eval", "metrics", "--qrels", "qrels.txt", "--run", "run.trec"],
        &[
            "eval",
            "run",
            "--docs",
            "docs.jsonl",
            "--queries",
            "queries.jsonl",
            "--strategy",
            "level=doc",
            "--work-dir",
            "work",
        ],
    ];
    for args in commands {
        let stdout = plain(d, &store, args);
        assert!(stdout.ends_with('\n'), "{args:?} ends without a newline: {stdout:?}");
    }
    // `show DOC` through a pipe: the stored text exactly, with no newline added.
    let shown = ok(&store, &["show", "owls"]);
    let stored: serde_json::Value =
        serde_json::from_str(&ok(&store, &["--json", "show", "owls"])).unwrap();
    assert_eq!(shown, stored["text"].as_str().unwrap());
}

/// The keys of a documented JSON shape, `{"a", "b": [{"c"}]}`, by nesting depth (1 for the
/// top object, 3 for objects inside its lists, and so on).
fn documented_keys(shape: &str) -> std::collections::BTreeMap<usize, Vec<String>> {
    let (mut depth, mut keys) = (0, std::collections::BTreeMap::<usize, Vec<String>>::new());
    let mut chars = shape.chars();
    while let Some(c) = chars.next() {
        match c {
            '{' | '[' => depth += 1,
            '}' | ']' => depth -= 1,
            '"' => {
                let key: String = chars.by_ref().take_while(|&c| c != '"').collect();
                keys.entry(depth).or_default().push(key);
            }
            _ => {}
        }
    }
    keys
}

/// `search --json` answers in the shape the reference documents (docs/reference/cli.md): the same
/// top-level keys, result keys and chunk keys, bar the ones it leaves out when empty.
#[test]
fn search_json_has_the_documented_shape() {
    let page = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/reference/cli.md"
    ))
    .unwrap();
    let line = page.lines().find(|l| l.starts_with("`{\"query\"")).expect("the documented shape");
    let keys = documented_keys(line.trim_matches('`'));
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    let corpus = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/corpus.jsonl");
    ok(&store, &["add", corpus, "--model", "test-hash-256", "--chunker", "paragraphs"]);
    let out: serde_json::Value = serde_json::from_str(&ok(
        &store,
        &["--json", "search", "owls at night", "--level", "doc", "--explain", "--mode", "hybrid"],
    ))
    .unwrap();
    let names = |v: &serde_json::Value| -> Vec<String> {
        let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
        k.sort();
        k
    };
    let sorted = |mut v: Vec<String>| {
        v.sort();
        v
    };
    // `no_results` is there only when there are none for a reason.
    let top: Vec<String> = keys[&1].iter().filter(|k| *k != "no_results").cloned().collect();
    assert_eq!(names(&out), sorted(top));
    let results = out["results"].as_array().unwrap();
    assert!(!results.is_empty());
    // Left out when empty: locations (files without pages or elements), headings.
    let optional = ["locations", "headings"];
    for r in results {
        let got = names(r);
        for k in &got {
            assert!(keys[&3].contains(k), "`{k}` is not documented");
        }
        for k in keys[&3].iter().filter(|k| !optional.contains(&k.as_str())) {
            assert!(got.contains(k), "documented `{k}` is missing from {r}");
        }
        // At the depth of a chunk's keys are those of a span's lines too.
        let line_keys = ["start", "end", "column"];
        for l in r["lines"].as_array().unwrap() {
            assert_eq!(names(l), sorted(line_keys.map(String::from).to_vec()));
        }
        let chunk_keys = keys[&5].iter().filter(|k| !line_keys.contains(&k.as_str())).cloned();
        for c in r["chunks"].as_array().unwrap() {
            assert_eq!(names(c), sorted(chunk_keys.clone().collect()));
        }
    }
}
