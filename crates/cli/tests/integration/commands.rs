//! Command behaviour: JSON shapes, replacement, removal, exit codes.

use std::io::Write;

use crate::{fails, json, ok, run, snapshot};

fn corpus(dir: &std::path::Path) -> std::path::PathBuf {
    let p = dir.join("corpus");
    std::fs::create_dir_all(p.join("sub")).unwrap();
    std::fs::write(
        p.join("cats.md"),
        "# Cats\n\nCats purr when they are content.\n\n## Food\n\nCats eat fish and mice.",
    )
    .unwrap();
    std::fs::write(
        p.join("sub/dogs.txt"),
        "Dogs bark at strangers. Dogs love long walks in the park.",
    )
    .unwrap();
    std::fs::write(p.join("notes.bin"), [0u8, 1, 2]).unwrap();
    p
}

/// The document ids of `ckeep search --json`'s results, in rank order.
fn result_ids(store: &std::path::Path, args: &[&str]) -> Vec<String> {
    json(store, args)["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["doc_id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn search_json_has_the_design_shape() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    let c = corpus(dir.path());
    let added = json(&store, &["add", c.to_str().unwrap(), "--chunker", "sentences"]);
    assert_eq!(added["added"], 2, "the .bin file in a directory is not an input");
    let res = json(&store, &["search", "what do cats eat", "--explain"]);
    assert_eq!(res["query"], "what do cats eat");
    assert_eq!(res["strategy"], "mode=bm25,level=chunk,k=10");
    let top = &res["results"][0];
    assert_eq!(top["rank"], 1);
    assert!(top["doc_id"].as_str().unwrap().ends_with("cats.md"));
    assert_eq!(top["text"], "Cats eat fish and mice.");
    assert_eq!(top["headings"], "# Cats > ## Food");
    let span = &top["spans"][0];
    assert_eq!(top["chunks"][0]["span"], *span);
    assert!(top["score"].as_f64().unwrap() > 0.0);
    let terms: Vec<&str> = top["explain"]["chunks"][0]["terms"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["term"].as_str().unwrap())
        .collect();
    assert_eq!(terms, ["cat", "eat"]);
}

#[test]
fn document_level_aggregations() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    let c = corpus(dir.path());
    ok(&store, &["add", c.to_str().unwrap(), "--chunker", "sentences"]);
    let res = json(&store, &["search", "dogs cats", "--level", "doc", "--aggregate", "sum"]);
    assert_eq!(res["strategy"], "mode=bm25,level=doc,agg=sum,k=10");
    let results = res["results"].as_array().unwrap();
    assert_eq!(results.len(), 2);
    let dogs =
        results.iter().find(|r| r["doc_id"].as_str().unwrap().ends_with("dogs.txt")).unwrap();
    assert_eq!(dogs["chunks"].as_array().unwrap().len(), 2, "both dog sentences add up");
    assert_eq!(dogs["spans"].as_array().unwrap().len(), 2);
}

#[test]
fn changed_documents_are_replaced_and_rm_removes() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    let f = dir.path().join("a.txt");
    std::fs::write(&f, "first version about apples").unwrap();
    let f = f.to_str().unwrap();
    json(&store, &["add", f]);
    std::fs::write(f, "second version about pears").unwrap();
    let r = json(&store, &["add", f]);
    assert_eq!((r["replaced"].as_u64(), r["added"].as_u64()), (Some(1), Some(0)));
    assert!(json(&store, &["search", "apples"])["results"].as_array().unwrap().is_empty());
    assert_eq!(json(&store, &["search", "pears"])["results"][0]["doc_id"], f);
    let (code, err) = fails(&store, &["rm", f, "nope"]);
    assert_eq!(code, 2, "naming a document that is not there is the caller's mistake");
    assert!(err.contains("no such document(s): nope"));
    let out = crate::run(&store, &["--json", "rm", "nope"]);
    let body: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let code = &body["error"]["code"];
    assert_eq!((out.status.code(), code), (Some(2), &serde_json::json!("not_found")));
    assert_eq!(json(&store, &["rm", f])["removed"], 1);
    assert_eq!(snapshot(&store), (0, 0, true));
}

