//! The Store contract against a real PostgreSQL 18 + pgvector server (started by
//! `scripts/pg.sh`), plus what is PostgreSQL's own: schema versions, foreign schemas, snapshots
//! against another connection, NUL characters, and vector search in the database.

use ckeep_core::{Chunk, Document, Span};
use ckeep_store::test_postgres::fresh_database;
use ckeep_store::{
    DocumentWrite, Error, PgStore, StoreRead, StoreWrite, VectorEntry, VectorSearch,
};

ckeep_store::store_contract_tests!(
    ignore = "real tier (scripts/test.sh): PostgreSQL",
    Box::new(PgStore::open_or_create(&fresh_database("contract")).unwrap())
);

/// The same suite through the enum dispatch that `ckeep` itself uses for every store.
mod behind_dyn_store {
    use ckeep_store::test_postgres::fresh_database;
    ckeep_store::store_contract_tests!(
        ignore = "real tier (scripts/test.sh): PostgreSQL",
        Box::new(ckeep_store::DynStore::from(
            ckeep_store::PgStore::open_or_create(&fresh_database("contract-dyn")).unwrap()
        ))
    );
}

fn leaf(text: &str) -> Chunk {
    Chunk {
        span: Span::new(0, text.len()),
        ordinal: 0,
        depth: 0,
        parent: None,
        leaf: true,
        headings: vec![],
    }
}

fn write(store: &mut PgStore, id: &str, text: &str) {
    let doc = Document::new(id, "", text);
    store.write_batch(vec![DocumentWrite::new(doc, vec![leaf(text)])]).unwrap();
}

#[test]
#[ignore = "real tier (scripts/test.sh): PostgreSQL"]
fn reopening_keeps_everything_and_open_does_not_create() {
    let url = fresh_database("reopen");
    let err = PgStore::open(&url).unwrap_err();
    assert!(matches!(err, Error::NotFound { .. }), "{err}");
    {
        let mut s = PgStore::open_or_create(&url).unwrap();
        write(&mut s, "x", "kept");
    }
    let s = PgStore::open(&url).unwrap();
    assert_eq!(s.document("x").unwrap().unwrap().document.text, "kept");
    assert!(s.check().unwrap().is_ok());
}

#[test]
#[ignore = "real tier (scripts/test.sh): PostgreSQL"]
fn newer_schema_and_foreign_schema_are_refused() {
    let url = fresh_database("versions");
    drop(PgStore::open_or_create(&url).unwrap());
    let mut admin = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    admin.batch_execute("UPDATE ckeep.meta SET value = '99' WHERE key = 'schema_version'").unwrap();
    let err = PgStore::open(&url).unwrap_err();
    assert!(matches!(err, Error::NewerSchema { found: 99, .. }), "{err}");
    assert!(err.to_string().contains("upgrade ckeep"));

    let url = fresh_database("foreign");
    let mut admin = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    admin.batch_execute("CREATE SCHEMA ckeep; CREATE TABLE ckeep.meta (other int)").unwrap();
    let err = PgStore::open_or_create(&url).unwrap_err();
    assert!(matches!(err, Error::NotAStore { .. }), "{err}");
}

#[test]
#[ignore = "real tier (scripts/test.sh): PostgreSQL"]
fn unreachable_server_and_bad_url_are_clear_errors() {
    let err = PgStore::open("postgres://ckeep:secret@127.0.0.1:1/x").unwrap_err().to_string();
    assert!(err.contains("PostgreSQL") && err.contains("connect"), "{err}");
    assert!(!err.contains("secret"), "{err}");
    let err = PgStore::open("postgres://h:notaport/db").unwrap_err().to_string();
    assert!(err.contains("not a valid PostgreSQL URL"), "{err}");
}

#[test]
#[ignore = "real tier (scripts/test.sh): PostgreSQL"]
fn a_read_snapshot_does_not_see_later_commits_of_another_writer() {
    let url = fresh_database("snapshot");
    let mut writer = PgStore::open_or_create(&url).unwrap();
    write(&mut writer, "first", "text");
    let reader = PgStore::open(&url).unwrap();
    let before = reader.generation().unwrap();
    assert!(reader.begin_read().unwrap());
    assert_eq!(reader.document_ids().unwrap(), ["first"]);
    write(&mut writer, "second", "text");
    assert_eq!(reader.document_ids().unwrap(), ["first"], "the snapshot holds");
    assert_eq!(reader.generation().unwrap(), before);
    reader.end_read().unwrap();
    assert_eq!(reader.document_ids().unwrap(), ["first", "second"]);
    assert!(reader.generation().unwrap() > before);
}

#[test]
#[ignore = "real tier (scripts/test.sh): PostgreSQL"]
fn nul_characters_are_kept_in_text_and_refused_elsewhere() {
    let url = fresh_database("nul");
    let mut s = PgStore::open_or_create(&url).unwrap();
    write(&mut s, "n", "a\0b");
    assert_eq!(s.document("n").unwrap().unwrap().document.text, "a\0b");
    let doc = Document::new("bad", "ti\0tle", "text");
    let err = s.write_batch(vec![DocumentWrite::new(doc, vec![])]).unwrap_err();
    assert!(err.to_string().contains("NUL"), "{err}");
    assert_eq!(s.document_ids().unwrap(), ["n"], "nothing of the failed batch was written");
}

#[test]
#[ignore = "real tier (scripts/test.sh): PostgreSQL"]
fn nearest_neighbours_are_found_in_the_database() {
    let url = fresh_database("nearest");
    let mut s = PgStore::open_or_create(&url).unwrap();
    // 300 documents with one 8-d vector each; document i points at angle i.
    let docs: Vec<DocumentWrite> = (0..300)
        .map(|i| {
            let a = i as f32 * 0.01;
            let mut w =
                DocumentWrite::new(Document::new(format!("d{i:03}"), "", "x"), vec![leaf("x")]);
            w.vectors.push(VectorEntry {
                repr: "plain".into(),
                ordinal: 0,
                vector: vec![a.cos(), a.sin(), 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
            });
            w
        })
        .collect();
    s.write_batch(docs).unwrap();
    let a = 1.234_f32;
    let q = [a.cos(), a.sin(), 0.0, 0.0, 0.0, 0.0, 0.0, 0.0];
    let all = s.vectors("plain").unwrap();
    for exact in [true, false] {
        let m = s.nearest("plain", &q, 3, exact, None).unwrap();
        let ids = s.doc_ids_by_key(&m.docs).unwrap();
        assert_eq!(ids, ["d123", "d124", "d122"], "exact = {exact}");
        assert_eq!(m.dim, 8);
        let row = all.ids.iter().position(|id| *id == m.ids[0]).unwrap();
        assert_eq!(m.row(0), all.row(row), "vectors come back as stored");
    }
    let within = [all.docs[10], all.docs[200]];
    let m = s.nearest("plain", &q, 5, true, Some(&within)).unwrap();
    assert_eq!(s.doc_ids_by_key(&m.docs).unwrap(), ["d200", "d010"], "only the allowed documents");
    assert!(s.nearest("missing", &q, 3, false, None).unwrap().is_empty());
}
