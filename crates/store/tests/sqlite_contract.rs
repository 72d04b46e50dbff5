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

/// The same suite through the `Box` forwarding that `ckeep` itself uses for every store.
mod behind_dyn_store {
    ckeep_store::store_contract_tests!(Box::new(Box::new(
        ckeep_store::SqliteStore::in_memory().unwrap()
    ) as ckeep_store::DynStore));
}
