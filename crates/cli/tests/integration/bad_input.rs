//! Bad input gets a clear message and leaves the store as it was.

use crate::{fails, json, ok, snapshot};

/// A store holding one document, and its snapshot.
fn seeded(dir: &std::path::Path) -> (std::path::PathBuf, (u64, u64, bool)) {
    let store = dir.join("s");
    let f = dir.join("seed.txt");
    std::fs::write(&f, "The seed document. It stays.").unwrap();
    ok(&store, &["add", f.to_str().unwrap(), "--chunker", "sentences"]);
    let snap = snapshot(&store);
    assert_eq!(snap, (1, 2, true));
    (store, snap)
}

fn rejected(dir: &std::path::Path, name: &str, content: &[u8], needle: &str) {
    let (store, before) = seeded(dir);
    let good = dir.join("good.txt");
    std::fs::write(&good, "A good file added in the same command.").unwrap();
    let bad = dir.join(name);
    std::fs::write(&bad, content).unwrap();
    let (code, err) = fails(&store, &["add", good.to_str().unwrap(), bad.to_str().unwrap()]);
    assert_eq!(code, 2, "malformed input is the user's error");
    assert!(err.contains(needle), "message for {name} should contain {needle:?}: {err}");
    assert!(err.contains("nothing was added"), "{err}");
    assert_eq!(snapshot(&store), before, "the store is unchanged");
}

#[test]
fn invalid_utf8_is_rejected_with_its_offset() {
    let dir = tempfile::tempdir().unwrap();
    rejected(dir.path(), "latin1.txt", b"caf\xe9 au lait", "invalid UTF-8 at byte 3");
}

#[test]
fn lossy_mode_replaces_and_warns() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _) = seeded(dir.path());
    let f = dir.path().join("latin1.txt");
    std::fs::write(&f, b"caf\xe9 au lait").unwrap();
    let out = crate::run(&store, &["add", "--lossy", f.to_str().unwrap()]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("replaced 1 invalid UTF-8 sequence"));
    assert_eq!(ok(&store, &["show", f.to_str().unwrap()]), "caf\u{FFFD} au lait");
}

#[test]
fn empty_file_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    rejected(dir.path(), "empty.txt", b"", "empty document");
    let dir = tempfile::tempdir().unwrap();
    rejected(dir.path(), "blank.md", b"  \n\n \t", "empty document");
}

#[test]
fn binary_file_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    rejected(
        dir.path(),
        "image.txt",
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
        "looks like a binary file",
    );
}

#[test]
fn malformed_jsonl_lists_line_numbers() {
    let dir = tempfile::tempdir().unwrap();
    rejected(
        dir.path(),
        "c.jsonl",
        b"{\"id\": \"1\", \"text\": \"fine\"}\n{\"id\": \"2\", \"text\": \n{\"text\": \"no id\"}\n",
        "line 2: invalid JSON",
    );
    let dir = tempfile::tempdir().unwrap();
    rejected(dir.path(), "c.jsonl", b"{\"text\": \"no id\"}\n", "line 1: missing `id`");
}

#[test]
fn a_200_mb_file_is_refused_without_being_read() {
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big.txt");
    let f = std::fs::File::create(&big).unwrap();
    f.set_len(200 * 1024 * 1024).unwrap();
    drop(f);
    // set_len makes a sparse file of NUL bytes; the size check comes before any read.
    rejected_path(dir.path(), &big, "larger than the document size limit");
}

fn rejected_path(dir: &std::path::Path, bad: &std::path::Path, needle: &str) {
    let (store, before) = seeded(dir);
    let (code, err) = fails(&store, &["add", bad.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.contains(needle), "{err}");
    assert_eq!(snapshot(&store), before);
}

#[test]
fn keep_going_skips_bad_inputs() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _) = seeded(dir.path());
    let good = dir.path().join("good.txt");
    std::fs::write(&good, "Good.").unwrap();
    let bad = dir.path().join("bad.txt");
    std::fs::write(&bad, b"\xff").unwrap();
    let r = json(&store, &["add", "--keep-going", good.to_str().unwrap(), bad.to_str().unwrap()]);
    assert_eq!(r["added"], 1);
    assert!(r["skipped"][0]["error"].as_str().unwrap().contains("invalid UTF-8"));
}

#[test]
fn unknown_chunker_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let (store, before) = seeded(dir.path());
    let f = dir.path().join("x.txt");
    std::fs::write(&f, "x").unwrap();
    let (code, err) = fails(&store, &["add", f.to_str().unwrap(), "--chunker", "sentense:3"]);
    assert_eq!(code, 2);
    assert!(err.contains("unknown chunker") && err.contains("paragraphs[:N]"), "{err}");
    assert_eq!(snapshot(&store), before);
}

#[test]
fn missing_path_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let (store, before) = seeded(dir.path());
    let (code, err) = fails(&store, &["add", "/no/such/file.txt"]);
    assert_eq!(code, 2, "a path that is not there is the user's error, as for sync");
    assert!(err.contains("/no/such/file.txt"), "{err}");
    assert_eq!(snapshot(&store), before);
}

#[test]
fn a_store_from_a_newer_schema_is_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _) = seeded(dir.path());
    let db = store.join("ckeep.sqlite");
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute("UPDATE meta SET value = '7' WHERE key = 'schema_version'", []).unwrap();
    drop(conn);
    let bytes_before = std::fs::read(&db).unwrap();
    let f = dir.path().join("x.txt");
    std::fs::write(&f, "x").unwrap();
    for args in [vec!["add", f.to_str().unwrap()], vec!["search", "seed"], vec!["stats"]] {
        let (code, err) = fails(&store, &args);
        assert_eq!(code, 2, "upgrading ckeep is the user's to do");
        assert!(err.contains("schema version 7, newer than this ckeep's 1"), "{err}");
    }
    assert_eq!(std::fs::read(&db).unwrap(), bytes_before);
}

#[test]
fn a_missing_path_is_named_with_its_cause_once() {
    let dir = tempfile::tempdir().unwrap();
    let (store, before) = seeded(dir.path());
    let missing = dir.path().join("nope");
    let (code, err) = fails(&store, &["add", missing.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("nope: No such file or directory"), "{err}");
    assert_eq!(err.matches("No such file").count(), 1, "the cause once: {err}");
    assert_eq!(snapshot(&store), before);
}

/// Files made to crash a reader (issue 82): a 799-byte PDF whose form draws itself aborted the
/// process with a stack overflow, and a 1.5 KB EPUB nested 50,000 deep took 843 MB before it
/// did; both are the user's error now, and the store is unchanged. (The fuzz seeds keep them.)
#[test]
fn files_made_to_crash_a_reader_are_refused() {
    let seeds = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/seeds");
    for (file, needle) in [
        ("load_pdf/self-drawing-form.pdf", "draws a form that draws itself"),
        ("load_epub/deep.epub", "its elements nest more than 256 deep"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let content = std::fs::read(seeds.join(file)).unwrap();
        let name = std::path::Path::new(file).file_name().unwrap().to_str().unwrap();
        rejected(dir.path(), name, &content, needle);
    }
}
