//! Removal through the writer: all named documents or none, the missing ones named with the
//! `not_found` code every front end answers with, and bad requests refused before the store
//! is touched.

use ckeep_core::Document;
use ckeep_engine::{Engine, ErrorCode, MAX_REMOVE_IDS, RemoveRequest};
use ckeep_store::{DynStore, StoreRead};

fn store_of(dir: &std::path::Path, ids: &[&str]) -> Engine<DynStore> {
    let location = dir.join("s").to_string_lossy().into_owned();
    let mut engine = Engine::new(ckeep_store::open_or_create(&location).unwrap());
    let mut ingest = engine.writer().ingest(&"whole".parse().unwrap()).unwrap();
    for id in ids {
        ingest.add(Document::new(*id, "", format!("text of {id}, 文本"))).unwrap();
    }
    ingest.finish().unwrap();
    engine
}

#[test]
fn all_named_documents_or_none() {
    let dir = tempfile::tempdir().unwrap();
    let mut engine = store_of(dir.path(), &["a", "b", "文档"]);
    let err = engine.writer().remove(&RemoveRequest::new(["a", "nope", "gone"]).unwrap());
    let err = err.unwrap_err();
    assert_eq!(err.code(), ErrorCode::NotFound);
    assert_eq!(err.to_string(), "no such document(s): nope, gone; nothing was removed");
    assert_eq!(engine.store().document_count().unwrap(), 3, "nothing removed");

    let removed = engine.writer().remove(&RemoveRequest::new(["文档", "a", "文档"]).unwrap());
    let removed = removed.unwrap();
    assert_eq!((removed.removed, removed.ids), (2, vec!["文档".to_string(), "a".to_string()]));
    assert_eq!(engine.store().document_ids().unwrap(), ["b"]);
    assert!(engine.searcher().unwrap().check().unwrap().ok);
}

#[test]
fn bad_requests_are_refused_before_the_store() {
    let none: [&str; 0] = [];
    for (ids, says) in [
        (none.iter().map(ToString::to_string).collect::<Vec<_>>(), "at least one"),
        (vec![String::new()], "empty"),
        ((0..=MAX_REMOVE_IDS).map(|i| format!("d{i}")).collect(), "at most"),
    ] {
        let err = RemoveRequest::new(ids).unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidParameter);
        assert!(err.to_string().contains(says), "{err}");
    }
    // As many as allowed, repeats counted once.
    let ids = (0..MAX_REMOVE_IDS).map(|i| format!("d{i}")).chain(["d0".to_string()]);
    assert_eq!(RemoveRequest::new(ids).unwrap().ids().len(), MAX_REMOVE_IDS);
}
