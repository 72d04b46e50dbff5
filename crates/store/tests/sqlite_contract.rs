//! The Store contract against `SQLite` in memory and on disk, plus the SQLite-only behaviour:
//! reopening, schema versions, foreign files.

use ckeep_store::{Error, SqliteStore, StoreRead, StoreWrite};

mod in_memory {
    ckeep_store::store_contract_tests!(Box::new(ckeep_store::SqliteStore::in_memory().unwrap()));
}

mod on_disk {
    /// Keeps the temporary directory alive as long as the store.
    pub struct DiskStore {
        store: ckeep_store::SqliteStore,
        _dir: tempfile::TempDir,
    }

    impl std::ops::Deref for DiskStore {
        type Target = ckeep_store::SqliteStore;
        fn deref(&self) -> &Self::Target {
            &self.store
        }
    }
    impl std::ops::DerefMut for DiskStore {
        fn deref_mut(&mut self) -> &mut Self::Target {
            &mut self.store
        }
    }

    fn make() -> DiskStore {
        let dir = tempfile::tempdir().unwrap();
        DiskStore {
            store: ckeep_store::SqliteStore::open_or_create(&dir.path().join("store")).unwrap(),
            _dir: dir,
        }
    }

    ckeep_store::store_contract_tests!(make());
}

#[test]
fn reopening_keeps_everything() {
    let dir = tempfile::tempdir().unwrap();
    {
        let mut s = SqliteStore::open_or_create(dir.path()).unwrap();
        let mut m = s.manifest().unwrap();
        m.chunker = Some("whole".into());
        s.set_manifest(&m).unwrap();
        let doc = ckeep_core::Document::new("x", "", "kept");
        s.write_batch(vec![ckeep_store::DocumentWrite::new(doc, vec![])]).unwrap();
    }
    let s = SqliteStore::open(dir.path()).unwrap();
    assert_eq!(s.document("x").unwrap().unwrap().document.text, "kept");
    assert_eq!(s.manifest().unwrap().chunker.as_deref(), Some("whole"));
}

#[test]
fn missing_store_is_not_created_by_open() {
    let dir = tempfile::tempdir().unwrap();
    let err = SqliteStore::open(&dir.path().join("nope")).unwrap_err();
    assert!(matches!(err, Error::NotFound { .. }), "{err}");
    assert!(!dir.path().join("nope").exists());
}

#[test]
fn newer_schema_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    drop(SqliteStore::open_or_create(dir.path()).unwrap());
    let conn = rusqlite::Connection::open(dir.path().join("ckeep.sqlite")).unwrap();
    conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'", []).unwrap();
    drop(conn);
    let err = SqliteStore::open(dir.path()).unwrap_err();
    assert!(matches!(err, Error::NewerSchema { found: 99, .. }), "{err}");
    assert!(err.to_string().contains("upgrade ckeep"));
}

#[test]
fn foreign_sqlite_file_is_not_a_store() {
    let dir = tempfile::tempdir().unwrap();
    let conn = rusqlite::Connection::open(dir.path().join("ckeep.sqlite")).unwrap();
    conn.execute("CREATE TABLE other (x)", []).unwrap();
    drop(conn);
    let err = SqliteStore::open(dir.path()).unwrap_err();
    assert!(matches!(err, Error::NotAStore { .. }), "{err}");
}

#[test]
fn check_reports_broken_invariants() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = SqliteStore::open_or_create(dir.path()).unwrap();
    let doc = ckeep_core::Document::new("x", "", "short");
    let chunk = ckeep_core::Chunk {
        span: ckeep_core::Span::new(0, 5),
        ordinal: 0,
        depth: 0,
        parent: None,
        leaf: true,
        headings: vec![],
    };
    s.write_batch(vec![ckeep_store::DocumentWrite::new(doc, vec![chunk])]).unwrap();
    assert!(s.check().unwrap().is_ok());
    drop(s);
    let conn = rusqlite::Connection::open(dir.path().join("ckeep.sqlite")).unwrap();
    conn.execute("UPDATE chunks SET end = 50", []).unwrap();
    drop(conn);
    let report = SqliteStore::open(dir.path()).unwrap().check().unwrap();
    assert!(
        report.problems.iter().any(|p| p.contains("outside the 5-byte text")),
        "{:?}",
        report.problems
    );
}

