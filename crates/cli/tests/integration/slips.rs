//! What a new user trips over, each answered in words that say what happened and what to do,
//! with the exit code the reference gives (0 success, 2 the user's error).

use std::path::{Path, PathBuf};

use crate::{data_dir, fails, json, ok, run};

/// A store of three documents with metadata (`lang`, `year`).
fn with_metadata(dir: &Path) -> PathBuf {
    let store = dir.join("s");
    let docs = dir.join("docs.jsonl");
    std::fs::write(
        &docs,
        [
            r#"{"id": "en1", "text": "The river floods in spring.", "metadata": {"lang": "en", "year": 2020}}"#,
            r#"{"id": "en2", "text": "A river crossing in winter.", "metadata": {"lang": "en", "year": 2021}}"#,
            r#"{"id": "zh1", "text": "河水在春天泛滥。", "metadata": {"lang": "zh", "year": 2022}}"#,
        ]
        .join("\n"),
    )
    .unwrap();
    ok(&store, &["add", docs.to_str().unwrap()]);
    store
}

fn stderr_of(store: &Path, args: &[&str]) -> (i32, String) {
    let out = run(store, args);
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn a_filter_no_document_passes_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let store = with_metadata(dir.path());
    // `=>` for `>=`: the value is read as the text `>2020`.
    let (code, err) = stderr_of(&store, &["search", "river", "--filter", "year=>2020"]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("warning: no document passes the filter"), "{err}");
    assert!(err.contains("`year` is compared with the text `>2020`"), "{err}");
    // A misspelt key is named.
    let (code, err) = stderr_of(&store, &["search", "river", "--filter", "yaer>=2020"]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("no document has the key `yaer`"), "{err}");
    let res = json(&store, &["search", "river", "--filter", "yaer>=2020 or lang=fr"]);
    assert_eq!(res["results"].as_array().unwrap().len(), 0);
    assert_eq!(res["no_results"]["reason"], "filter_matched_none");
    assert_eq!(res["no_results"]["unknown_keys"], serde_json::json!(["yaer"]));
    // A filter that passes documents but whose words match none is a plain miss.
    let res = json(&store, &["search", "volcano", "--filter", "year>=2020"]);
    assert!(res.get("no_results").is_none(), "{res}");
    // Chinese values work as English ones do.
    let res = json(&store, &["search", "河水", "--filter", "lang=zh"]);
    assert_eq!(res["results"][0]["doc_id"], "zh1");
}

#[test]
fn an_emptied_store_says_it_has_no_documents() {
    let dir = tempfile::tempdir().unwrap();
    let store = with_metadata(dir.path());
    ok(&store, &["rm", "en1", "en2", "zh1"]);
    let (code, err) = stderr_of(&store, &["search", "river"]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("warning: the store has no documents: add some with `ckeep add PATH`"));
    let res = json(&store, &["search", "river"]);
    assert_eq!(res["no_results"]["reason"], "empty_store");
}