#[test]
fn stdin_is_one_plain_document() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    let mut child = crate::ckeep(&store)
        .args(["add", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"piped text").unwrap();
    assert!(child.wait_with_output().unwrap().status.success());
    assert_eq!(ok(&store, &["show", "stdin"]), "piped text");
    // The chunk listing is lines of text, each ended, so nothing glues to the next prompt.
    let listing = ok(&store, &["show", "stdin", "--chunks"]);
    assert!(listing.ends_with("piped text\n"), "{listing:?}");
}

#[test]
fn exit_codes_and_json_errors() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    assert_eq!(fails(&store, &["frobnicate"]).0, 2);
    assert_eq!(fails(&store, &["search"]).0, 2, "missing query");
    assert_eq!(fails(&store, &["search", "x", "-k", "0"]).0, 2);
    assert_eq!(fails(&store, &["search", "x", "--mode", "hybrid:max"]).0, 2);
    let (code, err) = fails(&store, &["search", "x"]);
    assert_eq!(code, 2, "no store there is the user's error");
    assert!(err.contains("no store at"), "{err}");
    let out = run(&store, &["--json", "show", "x"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["error"]["code"], "not_found");
    let f = dir.path().join("a.txt");
    std::fs::write(&f, "text").unwrap();
    ok(&store, &["add", f.to_str().unwrap(), "--chunker", "sentences"]);
    let (code, err) = fails(&store, &["search", "x", "--mode", "dense"]);
    assert_eq!(code, 2);
    assert!(err.contains("built without a model"), "{err}");
    let (code, err) = fails(&store, &["search", " "]);
    assert_eq!(code, 2);
    assert!(err.contains("query is empty"));
    let (code, err) = fails(&store, &["add", f.to_str().unwrap(), "--chunker", "words:50"]);
    assert_eq!(code, 2);
    assert!(err.contains("chunked with `sentences:1`"), "{err}");
    let (code, err) = fails(&store, &["search", "x", "--strategy", "chunker=words:5"]);
    assert_eq!(code, 2, "{err}");
    let help = ok(&store, &["add", "--help"]);
    assert!(
        help.contains("words:dynamic")
            && help.contains("Sizes count words: Unicode words")
            && help.contains("markdown:256,unit=tokens")
            && help.contains("--size-unit"),
        "{help}"
    );
}

#[test]
fn metadata_filters_restrict_results() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    let corpus = dir.path().join("docs.jsonl");
    std::fs::write(
        &corpus,
        concat!(
            r#"{"id": "en1", "text": "The river floods in spring.", "metadata": {"lang": "en", "year": 2020}}"#,
            "\n",
            r#"{"id": "en2", "text": "A river crossing in winter.", "metadata": {"lang": "en", "year": 2021, "tags": ["geo", "travel"]}}"#,
            "\n",
            r#"{"id": "de1", "text": "The river Rhine, river of rivers.", "metadata": {"lang": "de"}}"#,
            "\n",
        ),
    )
    .unwrap();
    ok(&store, &["add", corpus.to_str().unwrap(), "--chunker", "sentences"]);
    let ids = |args: &[&str]| {
        let mut all = vec!["search", "river", "--mode", "bm25"];
        all.extend_from_slice(args);
        result_ids(&store, &all)
    };
    assert_eq!(ids(&[]).len(), 3);
    assert_eq!(ids(&["--filter", "lang=en"]).len(), 2);
    assert_eq!(ids(&["--filter", "lang=en", "--filter", "year=2021"]), ["en2"]);
    assert_eq!(ids(&["--filter", "year=\"2021\""]), Vec::<String>::new(), "JSON types count");
    assert_eq!(ids(&["--filter", "tags=travel"]), ["en2"]);
    assert_eq!(ids(&["--filter", "lang=[\"de\",\"fr\"]"]), ["de1"]);
    // The compact form: comparisons, lists, existence, prefixes, logic.
    assert_eq!(ids(&["--filter", "year>=2021"]), ["en2"]);
    assert_eq!(ids(&["--filter", "year<2021 or lang=de"]).len(), 2);
    assert_eq!(ids(&["--filter", "lang in [de, fr]"]), ["de1"]);
    assert_eq!(ids(&["--filter", "lang not in [en]"]), ["de1"]);
    assert_eq!(ids(&["--filter", "not year exists"]), ["de1"]);
    assert_eq!(ids(&["--filter", "tags~geo and lang^=e"]), ["en2"]);
    // --explain says what the filter let through.
    let explained = json(&store, &["search", "river", "--filter", "lang=en", "--explain"]);
    assert_eq!(explained["filter"]["documents"], 2, "{explained}");
    let text = ok(&store, &["search", "river", "--filter", "lang=en", "--explain"]);
    assert!(text.contains("filter: 2 document(s) pass"), "{text}");
    let (code, err) = fails(&store, &["search", "river", "--filter", "nokey"]);
    assert_eq!(code, 2, "{err}");
    let (code, err) = fails(&store, &["search", "river", "--filter", "year>="]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("at character 7: expected a value"), "{err}");
}

