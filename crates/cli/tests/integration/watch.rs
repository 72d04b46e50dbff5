//! `ckeep watch` and `ckeep serve --watch` while a server answers queries:
//! 1. each change to a watched folder — a file edited (saved by rename, as editors do), added,
//!    deleted, a folder moved in and one moved out, in English and Chinese — becomes
//!    searchable through the running server, and every latency is printed;
//! 2. meanwhile reader threads query without pause and never see half a document: every result
//!    set holds each document at one revision, with the same number of chunks every time, and
//!    documents that are only edited are never missing;
//! 3. the same holds with `ckeep watch` in its own process beside `ckeep serve`;
//! 4. a real PDF copied in is found with its page, and is gone once deleted (real tier).
//!
//! Every wait is on a condition (the server's answer), with a generous deadline for a busy
//! machine; the latencies are reported, not asserted.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::{agent, ckeep};

/// How long a change may take to show before the test gives up (a busy machine, a debug
/// build); the figures printed are what counts.
const DEADLINE: Duration = Duration::from_mins(1);
/// Files that are edited but never deleted: every answer must hold them.
const STEADY: [&str; 2] = ["docs/owls.md", "docs/zh/tea.txt"];
/// A query every chunk of every file matches.
const EVERY: &str = "ledger 账本";

/// A child process killed when dropped, so a failing test leaves nothing running.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `ckeep serve` on a free port (with `extra` arguments); its base URL.
fn serve(dir: &Path, extra: &[&str]) -> (Running, String) {
    let mut child = ckeep(&dir.join("s"))
        .current_dir(dir)
        .args(["--json", "serve", "--addr", "127.0.0.1:0", "--refresh-interval", "0"])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let base = crate::listening(&mut child);
    (Running(child), base)
}