#[test]
fn a_read_snapshot_does_not_see_later_commits_of_another_writer() {
    let dir = tempfile::tempdir().unwrap();
    let mut writer = SqliteStore::open_or_create(dir.path()).unwrap();
    let write = |w: &mut SqliteStore, id: &str| {
        let doc = ckeep_core::Document::new(id, "", "text");
        w.write_batch(vec![ckeep_store::DocumentWrite::new(doc, vec![])]).unwrap();
    };
    write(&mut writer, "first");
    let reader = SqliteStore::open(dir.path()).unwrap();
    let before = reader.generation().unwrap();
    assert!(reader.begin_read().unwrap());
    assert_eq!(reader.document_ids().unwrap(), ["first"]);
    write(&mut writer, "second");
    assert_eq!(reader.document_ids().unwrap(), ["first"], "the snapshot holds");
    assert_eq!(reader.generation().unwrap(), before);
    reader.end_read().unwrap();
    assert_eq!(reader.document_ids().unwrap(), ["first", "second"]);
    assert!(reader.generation().unwrap() > before, "another connection's write is seen");
}

/// The same suite through the enum dispatch that `ckeep` itself uses for every store.
mod behind_dyn_store {
    ckeep_store::store_contract_tests!(Box::new(ckeep_store::DynStore::from(
        ckeep_store::SqliteStore::in_memory().unwrap()
    )));
}

/// A document of one chunk with a `plain` vector.
fn with_vector(id: &str, value: f32) -> ckeep_store::DocumentWrite {
    let doc = ckeep_core::Document::new(id, "", "some text");
    let chunk = ckeep_core::Chunk {
        span: ckeep_core::Span::new(0, 9),
        ordinal: 0,
        depth: 0,
        parent: None,
        leaf: true,
        headings: vec![],
    };
    let mut w = ckeep_store::DocumentWrite::new(doc, vec![chunk]);
    w.vectors =
        vec![ckeep_store::VectorEntry { repr: "plain".into(), ordinal: 0, vector: vec![value] }];
    w
}

#[test]
fn vector_changes_name_the_chunks_written_or_removed_since_a_generation() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = SqliteStore::open_or_create(dir.path()).unwrap();
    let start = s.generation().unwrap();
    s.write_batch(vec![with_vector("a", 1.0), with_vector("b", 2.0)]).unwrap();
    let ids = |s: &SqliteStore| s.vectors("plain").unwrap().ids;
    let first = ids(&s);
    assert_eq!(s.vector_changes("plain", start).unwrap(), Some(first.clone()));
    let after_first = s.generation().unwrap();
    assert_eq!(s.vector_changes("plain", after_first).unwrap(), Some(vec![]));
    assert_eq!(s.vector_changes("other", start).unwrap(), Some(vec![]));

    // A replaced document: its old chunk removed, a new one added. A removed one: its chunk.
    s.write_batch(vec![with_vector("a", 3.0)]).unwrap();
    s.remove(&["b".into()]).unwrap();
    let now = ids(&s);
    let mut expected = first.clone();
    expected.extend(now.iter().copied().filter(|id| !first.contains(id)));
    assert_eq!(s.vector_changes("plain", after_first).unwrap(), Some(expected));

    // Writes without vectors change none; the log survives reopening and another connection
    // sees it.
    let quiet = s.generation().unwrap();
    s.set_aux("x", b"blob").unwrap();
    drop(s);
    let reader = SqliteStore::open(dir.path()).unwrap();
    assert_eq!(reader.vector_changes("plain", quiet).unwrap(), Some(vec![]));
    assert_eq!(reader.vector_changes("plain", start).unwrap().map(|c| c.len()), Some(3));
}

