//! `ckeep sync`:
//! 1. files added, edited and deleted between runs are added, replaced and (with `--prune`)
//!    removed, in English and Chinese, and JSONL lines count as documents of their file;
//! 2. `--dry-run` says the same and changes nothing; a file that fails to load keeps its
//!    stored document under `--keep-going`; a missing PATH is the user's error;
//! 3. a SIGKILL in the middle of a large sync leaves `check` clean, and the next sync ends with
//!    the store a fresh sync of the final folder makes.

use std::path::Path;
use std::time::{Duration, Instant};

use ckeep_store::{SqliteStore, StoreRead};
use serde_json::Value;

use crate::{ckeep, data_dir, fails, json, ok};

fn write(dir: &Path, name: &str, text: &str) {
    let path = dir.join(name);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn ids(v: &Value) -> Vec<&str> {
    let mut ids: Vec<&str> = v.as_array().unwrap().iter().map(|i| i.as_str().unwrap()).collect();
    ids.sort_unstable();
    ids
}

fn search_ids(store: &Path, query: &str) -> Vec<String> {
    let res = json(store, &["search", query, "--mode", "bm25", "-k", "3"]);
    res["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["doc_id"].as_str().unwrap().into())
        .collect()
}

#[test]
fn edits_additions_and_deletions_reach_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let docs = dir.path().join("docs");
    write(&docs, "owls.md", "# Owls\n\nOwls hunt at night on soft feathers.\n");
    write(&docs, "tea/zh.txt", "乌龙茶是一种半发酵茶，主要产于福建。\n");
    write(
        &docs,
        "more.jsonl",
        "{\"id\":\"j1\",\"text\":\"Larks sing at dawn.\"}\n{\"id\":\"j2\",\"text\":\"Bread rises.\"}\n",
    );
    write(dir.path(), "outside.txt", "A document from elsewhere that sync must not touch.\n");
    let store = dir.path().join("s");
    ok(&store, &["add", dir.path().join("outside.txt").to_str().unwrap(), "--analyzer", "cjk"]);
    let docs_arg = docs.to_str().unwrap();

    let first = json(&store, &["sync", docs_arg]);
    let owls = format!("{docs_arg}/owls.md");
    let zh = format!("{docs_arg}/tea/zh.txt");
    assert_eq!(ids(&first["added"]), {
        let mut want = vec!["j1", "j2", owls.as_str(), zh.as_str()];
        want.sort_unstable();
        want
    });
    assert_eq!(json(&store, &["sync", docs_arg])["unchanged"], 4, "a second sync is a no-op");

    // Edit one file, delete one, drop a JSONL line, add a file.
    write(&docs, "owls.md", "# Owls\n\nOwls hunt voles at night on soft feathers.\n");
    std::fs::remove_file(docs.join("tea/zh.txt")).unwrap();
    write(&docs, "more.jsonl", "{\"id\":\"j1\",\"text\":\"Larks sing at dawn.\"}\n");
    write(&docs, "tea/ja.txt", "緑茶は日本でよく飲まれている。\n");
    let ja = format!("{docs_arg}/tea/ja.txt");

    let before = json(&store, &["stats"]);
    let dry = json(&store, &["sync", docs_arg, "--prune", "--dry-run"]);
    assert_eq!(json(&store, &["stats"]), before, "a dry run changes nothing");
    assert_eq!(ids(&dry["added"]), [ja.as_str()]);
    assert_eq!(ids(&dry["replaced"]), [owls.as_str()]);
    assert_eq!(ids(&dry["removed"]), {
        let mut want = vec!["j2", zh.as_str()];
        want.sort_unstable();
        want
    });

    let kept = json(&store, &["sync", docs_arg]);
    assert_eq!(kept["gone_kept"], 2, "without --prune gone documents stay");
    assert!(search_ids(&store, "乌龙茶").contains(&zh));
    let pruned = json(&store, &["sync", docs_arg, "--prune"]);
    assert_eq!(ids(&pruned["removed"]), ids(&dry["removed"]));
    assert_eq!(pruned["unchanged"], 3);

    assert_eq!(search_ids(&store, "voles"), [owls.as_str()]);
    assert_eq!(search_ids(&store, "緑茶"), [ja.as_str()]);
    assert!(search_ids(&store, "乌龙茶").is_empty(), "the deleted file is gone from search");
    let all = json(&store, &["stats"]);
    assert_eq!(all["stats"]["documents"], 4, "j1, owls, ja and the outside document");
    assert!(
        ok(&store, &["show", dir.path().join("outside.txt").to_str().unwrap()])
            .contains("elsewhere")
    );
    ok(&store, &["check"]);
}

#[test]
fn failures_keep_documents_and_mistakes_are_the_users() {
    let dir = tempfile::tempdir().unwrap();
    let docs = dir.path().join("docs");
    write(&docs, "a.txt", "Alpha text.\n");
    write(&docs, "b.txt", "Beta text.\n");
    let store = dir.path().join("s");
    let docs_arg = docs.to_str().unwrap();
    json(&store, &["sync", docs_arg]);

    // b.txt turns into invalid UTF-8: without --keep-going nothing happens…
    std::fs::write(docs.join("b.txt"), b"Beta \xff text.\n").unwrap();
    let (code, err) = fails(&store, &["sync", docs_arg, "--prune"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("b.txt") && err.contains("nothing was synced"), "{err}");
    // …and with it, b.txt's stored document is kept: its file is still there.
    let res = json(&store, &["sync", docs_arg, "--prune", "--keep-going"]);
    assert_eq!(res["removed"].as_array().unwrap().len(), 0, "{res}");
    assert_eq!(res["skipped"].as_array().unwrap().len(), 1);
    assert_eq!(json(&store, &["stats"])["stats"]["documents"], 2);

    let missing = dir.path().join("missing");
    let (code, err) = fails(&store, &["sync", missing.to_str().unwrap(), "--prune"]);
    assert_eq!(code, 2);
    assert!(err.contains("missing"), "{err}");
    let (code, _) = fails(&store, &["sync", "-"]);
    assert_eq!(code, 2);
    assert_eq!(json(&store, &["stats"])["stats"]["documents"], 2);
}

fn documents(store: &Path) -> u64 {
    SqliteStore::open(store).and_then(|s| s.stats()).map_or(0, |s| s.documents)
}

/// The 10,033 Wikipedia summaries as one file each, 100 to a folder.
fn wiki_folder(dir: &Path) -> Vec<std::path::PathBuf> {
    let raw =
        std::fs::read_to_string(data_dir().join("wiki_vital_summaries_en/summaries_en-us.json"))
            .unwrap();
    let map: serde_json::Map<String, Value> = serde_json::from_str(&raw).unwrap();
    let mut files = Vec::new();
    for (i, v) in map.values().enumerate() {
        let path = dir.join(format!("{:03}/{i:05}.md", i / 100));
        write(
            dir,
            path.strip_prefix(dir).unwrap().to_str().unwrap(),
            &format!("# {}\n\n{}\n", v["title"].as_str().unwrap(), v["extract"].as_str().unwrap()),
        );
        files.push(path);
    }
    files
}

#[test]
#[ignore = "real tier (scripts/test.sh): ../shared/data"]
fn sigkill_during_sync_leaves_a_clean_store_and_the_next_sync_finishes() {
    let dir = tempfile::tempdir().unwrap();
    let wiki = dir.path().join("wiki");
    let files = wiki_folder(&wiki);
    let wiki_arg = wiki.to_str().unwrap();
    let store = dir.path().join("s");

    let mut child =
        ckeep(&store).args(["sync", wiki_arg, "--chunker", "sentences"]).spawn().unwrap();
    let started = Instant::now();
    while documents(&store) == 0 {
        assert!(started.elapsed() < Duration::from_mins(3), "the sync never wrote");
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().unwrap(); // SIGKILL
    assert!(!child.wait().unwrap().success(), "killed before it finished");
    let killed = SqliteStore::open(&store).unwrap();
    let report = killed.check().unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
    let present = killed.stats().unwrap().documents;
    assert!(present > 0 && present < files.len() as u64, "killed mid-way: {present}");
    drop(killed);

    // The folder changes before the next sync: 50 files deleted, 50 edited.
    for f in &files[..50] {
        std::fs::remove_file(f).unwrap();
    }
    for f in &files[5000..5050] {
        let text = std::fs::read_to_string(f).unwrap();
        std::fs::write(f, format!("{text}\nEdited after the crash.\n")).unwrap();
    }
    let rerun = json(&store, &["sync", wiki_arg, "--prune"]);
    let total = files.len() as u64 - 50;
    let counted = ["added", "replaced"].iter().map(|k| rerun[k].as_array().unwrap().len() as u64);
    assert_eq!(counted.sum::<u64>() + rerun["unchanged"].as_u64().unwrap(), total);

    // The same store as one clean sync of the final folder.
    let fresh = dir.path().join("fresh");
    json(&fresh, &["sync", wiki_arg, "--chunker", "sentences"]);
    let (done, want) = (SqliteStore::open(&store).unwrap(), SqliteStore::open(&fresh).unwrap());
    assert!(done.check().unwrap().is_ok());
    assert_eq!(done.document_ids().unwrap(), want.document_ids().unwrap());
    let (a, b) = (done.stats().unwrap(), want.stats().unwrap());
    assert_eq!((a.documents, a.chunks, &a.lexical), (b.documents, b.chunks, &b.lexical));
    for id in done.document_ids().unwrap().iter().step_by(97) {
        assert_eq!(done.document_hash(id).unwrap(), want.document_hash(id).unwrap(), "{id}");
    }
}