/// Every chunk the server finds for `query` (k far above the chunks stored).
fn chunks(agent: &ureq::Agent, base: &str, query: &str) -> Vec<(String, String)> {
    let mut res = agent
        .post(format!("{base}/search"))
        .send_json(json!({"query": query, "k": 500, "mode": "bm25", "level": "chunk"}))
        .unwrap();
    assert_eq!(res.status(), 200);
    let body: Value = res.body_mut().read_json().unwrap();
    body["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["doc_id"].as_str().unwrap().into(), r["text"].as_str().unwrap().into()))
        .collect()
}

/// A file's text at revision `rev`: paragraphs of the same shape whatever the revision, each
/// naming it, so a document mixing revisions or missing chunks shows.
fn revision_text(name: &str, rev: &str, chinese: bool) -> String {
    (1..=8)
        .map(|p| {
            if chinese {
                format!(
                    "账本第{p}页记录{name}的修订 {rev}。乌龙茶是一种半发酵茶，主要产于福建、广东和台湾，茶汤金黄，香气浓郁持久。\n\n"
                )
            } else {
                format!(
                    "Ledger page {p} of {name} at revision {rev}. Owls hunt at night on soft feathers, larks sing at dawn, and the ledger keeps both.\n\n"
                )
            }
        })
        .collect()
}

/// Revision names: one word each, the same length, never a prefix of another.
fn rev(n: usize) -> String {
    format!("rev{}{}", char::from(b'a' + (n / 26) as u8), char::from(b'a' + (n % 26) as u8))
}

/// Writes `text` to `path` the way editors save: a hidden temporary file renamed over it.
fn save(path: &Path, text: &str) {
    let tmp = path.with_file_name(format!(".{}.tmp", path.file_name().unwrap().to_string_lossy()));
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(tmp, path).unwrap();
}

/// What the readers saw.
#[derive(Default)]
struct Seen {
    queries: u64,
    /// Per document, each distinct chunk count seen.
    chunk_counts: BTreeMap<String, BTreeSet<usize>>,
    violations: Vec<String>,
}

/// Checks one answer: each document at one revision, and the steady ones present.
fn check_answer(answer: &[(String, String)], seen: &mut Seen) {
    let mut per_doc: BTreeMap<&str, (BTreeSet<String>, usize)> = BTreeMap::new();
    for (doc, text) in answer {
        let entry = per_doc.entry(doc).or_default();
        entry.1 += 1;
        for word in text.split(|c: char| !c.is_ascii_alphanumeric()) {
            if word.len() == 5 && word.starts_with("rev") {
                entry.0.insert(word.to_string());
            }
        }
    }
    for steady in STEADY {
        if !per_doc.contains_key(steady) {
            seen.violations.push(format!("{steady} missing from an answer"));
        }
    }
    for (doc, (revs, count)) in per_doc {
        if revs.len() != 1 {
            seen.violations.push(format!("{doc} at several revisions at once: {revs:?}"));
        }
        seen.chunk_counts.entry(doc.to_string()).or_default().insert(count);
    }
    seen.queries += 1;
}

/// Readers querying `base` until `stop`.
fn readers(
    base: &str,
    stop: &Arc<AtomicBool>,
    seen: &Arc<Mutex<Seen>>,
) -> Vec<std::thread::JoinHandle<()>> {
    (0..2)
        .map(|_| {
            let (base, stop, seen) = (base.to_string(), Arc::clone(stop), Arc::clone(seen));
            std::thread::spawn(move || {
                let agent = agent();
                while !stop.load(Ordering::Relaxed) {
                    let answer = chunks(&agent, &base, EVERY);
                    check_answer(&answer, &mut seen.lock().unwrap());
                }
            })
        })
        .collect()
}

/// Waits until `ready` holds for an answer to `query`; how long that took.
fn until(base: &str, query: &str, ready: impl Fn(&[(String, String)]) -> bool) -> Duration {
    let agent = agent();
    let start = Instant::now();
    loop {
        if ready(&chunks(&agent, base, query)) {
            return start.elapsed();
        }
        assert!(start.elapsed() < DEADLINE, "`{query}` never reached the expected answer");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn holds(answer: &[(String, String)], doc: &str, rev: &str) -> bool {
    answer.iter().any(|(d, t)| d == doc && t.contains(rev))
}

/// The folder every test starts from: two English files and a Chinese one.
fn folder(dir: &Path) -> PathBuf {
    let docs = dir.join("docs");
    std::fs::create_dir_all(docs.join("zh")).unwrap();
    std::fs::write(docs.join("owls.md"), revision_text("owls", &rev(0), false)).unwrap();
    std::fs::write(docs.join("larks.md"), revision_text("larks", &rev(0), false)).unwrap();
    std::fs::write(docs.join("zh/tea.txt"), revision_text("茶", &rev(0), true)).unwrap();
    // The store is made by a first sync, so its analyzer reads Chinese.
    let synced = ckeep(&dir.join("s"))
        .current_dir(dir)
        .args(["sync", "docs", "--analyzer", "cjk"])
        .output()
        .unwrap();
    assert!(synced.status.success(), "{}", String::from_utf8_lossy(&synced.stderr));
    docs
}

/// The changes, each waited for through the server while the readers run; the latencies.
fn change_and_wait(dir: &Path, base: &str) -> Vec<(String, Duration)> {
    let docs = dir.join("docs");
    let mut latencies = Vec::new();
    let mut next = 1;
    let mut edit = |file: &str, chinese: bool, latencies: &mut Vec<(String, Duration)>| {
        let r = rev(next);
        next += 1;
        let id = format!("docs/{file}");
        let name = Path::new(file).file_stem().unwrap().to_string_lossy().to_string();
        save(&docs.join(file), &revision_text(&name, &r, chinese));
        let took = until(base, &r, |a| holds(a, &id, &r));
        latencies.push((format!("edit {file}"), took));
    };
    for _ in 0..3 {
        edit("owls.md", false, &mut latencies);
        edit("zh/tea.txt", true, &mut latencies);
    }
    // A new file, written in place (its empty first state fails to load and is skipped).
    std::fs::write(docs.join("wrens.md"), revision_text("wrens", "revzz", false)).unwrap();
    latencies.push((
        "add wrens.md".into(),
        until(base, "revzz", |a| holds(a, "docs/wrens.md", "revzz")),
    ));
    // A deleted file.
    std::fs::remove_file(docs.join("larks.md")).unwrap();
    let gone = |a: &[(String, String)]| !a.iter().any(|(d, _)| d == "docs/larks.md");
    latencies.push(("delete larks.md".into(), until(base, EVERY, gone)));
    // A folder moved in, and moved out again.
    let outside = dir.join("incoming");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("gulls.md"), revision_text("gulls", "revzy", false)).unwrap();
    std::fs::rename(&outside, docs.join("incoming")).unwrap();
    let arrived = |a: &[(String, String)]| holds(a, "docs/incoming/gulls.md", "revzy");
    latencies.push(("move a folder in".into(), until(base, "revzy", arrived)));
    std::fs::rename(docs.join("incoming"), dir.join("away")).unwrap();
    let left = |a: &[(String, String)]| !a.iter().any(|(d, _)| d.starts_with("docs/incoming/"));
    latencies.push(("move a folder out".into(), until(base, EVERY, left)));
    edit("owls.md", false, &mut latencies);
    latencies
}

/// Runs the changes with readers going, then checks what they saw.
fn exercise(dir: &Path, base: &str) {
    let stop = Arc::new(AtomicBool::new(false));
    let seen = Arc::new(Mutex::new(Seen::default()));
    // The first sync through the watcher is done once the server answers with the folder.
    until(base, EVERY, |a| STEADY.iter().all(|s| a.iter().any(|(d, _)| d == s)));
    let threads = readers(base, &stop, &seen);
    let latencies = change_and_wait(dir, base);
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        t.join().unwrap();
    }
    let seen = seen.lock().unwrap();
    let mut ms: Vec<u128> = latencies.iter().map(|(_, d)| d.as_millis()).collect();
    ms.sort_unstable();
    eprintln!(
        "change → searchable, ms: {}; median {}, max {}; {} reader queries",
        latencies
            .iter()
            .map(|(w, d)| format!("{w} {}", d.as_millis()))
            .collect::<Vec<_>>()
            .join(", "),
        ms[ms.len() / 2],
        ms[ms.len() - 1],
        seen.queries
    );
    assert!(
        seen.violations.is_empty(),
        "readers saw half documents {} times, first: {:?}",
        seen.violations.len(),
        &seen.violations[..seen.violations.len().min(5)]
    );
    assert!(seen.queries >= latencies.len() as u64, "the readers ran during the changes");
    for (doc, counts) in &seen.chunk_counts {
        assert_eq!(counts.len(), 1, "{doc} was seen with different chunk counts: {counts:?}");
    }
    for doc in ["docs/owls.md", "docs/zh/tea.txt", "docs/larks.md", "docs/wrens.md"] {
        assert!(seen.chunk_counts.contains_key(doc), "{doc} never seen by a reader");
    }
}

#[test]
fn serve_watch_shows_each_change_whole() {
    let dir = tempfile::tempdir().unwrap();
    folder(dir.path());
    let (_server, base) = serve(dir.path(), &["--watch", "docs", "--prune"]);
    exercise(dir.path(), &base);
}

#[test]
fn watch_beside_serve_shows_each_change_whole() {
    let dir = tempfile::tempdir().unwrap();
    folder(dir.path());
    let (_server, base) = serve(dir.path(), &[]);
    let mut watch = ckeep(&dir.path().join("s"))
        .current_dir(dir.path())
        .args(["--json", "watch", "docs", "--prune", "--debounce", "0.1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(watch.stdout.take().unwrap()).lines();
    let watch = Running(watch);
    // The first sync finds the store as the folder is: nothing to write.
    let first: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    assert_eq!(first["batch"], 0);
    assert_eq!(first["unchanged"], 3, "{first}");
    assert_eq!(first["added"], json!([]));
    exercise(dir.path(), &base);
    drop(watch);
    // Every batch the watcher reported is a line of its own.
    let reported: Vec<Value> =
        lines.map_while(Result::ok).map(|l| serde_json::from_str(&l).unwrap()).collect();
    let removed: BTreeSet<&str> = reported
        .iter()
        .flat_map(|b| b["removed"].as_array().unwrap().iter().map(|i| i.as_str().unwrap()))
        .collect();
    assert!(removed.contains("docs/larks.md"), "{reported:?}");
    assert!(removed.contains("docs/incoming/gulls.md"), "{reported:?}");
}

#[test]
fn watch_refuses_what_it_cannot_follow() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    let missing = dir.path().join("missing");
    for args in [
        vec!["watch", missing.to_str().unwrap()],
        vec!["watch", "-"],
        vec!["watch", dir.path().to_str().unwrap(), "--debounce", "0"],
        vec!["serve", "--watch", missing.to_str().unwrap()],
        vec!["serve", "--prune"],
    ] {
        let (code, stderr) = crate::fails(&store, &args);
        assert_eq!(code, 2, "{args:?}: {stderr}");
    }
    assert!(!store.exists(), "nothing was created");
}

/// A real PDF copied into a watched folder (it may be read half-written first: that batch
/// skips it, the next loads it) is found through the server with its page, and is gone once
/// deleted.
#[test]
#[ignore = "real tier (scripts/test.sh): PDFs from Debian's previsat"]
fn a_pdf_copied_into_a_watched_folder_is_found_with_its_page() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("docs")).unwrap();
    let (_server, base) = serve(dir.path(), &["--watch", "docs", "--prune"]);
    let manual =
        crate::documents::unpacked().join("usr/share/Astropedia/PreviSat/doc/PreviSat_en.pdf");
    std::fs::copy(&manual, dir.path().join("docs/manual.pdf")).unwrap();
    let query = "free open source software to track artificial satellites";
    let agent = agent();
    let start = Instant::now();
    let hit = loop {
        let mut res = agent
            .post(format!("{base}/search"))
            .send_json(json!({"query": query, "k": 1, "mode": "bm25"}))
            .unwrap();
        let body: Value = res.body_mut().read_json().unwrap();
        if body["results"][0]["doc_id"] == "docs/manual.pdf" {
            break body["results"][0].clone();
        }
        assert!(start.elapsed() < DEADLINE, "the PDF never became searchable: {body}");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(hit["locations"][0]["pages"], json!([3]), "{hit}");
    eprintln!("PDF copied → searchable in {} ms", start.elapsed().as_millis());
    std::fs::remove_file(dir.path().join("docs/manual.pdf")).unwrap();
    let gone = |a: &[(String, String)]| a.is_empty();
    until(&base, query, gone);
}
