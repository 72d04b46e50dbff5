//! Chinese and Japanese text end to end (issue 17): a store chooses an analyzer for unspaced
//! scripts by itself, keeps it, and finds words inside unspaced runs.
//!
//! 1. `add` without `--analyzer` picks one from the documents' script and says so.
//! 2. Searches for words inside unspaced runs find their documents under every CJK analyzer.
//! 3. `jieba` meets a Traditional query with Simplified text.
//! 4. Asking a store for another analyzer is a usage error naming both.
//! 5. Chinese or Japanese added to a store that chose `standard` is stored, with a warning.

use crate::{ckeep, fails, json};

const DOCS: &str = r#"{"id": "pair", "text": "上下文保持器的核心思想是长文本存储、短文本索引。两段文本的相似度由最相似的块对决定。"}
{"id": "weather", "text": "今天天气很好，我们去公园散步吧。明天可能会下雨。"}
{"id": "tokyo", "text": "東京は日本の首都です。桜の季節には多くの観光客が訪れます。"}
"#;

fn corpus(dir: &std::path::Path) -> std::path::PathBuf {
    let path = dir.join("zh.jsonl");
    std::fs::write(&path, DOCS).unwrap();
    path
}

fn top(store: &std::path::Path, query: &str) -> (String, serde_json::Value) {
    let res = json(store, &["search", query, "--explain"]);
    let first = &res["results"][0];
    (first["doc_id"].as_str().unwrap_or("(no result)").to_string(), first.clone())
}

#[test]
fn words_inside_unspaced_text_are_found_with_every_cjk_analyzer() {
    let dir = tempfile::tempdir().unwrap();
    let input = corpus(dir.path());
    for analyzer in [None, Some("cjk"), Some("jieba")] {
        let store = dir.path().join(analyzer.unwrap_or("auto"));
        let mut args = vec!["add", input.to_str().unwrap(), "--chunker", "words:dynamic"];
        if let Some(a) = analyzer {
            args.extend(["--analyzer", a]);
        }
        let added = json(&store, &args);
        assert_eq!(added["added"], 3);
        let chosen = added["analyzer"].as_str().unwrap().to_string();
        match analyzer {
            // Japanese among the first documents: bigrams, which serve every CJK script.
            None => {
                assert_eq!(chosen, "cjk");
                assert_eq!(added["analyzer_chosen"], "cjk", "add says auto chose");
            }
            Some(a) => {
                assert_eq!(chosen, a);
                assert!(added.get("analyzer_chosen").is_none());
            }
        }
        for (query, want) in [("相似度", "pair"), ("天气", "weather"), ("东京 首都", "tokyo")]
        {
            let (got, first) = top(&store, query);
            assert_eq!(got, want, "{query} with {chosen}: {first}");
            let span = first["spans"][0].as_array().unwrap();
            let (s, e) = (span[0].as_u64().unwrap() as usize, span[1].as_u64().unwrap() as usize);
            let text = DOCS.lines().find(|l| l.contains(&format!("\"{want}\""))).unwrap();
            let v: serde_json::Value = serde_json::from_str(text).unwrap();
            assert_eq!(&v["text"].as_str().unwrap()[s..e], first["text"], "the span is exact");
            assert!(!first["explain"]["query_terms"].as_array().unwrap().is_empty());
        }
        let (_, first) = top(&store, "相似度");
        let terms = &first["explain"]["query_terms"];
        match chosen.as_str() {
            "cjk" => assert_eq!(*terms, serde_json::json!(["似度", "相似"]), "sorted"),
            _ => assert!(terms.as_array().unwrap().iter().any(|t| t == "相似"), "{terms}"),
        }
    }
}

#[test]
fn a_chinese_store_chooses_jieba_and_reads_traditional_queries() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("zh.jsonl");
    std::fs::write(&input, DOCS.lines().take(2).collect::<Vec<_>>().join("\n")).unwrap();
    let store = dir.path().join("s");
    let added = json(&store, &["add", input.to_str().unwrap()]);
    assert_eq!(added["analyzer"], "jieba");
    // Traditional characters, folded to the Simplified words jieba knows.
    assert_eq!(top(&store, "天氣").0, "weather");
    assert_eq!(top(&store, "相似度").0, "pair");
    let stats = crate::ok(&store, &["stats"]);
    assert!(stats.contains("analyzer   jieba (jieba-search-t2s+en/v1)"), "{stats}");
}