#[test]
fn analyzer_auto_in_a_strategy_says_to_leave_the_key_out() {
    let dir = tempfile::tempdir().unwrap();
    let store = with_metadata(dir.path());
    let (code, err) = fails(&store, &["search", "river", "--strategy", "analyzer=auto"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("analyzer=auto is what leaving `analyzer=` out means"), "{err}");
    assert!(!err.contains("expected standard, cjk, jieba or auto"), "{err}");
    // `auto` stays right where it is a choice: a new store's analyzer.
    let docs = dir.path().join("docs.jsonl");
    ok(&dir.path().join("t"), &["add", docs.to_str().unwrap(), "--analyzer", "auto"]);
    let (code, err) = fails(&store, &["add", docs.to_str().unwrap(), "--analyzer", "stemmed"]);
    assert_eq!(code, 2);
    assert!(err.contains("expected standard, cjk, jieba or auto"), "{err}");
}

#[test]
fn a_model_that_is_not_there_leaves_no_store_behind() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("new");
    let doc = dir.path().join("a.txt");
    std::fs::write(&doc, "A sentence to embed.").unwrap();
    let (code, err) =
        fails(&store, &["add", doc.to_str().unwrap(), "--model", "no-such-model-anywhere"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("no model `no-such-model-anywhere`"), "{err}");
    assert!(!store.exists(), "an empty store was left at {}", store.display());
}

#[test]
fn a_chunker_mismatch_says_what_to_do_where_it_was_asked() {
    let dir = tempfile::tempdir().unwrap();
    let store = with_metadata(dir.path());
    let (code, err) = fails(&store, &["search", "river", "--strategy", "chunker=words:20"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("error: the store was chunked with `markdown:256`, not `words:20`"));
    assert!(err.contains("leave `chunker=` out of the strategy"), "{err}");
    assert!(err.contains("--rechunk"), "{err}");
    assert!(!err.contains("--chunker"), "no --chunker flag was given: {err}");
    let docs = dir.path().join("docs.jsonl");
    let (code, err) = fails(&store, &["add", docs.to_str().unwrap(), "--chunker", "words:20"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("a store keeps its chunker: leave --chunker out"), "{err}");
    assert!(err.contains("--rechunk"), "{err}");
}

#[test]
fn errors_have_one_prefix() {
    let dir = tempfile::tempdir().unwrap();
    // A runtime error and a parse error start alike.
    let (_, missing) = fails(&dir.path().join("none"), &["search", "x"]);
    let (_, parse) = fails(&dir.path().join("none"), &["search", "x", "--k", "0"]);
    for err in [&missing, &parse] {
        assert!(err.starts_with("error: "), "{err}");
        assert!(!err.contains("ckeep: error"), "{err}");
    }
}

#[test]
fn recommend_refuses_the_llm_generator_with_the_way_to_use_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = with_metadata(dir.path());
    let (code, err) = fails(&store, &["eval", "recommend", "--generator", "llm"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("eval synth --generator llm --out DIR"), "{err}");
    assert!(err.contains("--dataset DIR"), "{err}");
}

/// Lower-cased `WikiText` paragraphs, whose sentences end in ` . ` as old test collections'
/// abstracts do.
fn tokenised_abstracts(dir: &Path, count: usize) -> PathBuf {
    let articles = std::fs::read_to_string(data_dir().join("wikitext2_test/articles.jsonl"))
        .expect("wikitext2_test in the data folder");
    let mut lines = Vec::new();
    for (a, line) in articles.lines().enumerate() {
        let article: serde_json::Value = serde_json::from_str(line).unwrap();
        let paragraphs = article["text"].as_str().unwrap().split('\n');
        for (p, text) in paragraphs.filter(|p| p.split_whitespace().count() > 60).enumerate() {
            let doc = serde_json::json!({"id": format!("{a}-{p}"), "text": text.to_lowercase()});
            lines.push(doc.to_string());
        }
    }
    lines.truncate(count);
    let path = dir.join("abstracts.jsonl");
    std::fs::write(&path, lines.join("\n")).unwrap();
    path
}

#[test]
fn tokenised_lower_case_text_gives_a_full_synthetic_set() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    let docs = tokenised_abstracts(dir.path(), 300);
    ok(&store, &["add", docs.to_str().unwrap()]);
    let out = dir.path().join("set");
    let report = json(&store, &["eval", "synth", "--count", "100", "--out", out.to_str().unwrap()]);
    let report = &report["report"];
    assert_eq!(report["queries"], 100, "{report}");
    // Before sentences were found at ` . `, few abstracts had the three sentences a query needs.
    assert!(report["documents_with_candidates"].as_u64().unwrap() > 250, "{report}");
}

#[test]
fn a_small_synthetic_set_says_why_and_what_to_try() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    let docs = tokenised_abstracts(dir.path(), 4);
    ok(&store, &["add", docs.to_str().unwrap()]);
    let out = dir.path().join("set");
    let (code, err) =
        stderr_of(&store, &["eval", "synth", "--count", "200", "--out", out.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("warning: made "), "{err}");
    assert!(err.contains("of the 200 queries asked for"), "{err}");
    assert!(err.contains("try --generator title"), "{err}");
}

#[test]
fn results_give_their_lines_and_vimgrep_places() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    let notes = dir.path().join("notes.md");
    let text =
        "# Notes\n\nOwls hunt at night.\n\n## 河流\n\n长江是中国最长的河流。\n流经许多城市。\n";
    std::fs::write(&notes, text).unwrap();
    ok(&store, &["add", notes.to_str().unwrap(), "--chunker", "sentences", "--analyzer", "cjk"]);
    // (query, the line its sentence starts on, the line it ends on)
    for (query, first, last) in [("owls at night", 3, 3), ("长江", 7, 7), ("流经许多城市", 8, 8)]
    {
        let res = json(&store, &["search", query, "-k", "1"]);
        let hit = &res["results"][0];
        let span = &hit["spans"][0];
        let (start, end) = (span[0].as_u64().unwrap() as usize, span[1].as_u64().unwrap() as usize);
        assert_eq!(text[..start].matches('\n').count() + 1, first, "the fixture: {hit}");
        assert_eq!(text[..end].trim_end().matches('\n').count() + 1, last, "the fixture: {hit}");
        assert_eq!(hit["lines"][0], serde_json::json!({"start": first, "end": last, "column": 1}));
        let plain = ok(&store, &["search", query, "-k", "1"]);
        assert!(plain.contains(&format!(" L{first}]")), "{plain}");
        let places = ok(&store, &["search", query, "-k", "1", "--format", "vimgrep"]);
        let doc = hit["doc_id"].as_str().unwrap();
        assert!(places.starts_with(&format!("{doc}:{first}:1:")), "{places}");
        assert_eq!(places.lines().count(), 1, "{places}");
    }
}

#[test]
fn stats_shows_the_schema_and_the_default_strategy() {
    let dir = tempfile::tempdir().unwrap();
    let store = with_metadata(dir.path());
    let plain = ok(&store, &["stats"]);
    let summary = json(&store, &["stats"]);
    let schema = summary["manifest"]["schema_version"].as_u64().unwrap();
    assert!(plain.contains(&format!("\nschema     {schema} (created by ckeep ")), "{plain}");
    let default = summary["default_strategy"]["strategy"].as_str().unwrap();
    assert!(plain.contains(&format!("\ndefault    {default} (built-in)")), "{plain}");
}