/// The vectors of `repr` the store kept as removed, by chunk.
fn removed(s: &SqliteStore, repr: &str) -> Vec<(i64, Vec<f32>)> {
    let mut out = Vec::new();
    s.removed_vectors(repr, &mut |chunk, _, v| out.push((chunk.0, v.to_vec()))).unwrap();
    out
}

#[test]
fn removed_vectors_are_kept_while_segments_are_saved_and_forgotten_by_generation() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = SqliteStore::open_or_create(dir.path()).unwrap();
    s.write_batch(vec![with_vector("a", 1.0), with_vector("b", 2.0), with_vector("c", 3.0)])
        .unwrap();
    let chunk_of = |s: &SqliteStore, i: usize| s.vectors("plain").unwrap().ids[i].0;
    let (a, b) = (chunk_of(&s, 0), chunk_of(&s, 1));
    // No segment list: a removal keeps nothing.
    s.remove(&["a".into()]).unwrap();
    assert!(removed(&s, "plain").is_empty());
    // With a list for the representation, the removed vector is kept as it was.
    s.set_aux("hnsw:plain#segments", b"list").unwrap();
    let before_b = s.generation().unwrap();
    s.remove(&["b".into()]).unwrap();
    let kept = removed(&s, "plain");
    assert_eq!(kept.len(), 1);
    assert_eq!(kept[0].0, b);
    assert_ne!(kept[0].0, a);
    assert_eq!(kept[0].1, vec![2.0], "the vector it had");
    assert!(removed(&s, "other").is_empty());
    // Another process sees it; forgetting those before `b` went keeps it, after forgets it.
    drop(s);
    let mut s = SqliteStore::open(dir.path()).unwrap();
    assert_eq!(removed(&s, "plain").len(), 1);
    s.forget_removed_vectors("plain", before_b).unwrap();
    assert_eq!(removed(&s, "plain").len(), 1);
    s.forget_removed_vectors("plain", before_b + 1).unwrap();
    assert!(removed(&s, "plain").is_empty());
    assert!(s.check().unwrap().is_ok());
}

#[test]
fn a_store_made_before_the_vector_log_covers_only_the_generations_after_its_first_open() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = SqliteStore::open_or_create(dir.path()).unwrap();
    s.write_batch(vec![with_vector("a", 1.0)]).unwrap();
    let old = s.generation().unwrap();
    drop(s);
    // What an older ckeep left: no log, no triggers.
    let conn = rusqlite::Connection::open(dir.path().join("ckeep.sqlite")).unwrap();
    conn.execute_batch(
        "DROP TRIGGER vector_log_insert; DROP TRIGGER vector_log_delete; DROP TABLE vector_log;
         DELETE FROM meta WHERE key = 'vector_log_since';",
    )
    .unwrap();
    drop(conn);
    let mut s = SqliteStore::open(dir.path()).unwrap();
    assert_eq!(s.vector_changes("plain", old - 1).unwrap(), None, "before the log: unknown");
    assert_eq!(s.vector_changes("plain", old).unwrap(), Some(vec![]));
    s.write_batch(vec![with_vector("b", 2.0)]).unwrap();
    assert_eq!(s.vector_changes("plain", old).unwrap().map(|c| c.len()), Some(1));
    assert!(s.check().unwrap().is_ok());
}