/// Chinese keys and values, and prefixes of Chinese paths, filter as English ones do.
#[test]
fn chinese_metadata_filters_by_value_and_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    let corpus = dir.path().join("docs.jsonl");
    std::fs::write(
        &corpus,
        concat!(
            r#"{"id": "a", "text": "长江是中国最长的河流。", "metadata": {"来源": "文档/地理/长江.md", "年份": 2021}}"#,
            "\n",
            r#"{"id": "b", "text": "黄河是中国第二长的河流。", "metadata": {"来源": "文档/地理/黄河.md", "年份": 2019}}"#,
            "\n",
            r#"{"id": "c", "text": "河流的故事写在小说里。", "metadata": {"来源": "小说/河流.md"}}"#,
            "\n",
        ),
    )
    .unwrap();
    ok(&store, &["add", corpus.to_str().unwrap()]);
    let ids = |filter: &str| -> Vec<String> {
        let found = json(&store, &["search", "河流", "--filter", filter]);
        let mut ids: Vec<String> = found["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["doc_id"].as_str().unwrap().to_string())
            .collect();
        ids.sort();
        ids
    };
    assert_eq!(ids("来源^=文档/地理/"), ["a", "b"]);
    assert_eq!(ids("来源^=文档/地理/ and 年份>2020"), ["a"]);
    assert_eq!(ids("来源=小说/河流.md"), ["c"]);
    assert_eq!(ids("来源~黄河"), ["b"]);
}

/// Fast tier: the in-repo corpus (three scripts) through the binary with the deterministic
/// test embedder, in every mode, with a filter, then the same store reopened without `--model`.
#[test]
fn the_test_corpus_is_searchable_in_every_mode_and_script() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    let corpus = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/corpus.jsonl");
    let added =
        json(&store, &["add", corpus, "--model", "test-hash-1024", "--chunker", "paragraphs"]);
    assert_eq!(added["added"], 12, "{added}");
    assert_eq!(added["analyzer"], "cjk", "{added}");
    for mode in ["bm25", "dense", "hybrid"] {
        for (query, want) in [("owls hunt in the dark night", "owls"), ("中国最长的河流", "河流")]
        {
            let res = json(&store, &["search", query, "--mode", mode, "--level", "doc"]);
            assert_eq!(res["results"][0]["doc_id"], want, "{mode} {query}: {res}");
        }
    }
    let filtered =
        json(&store, &["search", "rivers and the sea", "--mode", "dense", "--filter", "lang=zh"]);
    let ids: Vec<&str> = filtered["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["doc_id"].as_str().unwrap())
        .collect();
    assert!(
        !ids.is_empty() && ids.iter().all(|id| ["天气", "河流", "相似度"].contains(id)),
        "{ids:?}"
    );
    assert_eq!(json(&store, &["stats"])["manifest"]["model"], "test-hash-1024");
}