#[test]
fn another_analyzer_for_a_store_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let input = corpus(dir.path());
    let store = dir.path().join("s");
    json(&store, &["add", input.to_str().unwrap(), "--analyzer", "cjk"]);
    let (code, err) = fails(&store, &["add", input.to_str().unwrap(), "--analyzer", "jieba"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("`cjk`") && err.contains("`jieba`"), "{err}");
    let (code, err) = fails(&store, &["add", input.to_str().unwrap(), "--analyzer", "jeiba"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("standard, cjk, jieba"), "{err}");
    // The same one, or auto, is fine: the store keeps its own.
    json(&store, &["add", input.to_str().unwrap(), "--analyzer", "auto"]);
    // A strategy that names another analyzer is refused too, not silently answered.
    let (code, err) = fails(&store, &["search", "天气", "--strategy", "analyzer=jieba"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("`cjk`") && err.contains("`jieba`"), "{err}");
}

#[test]
fn unspaced_text_under_the_standard_analyzer_is_stored_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let english = dir.path().join("en.jsonl");
    std::fs::write(&english, "{\"id\": \"en\", \"text\": \"Long documents, short chunks.\"}\n")
        .unwrap();
    let input = corpus(dir.path());
    let add = |store: &std::path::Path, file: &std::path::Path| {
        let out = ckeep(store).args(["--json", "add"]).arg(file).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        (report, String::from_utf8(out.stderr).unwrap())
    };
    // English first: auto chooses standard, and the Chinese and Japanese that follow are warned of.
    let store = dir.path().join("english-first");
    let (report, stderr) = add(&store, &english);
    assert_eq!(report["analyzer_chosen"], "standard");
    assert!(report.get("unspaced_under_standard").is_none() && stderr.is_empty(), "{stderr}");
    let (report, stderr) = add(&store, &input);
    assert_eq!(report["added"], 3);
    assert_eq!(report["unspaced_under_standard"], 3, "{report}");
    assert!(
        stderr.contains("warning: 3 documents are mostly Chinese, Japanese or Korean"),
        "{stderr}"
    );
    assert!(stderr.contains("--analyzer cjk"), "{stderr}");
    // What the warning is about: a word inside a run is not found.
    assert_eq!(json(&store, &["search", "天气"])["results"], serde_json::json!([]));
    // A store that can split them says nothing.
    let store = dir.path().join("cjk");
    json(&store, &["add", english.to_str().unwrap(), "--analyzer", "cjk"]);
    let (report, stderr) = add(&store, &input);
    assert!(report.get("unspaced_under_standard").is_none() && stderr.is_empty(), "{stderr}");
}

#[test]
fn sizes_in_tokens_need_a_local_model_and_a_sized_chunker() {
    let dir = tempfile::tempdir().unwrap();
    let input = corpus(dir.path());
    let input = input.to_str().unwrap();
    let store = dir.path().join("s");
    let (code, err) =
        fails(&store, &["add", input, "--chunker", "markdown:64", "--size-unit", "tokens"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("markdown:64,unit=tokens") && err.contains("--model"), "{err}");
    let (code, err) =
        fails(&store, &["add", input, "--chunker", "words:10", "--size-unit", "tokens"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("apply to markdown, semantic and hierarchy"), "{err}");
    let (code, err) = fails(&store, &["add", input, "--size-unit", "bytes"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("expected words or tokens"), "{err}");
}

/// The first paragraph of the `i`-th DRCD dev article, in Traditional or Simplified characters.
fn drcd_paragraph(set: &str, nth: usize) -> String {
    let path = crate::data_dir().join("zh/retrieval").join(set).join("dev/docs.jsonl");
    let line = std::fs::read_to_string(path).unwrap().lines().nth(nth).unwrap().to_string();
    let doc: serde_json::Value = serde_json::from_str(&line).unwrap();
    let para = &doc["paragraphs"][0];
    let start = para["start"].as_u64().unwrap() as usize;
    let end = para["end"].as_u64().unwrap() as usize;
    doc["text"].as_str().unwrap().chars().skip(start).take(end - start).collect()
}

#[test]
#[ignore = "real tier (scripts/test.sh): installed models"]
fn chunk_pair_similarity_on_chinese_with_the_multilingual_model() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    let traditional = drcd_paragraph("drcd", 0);
    let simplified = drcd_paragraph("drcd_hans", 0);
    let other = drcd_paragraph("drcd_hans", 1);
    let similar = |a: &str, b: &str| {
        json(&store, &["similar", a, b, "--model", "multilingual-e5-small", "--explain"])
    };
    let same = similar(&traditional, &simplified);
    // Each character is a word: a paragraph of hundreds of characters is several windows of
    // clamp(characters / 4, 18, 150), not one "word".
    let chunks = same["chunks"].as_array().unwrap();
    assert!(chunks.iter().all(|n| n.as_u64().unwrap() >= 3), "{same}");
    let score = |v: &serde_json::Value| v["chunk_pair"].as_f64().unwrap();
    let unrelated = similar(&simplified, &other);
    assert!(score(&same) > 0.9, "the same passage in both scripts: {}", score(&same));
    assert!(score(&same) > score(&unrelated) + 0.05, "{} vs {}", score(&same), score(&unrelated));
    // The matching windows are exact spans of the texts.
    let top = &same["top"][0]["a"];
    let (s, e) =
        (top["span"][0].as_u64().unwrap() as usize, top["span"][1].as_u64().unwrap() as usize);
    assert_eq!(traditional[s..e], *top["text"].as_str().unwrap());
}