#[test]
fn a_staged_store_replaces_the_old_one_only_when_no_one_has_it_open() {
    let dir = tempfile::tempdir().unwrap();
    let location = dir.path().join("s");
    let write = |s: &mut SqliteStore, id: &str| {
        let doc = ckeep_core::Document::new(id, "", "text");
        s.write_batch(vec![ckeep_store::DocumentWrite::new(doc, vec![])]).unwrap();
    };
    let mut old = SqliteStore::open_or_create(&location).unwrap();
    write(&mut old, "old");
    let location = location.to_str().unwrap();
    let staged = ckeep_store::staging_location(location).unwrap();
    let mut new = SqliteStore::open_or_create(std::path::Path::new(&staged)).unwrap();
    write(&mut new, "new");
    drop(new);
    // The old store is still open here: its log would be replayed onto the new file.
    let err = ckeep_store::replace(location, &staged).unwrap_err();
    assert!(matches!(err, Error::Busy { .. }) && err.is_user_error(), "{err}");
    assert!(old.document("old").unwrap().is_some());
    drop(old);
    ckeep_store::replace(location, &staged).unwrap();
    let s = SqliteStore::open(std::path::Path::new(location)).unwrap();
    assert_eq!(s.document_ids().unwrap(), ["new"]);
    assert!(!std::path::Path::new(&staged).exists());
    // A staging area left by an interrupted run is emptied before the next one; a discarded
    // one is removed.
    let staged = ckeep_store::staging_location(location).unwrap();
    drop(SqliteStore::open_or_create(std::path::Path::new(&staged)).unwrap());
    let again = ckeep_store::staging_location(location).unwrap();
    assert!(!std::path::Path::new(&again).exists());
    drop(SqliteStore::open_or_create(std::path::Path::new(&again)).unwrap());
    ckeep_store::discard_staged(location).unwrap();
    assert!(!std::path::Path::new(&again).exists());
    // PostgreSQL stores are not replaced by files.
    let err = ckeep_store::staging_location("postgres://localhost/db").unwrap_err();
    assert!(matches!(err, Error::Unsupported(_)), "{err}");
}

#[test]
fn a_store_whose_vectors_were_without_rowid_is_rewritten_once_and_keeps_them() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = SqliteStore::open_or_create(dir.path()).unwrap();
    s.write_batch(vec![with_vector("a", 1.0), with_vector("b", 2.0)]).unwrap();
    let (before, generation) = (s.vectors("plain").unwrap(), s.generation().unwrap());
    drop(s);
    // The table as stores made before 2026-11-28 have it.
    let file = dir.path().join("ckeep.sqlite");
    let conn = rusqlite::Connection::open(&file).unwrap();
    conn.execute_batch(
        "DROP TRIGGER vector_log_insert; DROP TRIGGER vector_log_delete;
         CREATE TABLE old (repr TEXT NOT NULL, chunk INTEGER NOT NULL, doc INTEGER NOT NULL,
             vec BLOB NOT NULL, PRIMARY KEY (repr, chunk)) WITHOUT ROWID;
         INSERT INTO old SELECT * FROM vectors; DROP TABLE vectors;
         ALTER TABLE old RENAME TO vectors; CREATE INDEX vectors_doc ON vectors (doc);",
    )
    .unwrap();
    drop(conn);
    let layout = || {
        let conn = rusqlite::Connection::open(&file).unwrap();
        let sql: String = conn
            .query_row("SELECT sql FROM sqlite_master WHERE name = 'vectors'", [], |r| r.get(0))
            .unwrap();
        sql.to_uppercase().contains("WITHOUT ROWID")
    };
    assert!(layout(), "the old layout was made");
    let mut s = SqliteStore::open(dir.path()).unwrap();
    assert!(!layout(), "rewritten on open");
    let after = s.vectors("plain").unwrap();
    assert_eq!((after.ids, after.docs, after.data), (before.ids, before.docs, before.data));
    // The copy logged no change; later writes are logged again; the store checks out.
    assert_eq!(s.vector_changes("plain", generation).unwrap(), Some(vec![]));
    s.write_batch(vec![with_vector("c", 3.0)]).unwrap();
    assert_eq!(s.vector_changes("plain", generation).unwrap().map(|c| c.len()), Some(1));
    assert!(s.check().unwrap().is_ok());
    drop(s);
    assert!(SqliteStore::open(dir.path()).is_ok(), "a second open finds nothing to do");
}