/// Fast tier: a store built without a model gains one with `add --model` and no inputs, and
/// then answers dense and hybrid queries exactly as a store built with the model; another
/// model is refused afterwards.
#[test]
fn a_bm25_store_gains_a_model_later() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/corpus.jsonl");
    let (later, from_start) = (dir.path().join("later"), dir.path().join("start"));
    json(&later, &["add", corpus, "--chunker", "paragraphs"]);
    json(&from_start, &["add", corpus, "--chunker", "paragraphs", "--model", "test-hash-256"]);
    let adopted = json(&later, &["add", "--model", "test-hash-256"]);
    assert_eq!(adopted["derived"][0]["documents"], 12, "{adopted}");
    assert_eq!(adopted["model"], "test-hash-256");
    for mode in ["dense", "hybrid"] {
        for query in ["owls hunt in the dark night", "中国最长的河流"] {
            let args = ["search", query, "--mode", mode, "-k", "5"];
            let (a, b) = (json(&later, &args), json(&from_start, &args));
            assert_eq!(a["results"], b["results"], "{mode} {query}");
        }
    }
    let (code, err) = fails(&later, &["add", "--model", "test-hash-128"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("test-hash-256"), "{err}");
    assert!(run(&later, &["check"]).status.success());
}

/// Fast tier: `add --model A --model B` keeps both models' vectors; `models=A+B` fuses a
/// dense list per model with BM25's, `--explain` shows each list's part; a later `add` embeds
/// new documents with both; a further model added to an existing store (no inputs) answers
/// as one added from the start; `check` passes; a strategy naming a model the store lacks is
/// refused with the command that adds it.
#[test]
fn a_store_holds_two_models_and_fuses_them() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/corpus.jsonl");
    let (both, later) = (dir.path().join("both"), dir.path().join("later"));
    let added = json(
        &both,
        &[
            "add",
            corpus,
            "--chunker",
            "paragraphs",
            "--model",
            "test-hash-256",
            "--model",
            "test-hash-64",
        ],
    );
    let stage = &added["derived"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(stage["stage"], "embedding stored chunks with test-hash-64", "{added}");
    assert_eq!(stage["documents"], 12, "{added}");
    let manifest = &json(&both, &["stats"])["manifest"];
    assert_eq!(manifest["model"], "test-hash-256", "{manifest}");
    assert_eq!(manifest["extra_models"][0]["name"], "test-hash-64", "{manifest}");
    json(&later, &["add", corpus, "--chunker", "paragraphs", "--model", "test-hash-256"]);
    json(&later, &["add", "--model", "test-hash-256", "--model", "test-hash-64"]);
    let strategy = "models=test-hash-256+test-hash-64,mode=hybrid:linear=0.3+0.3,level=doc,k=5";
    for query in ["owls hunt in the dark night", "中国最长的河流"] {
        let args = ["search", query, "--strategy", strategy, "--explain"];
        let (a, b) = (json(&both, &args), json(&later, &args));
        assert_eq!(a["results"], b["results"], "{query}");
        let lists: Vec<&str> = a["results"][0]["explain"]["chunks"][0]["lists"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l["list"].as_str().unwrap())
            .collect();
        assert!(lists.contains(&"test-hash-64"), "{query}: {lists:?}");
        let text = ok(&both, &["search", query, "--strategy", strategy, "--explain"]);
        assert!(text.contains("fused from: "), "{text}");
    }
    // A later add embeds the new document with both models, with no --model given.
    let extra = dir.path().join("more.txt");
    std::fs::write(&extra, "Barn owls hunt voles at night over open fields.").unwrap();
    let report = json(&both, &["add", extra.to_str().unwrap()]);
    let stages: Vec<&str> = report["derived"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["stage"].as_str().unwrap())
        .collect();
    assert!(stages.contains(&"representation plain|test-hash-64"), "{report}");
    let found = json(&both, &["search", "barn owls voles", "--strategy", strategy]);
    assert!(found["results"][0]["doc_id"].as_str().unwrap().contains("more"), "{found}");
    assert!(run(&both, &["check"]).status.success());
    let (code, err) = fails(
        &later,
        &["search", "owls", "--strategy", "models=test-hash-256+test-hash-32,mode=hybrid"],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("ckeep add --model test-hash-32"), "{err}");
    let (code, err) =
        fails(&later, &["search", "owls", "--strategy", "models=test-hash-256+test-hash-64"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("use mode=hybrid"), "{err}");
}

/// A store in `dir` holding `(id, title, text)` documents added with `--fields title,text`.
fn titled_store(dir: &std::path::Path, docs: &[(&str, &str, &str)]) -> std::path::PathBuf {
    let (store, file) = (dir.join("s"), dir.join("docs.jsonl"));
    let lines: Vec<String> = docs
        .iter()
        .map(|(id, title, text)| {
            serde_json::json!({"id": id, "title": title, "text": text}).to_string()
        })
        .collect();
    std::fs::write(&file, lines.join("\n")).unwrap();
    json(&store, &["add", file.to_str().unwrap(), "--fields", "title,text"]);
    store
}

/// `add --fields title,text`: every chunk is indexed with its document's title, searches use
/// that unless they name another representation, and `--fields text` goes back to the text.
#[test]
fn fields_put_titles_into_what_is_searched() {
    let dir = tempfile::tempdir().unwrap();
    let store = titled_store(
        dir.path(),
        &[
            ("owls", "Owls", "These birds hunt at night."),
            ("tea", "乌龙茶", "一种半发酵茶，主要产于福建。"),
        ],
    );
    let found = |args: &[&str]| -> Vec<String> {
        let mut all = vec!["search"];
        all.extend_from_slice(args);
        json(&store, &all)["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["doc_id"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(found(&["owls"]), ["owls"], "the title is searched by default");
    assert_eq!(found(&["乌龙"]), ["tea"], "in Chinese too");
    assert!(found(&["owls", "--repr", "plain"]).is_empty(), "the text alone has no owls");
    let res = json(&store, &["search", "owls"]);
    assert_eq!(res["strategy"], "mode=bm25,level=chunk,k=10", "as asked");
    assert_eq!(json(&store, &["stats"])["manifest"]["default_repr"], "contextual:title");
    json(&store, &["add", "--fields", "text"]);
    assert!(found(&["owls"]).is_empty(), "back to the text");
    assert!(json(&store, &["stats"])["manifest"]["default_repr"].is_null());
}

/// `title_weight=W` counts the title as a field of its own (BM25F): a heavy title puts the
/// document titled with the query first, a light one the document that has it in its text, in
/// English and Chinese alike; and it is refused where no title is indexed.
#[test]
fn a_weighted_title_field_moves_title_matches_against_text_matches() {
    let dir = tempfile::tempdir().unwrap();
    let store = titled_store(
        dir.path(),
        &[
            ("owls", "Owls", "These birds hunt at night."),
            ("barn", "Barns", "Owls nest under the roof."),
            ("oolong", "乌龙茶", "一种半发酵茶。"),
            ("fujian", "福建", "福建产乌龙茶。"),
        ],
    );
    let first = |query: &str, weight: &str| -> String {
        let spec = format!("mode=bm25,title_weight={weight},level=doc,k=2");
        let res = json(&store, &["search", query, "--strategy", &spec, "--explain"]);
        let top = &res["results"][0];
        let chunk = &top["explain"]["chunks"][0];
        let parts: f64 =
            chunk["terms"].as_array().unwrap().iter().map(|t| t["score"].as_f64().unwrap()).sum();
        assert!((parts - chunk["bm25"].as_f64().unwrap()).abs() < 1e-4, "explained: {top}");
        top["doc_id"].as_str().unwrap().to_string()
    };
    assert_eq!(first("owls", "3"), "owls");
    assert_eq!(first("owls", "0.2"), "barn");
    assert_eq!(first("乌龙", "3"), "oolong");
    assert_eq!(first("乌龙", "0.2"), "fujian");
    let (_, err) =
        fails(&store, &["search", "owls", "--strategy", "title_weight=2", "--repr", "plain"]);
    assert!(err.contains("--fields title,text"), "{err}");
}

/// Documents too short to count as evidence ("R.") are never dedup candidates, even as a
/// longer chunk's nearest neighbour (that once panicked).
#[test]
fn dedup_passes_over_documents_too_short_to_count() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    let docs = dir.path().join("docs.jsonl");
    let long = "The quick brown fox jumps over the lazy dog near the river bank.";
    let mut lines = String::new();
    for (id, text) in [("a", long), ("b", long), ("c", "R."), ("d", "R."), ("e", "fox.")] {
        lines.push_str(&serde_json::json!({"id": id, "text": text}).to_string());
        lines.push('\n');
    }
    std::fs::write(&docs, lines).unwrap();
    json(&store, &["add", docs.to_str().unwrap(), "--model", "test-hash-256"]);
    let out = json(&store, &["dedup", "--neighbours", "4"]);
    let clusters: Vec<&serde_json::Value> = out["clusters"].as_array().unwrap().iter().collect();
    assert_eq!(clusters.len(), 1, "{out}");
    assert_eq!(clusters[0]["documents"], serde_json::json!(["a", "b"]));
}

/// `--diversify mmr`: a near copy of the best result gives way; `--explain` prints the
/// redundancy penalty and `--json` carries it; a bad λ is a usage error.
#[test]
fn diversify_lets_a_near_copy_give_way() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    let corpus = dir.path().join("docs.jsonl");
    std::fs::write(
        &corpus,
        concat!(
            r#"{"id": "a", "text": "The river Rhine floods the old town in spring."}"#,
            "\n",
            r#"{"id": "a-copy", "text": "In spring the river Rhine floods the old town."}"#,
            "\n",
            r#"{"id": "b", "text": "Boats on the Rhine: the river carries barges past the old town."}"#,
            "\n",
            r#"{"id": "c", "text": "A quiet river."}"#,
            "\n",
        ),
    )
    .unwrap();
    ok(&store, &["add", corpus.to_str().unwrap()]);
    let ids = |args: &[&str]| {
        let mut all = vec!["search", "river Rhine floods old town", "-k", "2"];
        all.extend_from_slice(args);
        result_ids(&store, &all)
    };
    assert_eq!(ids(&[]), ["a", "a-copy"]);
    assert_eq!(ids(&["--diversify", "mmr:0.5"]), ["a", "b"]);
    let args =
        ["search", "river Rhine floods old town", "-k", "2", "--diversify", "mmr", "--explain"];
    let explained = json(&store, &args);
    let second = &explained["results"][1]["explain"]["diversity"];
    assert_eq!((second["similar_to"].as_u64(), second["first_rank"].as_u64()), (Some(1), Some(3)));
    assert_eq!(second["similarity"], "terms", "{explained}");
    let text = ok(&store, &args);
    assert!(text.contains("diversity: mmr") && text.contains("most like #1"), "{text}");
    let (code, err) = fails(&store, &["search", "river", "--diversify", "mmr:1.5"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("from 0 to 1"), "{err}");
}

#[test]
fn a_command_line_that_does_not_parse_is_a_json_error_with_json() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    for args in [
        &["--json", "search", "--mode", "nonsense", "x"][..],
        &["search", "x", "--json", "--no-such-flag"],
    ] {
        let out = crate::run(&store, args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let body: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(body["error"]["code"], "invalid_parameter", "{body}");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.contains("nonsense") || message.contains("--no-such-flag"), "{body}");
        assert!(String::from_utf8_lossy(&out.stderr).starts_with("error: "));
    }
    // Without --json (or with it only after `--`, as a value), clap's own text on stderr.
    for args in [&["search", "--mode", "nonsense", "x"][..], &["search", "--bad", "--", "--json"]] {
        let out = crate::run(&store, args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}
