//! The `Store` contract: one suite that every implementation must pass.
#![allow(clippy::missing_panics_doc)] // test code: every assertion is a panic by design
//!
//! Use [`crate::store_contract_tests!`] with an expression that makes a fresh, empty store behind
//! a pointer (a `Box`, or a guard that also owns a temporary directory); it expands to one
//! `#[test]` per property:
//! 1. a written document reads back byte-identical, with its chunk tree and headings;
//! 2. re-writing an id replaces the document and everything derived from it;
//! 3. removing deletes documents, chunks, postings, vectors and summaries, also together with
//!    writes in one change;
//! 4. posting lists and lexical statistics are exact;
//! 5. an invalid write fails as a whole and changes nothing;
//! 6. vectors and summaries round-trip;
//! 7. the manifest round-trips;
//! 8. span text is exact, also around multi-byte characters, one span or many at once;
//! 9. look-ups by chunk id and document key keep the order asked, and ids page in byte order;
//! 10. entries derived later (summaries, a representation, a lexical field) are added to, and
//!     replace their kind in, the stored document only while it is unchanged, and what each
//!     document still lacks is listed;
//! 11. metadata filters select documents by equality and array membership, and the
//!     generation grows with every kind of write;
//! 12. a store's own vector search ([`crate::StoreRead::vector_search`]), when it has one,
//!     finds the nearest chunks (of the allowed documents) with their stored vectors;
//! 13. `check` passes on every store the other tests leave behind;
//! 14. every filter operator, on numbers, dates, strings (Chinese among them), booleans,
//!     arrays and missing keys, selects exactly the documents [`MetadataFilter::matches`]
//!     passes, whatever the store pushes down into its queries.
//!
//! Run it on a store behind [`crate::DynStore`] as well, so every forwarded method is covered.

use ckeep_core::{Chunk, ChunkId, Document, Span};

use crate::{
    DerivedWrite, DocumentWrite, Lacking, LexicalEntry, Manifest, MetadataFilter, StoreWrite,
    VectorEntry,
};

/// Expands to the contract suite for the store made by `$make`. With `ignore = "why"` first,
/// every test is `#[ignore]`d with that reason: the real tier's way to keep a suite that needs
/// a server out of a plain `cargo test` (`--include-ignored` runs it).
#[macro_export]
macro_rules! store_contract_tests {
    (ignore = $why:literal, $make:expr) => {
        $crate::store_contract_tests!(@tests [#[ignore = $why]] $make);
    };
    ($make:expr) => {
        $crate::store_contract_tests!(@tests [] $make);
    };
    (@tests [$(#[$attr:meta])*] $make:expr) => {
        $crate::store_contract_tests!(@each [$(#[$attr])*] $make;
            roundtrip, replace, remove, postings_and_stats, invalid_write_is_atomic,
            vectors_and_summaries, manifest, span_text, lookups_keep_order, derived_entries,
            filters_and_generation, nearest, filter_operators);
    };
    (@each $attrs:tt $make:expr; $($name:ident),*) => {$(
        $crate::store_contract_tests!(@one $attrs $make; $name);
    )*};
    (@one [$(#[$attr:meta])*] $make:expr; $name:ident) => {
        #[test]
        $(#[$attr])*
        fn $name() {
            let mut holder = $make;
            let store: &mut dyn $crate::StoreWrite = &mut *holder;
            $crate::contract::$name(store);
            let report = store.check().unwrap();
            assert!(report.is_ok(), "check after {}: {:?}", stringify!($name), report.problems);
        }
    };
}

fn chunk(
    start: usize,
    end: usize,
    ordinal: u32,
    depth: u16,
    parent: Option<u32>,
    leaf: bool,
) -> Chunk {
    Chunk { span: Span::new(start, end), ordinal, depth, parent, leaf, headings: Vec::new() }
}

/// A document with a two-level chunk tree and lexical entries for its leaves.
fn sample(id: &str, text: &str) -> DocumentWrite {
    // Split at the first whitespace after the middle, so no word is cut.
    let mid = text
        .char_indices()
        .find(|&(i, c)| i >= text.len() / 2 && c.is_whitespace())
        .map_or(text.len(), |(i, _)| i);
    let mut doc = Document::new(id, format!("Title of {id}"), text);
    doc.metadata = serde_json::json!({"lang": "en", "n": 1});
    doc.source = format!("{id}.txt");
    let mut chunks = vec![
        chunk(0, text.len(), 0, 0, None, false),
        chunk(0, mid, 1, 1, Some(0), true),
        chunk(mid, text.len(), 2, 1, Some(0), true),
    ];
    chunks[1].headings = vec!["# Top".into(), "## Sub".into()];
    let lexical = [1u32, 2]
        .iter()
        .map(|&o| {
            let span = chunks[o as usize].span;
            let words: Vec<String> =
                span.slice(text).split_whitespace().map(str::to_lowercase).collect();
            let mut terms: Vec<(String, u32)> = Vec::new();
            for w in &words {
                match terms.iter_mut().find(|(t, _)| t == w) {
                    Some((_, n)) => *n += 1,
                    None => terms.push((w.clone(), 1)),
                }
            }
            LexicalEntry { field: "plain".into(), ordinal: o, terms, len: words.len() as u32 }
        })
        .collect();
    DocumentWrite { document: doc, chunks, lexical, vectors: Vec::new(), summaries: Vec::new() }
}

/// Property 1.
pub fn roundtrip(store: &mut dyn StoreWrite) {
    let w = sample("a", "héllo wörld, a text\nwith two lines");
    store.write_batch(vec![w.clone()]).unwrap();
    let got = store.document("a").unwrap().expect("stored");
    assert_eq!(got.document, w.document);
    assert_eq!(got.chunks, 3);
    assert_eq!(got.hash, w.document.content_hash().to_hex());
    assert_eq!(store.document_hash("a").unwrap(), Some(got.hash.clone()));
    let chunks: Vec<Chunk> = store.chunks_of("a").unwrap().into_iter().map(|c| c.chunk).collect();
    assert_eq!(chunks, w.chunks);
    assert!(store.document("missing").unwrap().is_none());
    assert_eq!(store.document_ids().unwrap(), ["a"]);
    assert_eq!(store.document_sources().unwrap(), [("a".to_string(), "a.txt".to_string())]);
    assert_eq!(store.document_count().unwrap(), 1);

    // A source map comes back from the metadata it is kept in.
    let map = ckeep_core::SourceMap { starts: vec![0, 7], pages: vec![1, 2], paths: vec![] };
    let mut mapped = sample("m", "mapped text on two pages");
    mapped.document.metadata = serde_json::json!({"source_map": map, "lang": "en"});
    store.write_batch(vec![mapped]).unwrap();
    let keys = [store.document("m").unwrap().unwrap().key, got.key];
    assert_eq!(store.source_maps(&keys).unwrap(), [Some(map), None]);
}

/// Property 2.
pub fn replace(store: &mut dyn StoreWrite) {
    store.write_batch(vec![sample("a", "old words here"), sample("b", "other doc text")]).unwrap();
    store.write_batch(vec![sample("a", "new text now")]).unwrap();
    let doc = store.document("a").unwrap().unwrap();
    assert_eq!(doc.document.text, "new text now");
    let (stats, lists) =
        store.postings("plain", &["old".into(), "new".into(), "text".into()]).unwrap();
    assert!(lists[0].is_empty(), "postings of the replaced text are gone");
    assert_eq!(lists[1].len(), 1);
    assert_eq!(lists[2].len(), 2, "`text` in a and b");
    assert_eq!(stats.chunks, 4);
    assert_eq!(stats.total_len, 6);
    assert_eq!(store.stats().unwrap().documents, 2);
}

/// Property 3.
pub fn remove(store: &mut dyn StoreWrite) {
    let mut w = sample("a", "some text to remove");
    w.vectors.push(VectorEntry { repr: "plain".into(), ordinal: 1, vector: vec![1.0, 2.0] });
    w.summaries.push(("lead:5".into(), "some text".into()));
    store.write_batch(vec![w, sample("b", "kept text")]).unwrap();
    assert_eq!(store.remove(&["a".into(), "nope".into()]).unwrap(), 1);
    assert!(store.document("a").unwrap().is_none());
    assert!(store.chunks_of("a").unwrap().is_empty());
    assert!(store.vectors("plain").unwrap().is_empty());
    assert!(store.summaries("a").unwrap().is_empty());
    let (stats, lists) = store.postings("plain", &["remove".into(), "text".into()]).unwrap();
    assert!(lists[0].is_empty());
    assert_eq!(lists[1].len(), 1);
    assert_eq!(stats.chunks, 2);
    let s = store.stats().unwrap();
    assert_eq!((s.documents, s.chunks, s.leaf_chunks), (1, 3, 2));
    // One change: `b` replaced, `c` added, `b2` removed, `nope` never there.
    store.write_batch(vec![sample("b2", "gone soon")]).unwrap();
    let before = store.generation().unwrap();
    let changes = vec![sample("b", "kept text edited"), sample("c", "a new one")];
    assert_eq!(store.write_changes(changes, &["b2".into(), "nope".into()]).unwrap(), 1);
    assert_eq!(store.document_ids().unwrap(), ["b", "c"]);
    assert_eq!(store.document("b").unwrap().unwrap().document.text, "kept text edited");
    assert!(store.chunks_of("b2").unwrap().is_empty());
    assert!(store.postings("plain", &["soon".into()]).unwrap().1[0].is_empty());
    assert!(store.generation().unwrap() > before);
}

/// Property 4.
pub fn postings_and_stats(store: &mut dyn StoreWrite) {
    store.write_batch(vec![sample("a", "x y x z"), sample("b", "y y w")]).unwrap();
    let (stats, lists) = store.postings("plain", &["x".into(), "y".into(), "q".into()]).unwrap();
    // a: leaves "x y" and " x z"; b: leaves "y y" and " w".
    assert_eq!(stats.chunks, 4);
    assert_eq!(stats.total_len, 7);
    assert_eq!(lists[0].len(), 2);
    assert!(lists[0].iter().all(|p| p.tf == 1 && p.len == 2));
    assert_eq!(lists[1].len(), 2);
    assert_eq!(lists[1][1].tf, 2, "`y y` in b");
    assert!(lists[1].windows(2).all(|w| w[0].chunk < w[1].chunk), "sorted by chunk");
    assert!(lists[2].is_empty());
    let (_, twice) = store.postings("plain", &["y".into(), "x".into(), "y".into()]).unwrap();
    assert_eq!(
        (&twice[0], &twice[1], &twice[2]),
        (&lists[1], &lists[0], &lists[1]),
        "a term asked twice"
    );
    let (none, _) = store.postings("contextual", &[]).unwrap();
    assert_eq!(none.chunks, 0, "unknown field has empty statistics");
    let s = store.stats().unwrap();
    assert_eq!(s.lexical.len(), 1);
    assert_eq!(s.lexical[0].postings, 2 + 2 + 1 + 1);
    assert_eq!(s.lexical[0].terms, 4);
}

/// Property 5.
pub fn invalid_write_is_atomic(store: &mut dyn StoreWrite) {
    store.write_batch(vec![sample("keep", "original text")]).unwrap();
    let good = sample("new", "fine text");
    let mut bad = sample("bad", "héllo");
    bad.chunks[1].span = Span::new(0, 2); // splits the é
    assert!(store.write_batch(vec![good.clone(), bad]).is_err());
    let mut bad_replace = sample("keep", "changed");
    bad_replace.chunks[2].span = Span::new(0, 99);
    assert!(store.write_batch(vec![bad_replace]).is_err());
    assert!(store.document("new").unwrap().is_none(), "nothing of a failed batch is written");
    assert_eq!(store.document("keep").unwrap().unwrap().document.text, "original text");
    let mut bad_parent = sample("p", "abc def");
    bad_parent.chunks[0].parent = Some(2);
    assert!(store.write_batch(vec![bad_parent]).is_err());
}

/// Property 6.
pub fn vectors_and_summaries(store: &mut dyn StoreWrite) {
    let mut w = sample("a", "vectors here");
    w.vectors = vec![
        VectorEntry {
            repr: "plain".into(),
            ordinal: 1,
            vector: vec![0.5, -1.25, f32::MIN_POSITIVE],
        },
        VectorEntry { repr: "plain".into(), ordinal: 2, vector: vec![3.0, 0.0, -0.0] },
    ];
    w.summaries = vec![("lead:3".into(), "vectors".into())];
    store.write_batch(vec![w.clone()]).unwrap();
    let got = store.vectors("plain").unwrap();
    assert_eq!((got.len(), got.dim), (2, 3));
    assert_eq!(got.row(0), w.vectors[0].vector.as_slice());
    assert_eq!(got.row(1), w.vectors[1].vector.as_slice());
    let chunks = store.chunks_of("a").unwrap();
    assert_eq!(got.ids, [chunks[1].id, chunks[2].id]);
    assert_eq!(got.docs, [chunks[1].doc, chunks[1].doc]);
    assert!(store.vectors("other").unwrap().is_empty());
    // One at a time, in the same order; only chosen chunks, in chunk order, unknown skipped.
    let each = |only: Option<&[ChunkId]>, repr: &str| {
        let mut out = Vec::new();
        store.each_vector(repr, only, &mut |c, d, v| out.push((c, d, v.to_vec()))).unwrap();
        out
    };
    let whole: Vec<_> = (0..2).map(|i| (got.ids[i], got.docs[i], got.row(i).to_vec())).collect();
    assert_eq!(each(None, "plain"), whole);
    let asked = [got.ids[1], ChunkId(i64::MAX), got.ids[0]];
    assert_eq!(each(Some(&asked), "plain"), whole);
    assert_eq!(each(Some(&asked[..1]), "plain"), whole[1..]);
    assert!(each(Some(&asked), "other").is_empty());
    assert!(each(Some(&[]), "plain").is_empty());
    // Derived blobs: absent, stored, replaced.
    assert_eq!(store.aux("hnsw:plain").unwrap(), None);
    store.set_aux("hnsw:plain", &[1, 2, 3]).unwrap();
    store.set_aux("hnsw:plain", &[4, 5]).unwrap();
    assert_eq!(store.aux("hnsw:plain").unwrap(), Some(vec![4, 5]));
    // Several blobs put and removed together.
    store.write_aux(&[("hnsw:plain#1", &[6]), ("hnsw:plain#2", &[7])], &["hnsw:plain"]).unwrap();
    assert_eq!(store.aux("hnsw:plain").unwrap(), None);
    assert_eq!(store.aux("hnsw:plain#2").unwrap(), Some(vec![7]));
    store.write_aux(&[], &["hnsw:plain#1", "hnsw:plain#2"]).unwrap();
    assert_eq!(store.aux("hnsw:plain#1").unwrap(), None);
    assert_eq!(store.summaries("a").unwrap(), w.summaries);
    let s = store.stats().unwrap();
    assert_eq!(s.representations[0].vectors, 2);
    assert_eq!(s.representations[0].bytes, 24);
}

/// Property 7.
pub fn manifest(store: &mut dyn StoreWrite) {
    let mut m = store.manifest().unwrap();
    assert_eq!(m.schema_version, crate::SCHEMA_VERSION);
    m.chunker = Some("paragraphs:1".into());
    m.analyzer = Some("an".into());
    m.representations = vec!["plain".into()];
    store.set_manifest(&m).unwrap();
    assert_eq!(store.manifest().unwrap(), m);
    let _: Manifest = m;
}

/// Property 8.
pub fn span_text(store: &mut dyn StoreWrite) {
    let text = "日本語 and émojis 👩‍👩‍👧 end";
    store.write_batch(vec![sample("u", text)]).unwrap();
    let doc = store.document("u").unwrap().unwrap();
    for c in store.chunks_of("u").unwrap() {
        assert_eq!(store.span_text(doc.key, c.chunk.span).unwrap(), c.chunk.span.slice(text));
    }
    let emoji = text.find('👩').unwrap();
    let span = Span::new(emoji, text.find(" end").unwrap());
    assert_eq!(store.span_text(doc.key, span).unwrap(), "👩‍👩‍👧");
    store.write_batch(vec![sample("v", "second document")]).unwrap();
    let other = store.document("v").unwrap().unwrap();
    let asked = [(doc.key, span), (other.key, Span::new(7, 15)), (doc.key, Span::new(0, 9))];
    assert_eq!(store.span_texts(&asked).unwrap(), ["👩‍👩‍👧", "document", "日本語"]);
    assert!(store.span_texts(&[]).unwrap().is_empty());
}

/// Property 9.
pub fn lookups_keep_order(store: &mut dyn StoreWrite) {
    // Pages of ids in byte order (uppercase before lowercase, `é` after `z`), by cursor and offset.
    let ids = ["b", "a", "Z", "é", "a1", "z"];
    store.write_batch(ids.iter().map(|id| sample(id, "some text")).collect()).unwrap();
    let sorted = ["Z", "a", "a1", "b", "z", "é"];
    assert_eq!(store.document_ids().unwrap(), sorted);
    assert_eq!(store.document_count().unwrap(), 6);
    assert_eq!(store.document_ids_page(None, 0, 2).unwrap(), ["Z", "a"]);
    assert_eq!(store.document_ids_page(Some("a"), 0, 3).unwrap(), ["a1", "b", "z"]);
    assert_eq!(store.document_ids_page(Some("a"), 2, 3).unwrap(), ["z", "é"]);
    assert_eq!(store.document_ids_page(None, 4, usize::MAX).unwrap(), ["z", "é"]);
    assert!(store.document_ids_page(Some("é"), 0, 5).unwrap().is_empty());
    store.remove(&ids.iter().map(|id| (*id).to_string()).collect::<Vec<_>>()).unwrap();

    store.write_batch(vec![sample("a", "one two"), sample("b", "three four")]).unwrap();
    let a = store.chunks_of("a").unwrap();
    let b = store.chunks_of("b").unwrap();
    let ids = [b[2].id, a[1].id, ChunkId(-5), b[0].id];
    let got: Vec<(ChunkId, String)> =
        store.chunks_by_id(&ids).unwrap().into_iter().map(|c| (c.id, c.doc_id)).collect();
    assert_eq!(got, [(b[2].id, "b".into()), (a[1].id, "a".into()), (b[0].id, "b".into())]);
    assert_eq!(store.doc_ids_by_key(&[b[0].doc, a[0].doc]).unwrap(), ["b", "a"]);
}

/// Property 10.
pub fn derived_entries(store: &mut dyn StoreWrite) {
    store.write_batch(vec![sample("a", "alpha beta gamma"), sample("b", "delta epsilon")]).unwrap();
    let hash = |store: &dyn StoreWrite, id: &str| store.document(id).unwrap().unwrap().hash;
    assert_eq!(store.documents_lacking(Lacking::Summary("lead:2")).unwrap(), ["a", "b"]);
    assert_eq!(store.documents_lacking(Lacking::Vectors("late")).unwrap(), ["a", "b"]);
    assert!(store.documents_lacking(Lacking::Field("plain")).unwrap().is_empty());
    let entry = |field: &str, ordinal: u32, terms: &[&str]| LexicalEntry {
        field: field.into(),
        ordinal,
        terms: terms.iter().map(|t| ((*t).to_string(), 1)).collect(),
        len: terms.len() as u32,
    };
    let derived = DerivedWrite {
        doc_id: "a".into(),
        hash: hash(store, "a"),
        summaries: vec![("lead:2".into(), "alpha beta".into())],
        lexical: vec![entry("ctx", 1, &["title", "alpha"]), entry("ctx", 2, &["title", "gamma"])],
        vectors: vec![VectorEntry { repr: "late".into(), ordinal: 1, vector: vec![1.0, 2.0] }],
    };
    let stale = DerivedWrite { doc_id: "b".into(), hash: "0".repeat(64), ..derived.clone() };
    let gone = DerivedWrite { doc_id: "zz".into(), ..derived.clone() };
    assert_eq!(store.write_derived(vec![derived.clone(), stale, gone]).unwrap(), 1);
    assert_eq!(store.documents_lacking(Lacking::Summary("lead:2")).unwrap(), ["b"]);
    assert_eq!(store.documents_lacking(Lacking::Vectors("late")).unwrap(), ["b"]);
    assert_eq!(store.documents_lacking(Lacking::Field("ctx")).unwrap(), ["b"]);
    let (stats, lists) = store.postings("ctx", &["title".into()]).unwrap();
    assert_eq!((stats.chunks, stats.total_len, lists[0].len()), (2, 4, 2));
    // Written again (a resumed run): replaced, not doubled; other kinds untouched.
    let again = DerivedWrite {
        summaries: vec![("lead:2".into(), "alpha".into())],
        lexical: vec![entry("ctx", 1, &["title"])],
        ..derived
    };
    assert_eq!(store.write_derived(vec![again]).unwrap(), 1);
    let (stats, lists) = store.postings("ctx", &["title".into(), "gamma".into()]).unwrap();
    assert_eq!((stats.chunks, stats.total_len), (1, 1));
    assert!(lists[1].is_empty(), "the old entries of the field are gone");
    assert_eq!(store.summaries("a").unwrap(), [("lead:2".to_string(), "alpha".to_string())]);
    assert_eq!(store.vectors("late").unwrap().len(), 1);
    assert_eq!(store.postings("plain", &[]).unwrap().0.chunks, 4, "plain field untouched");
    // An entry for a chunk the document does not have fails and writes nothing.
    let bad = DerivedWrite {
        doc_id: "b".into(),
        hash: hash(store, "b"),
        vectors: vec![VectorEntry { repr: "late".into(), ordinal: 9, vector: vec![0.0] }],
        ..DerivedWrite::default()
    };
    assert!(store.write_derived(vec![bad]).is_err());
    assert_eq!(store.documents_lacking(Lacking::Vectors("late")).unwrap(), ["b"]);
    // Removing a document removes its derived entries.
    store.remove(&["a".into()]).unwrap();
    assert_eq!(store.postings("ctx", &[]).unwrap().0.chunks, 0);
    assert!(store.vectors("late").unwrap().is_empty());
}

/// Property 11.
pub fn filters_and_generation(store: &mut dyn StoreWrite) {
    let mut last = store.generation().unwrap();
    let mut wrote = |store: &mut dyn StoreWrite, what: &str| {
        let now = store.generation().unwrap();
        assert!(now > last, "{what} advances the generation ({last} -> {now})");
        last = now;
    };
    let mut docs: Vec<DocumentWrite> =
        ["a", "b", "c", "d"].iter().map(|id| sample(id, "some words here")).collect();
    docs[0].document.metadata = serde_json::json!({"lang": "en", "year": 2020, "tags": ["x", "y"]});
    docs[1].document.metadata = serde_json::json!({"lang": "de", "year": 2021});
    docs[2].document.metadata = serde_json::Value::Null;
    docs[3].document.metadata = serde_json::json!({"lang": "en", "year": "2020"});
    store.write_batch(docs).unwrap();
    wrote(store, "write_batch");
    let keys = |store: &dyn StoreWrite, filter: serde_json::Value| -> Vec<String> {
        let filter: MetadataFilter = serde_json::from_value(filter).unwrap();
        let keys = store.doc_keys_where(&filter).unwrap();
        store.doc_ids_by_key(&keys).unwrap()
    };
    assert_eq!(keys(store, serde_json::json!({"lang": "en"})), ["a", "d"]);
    assert_eq!(keys(store, serde_json::json!({"lang": "en", "year": 2020})), ["a"], "types count");
    assert_eq!(keys(store, serde_json::json!({"tags": "y"})), ["a"], "array membership");
    assert_eq!(keys(store, serde_json::json!({"year": [2021, "2020"]})), ["b", "d"], "any of");
    assert!(keys(store, serde_json::json!({"missing": 1})).is_empty());
    assert_eq!(
        keys(store, serde_json::json!({})).len(),
        3,
        "documents without metadata never pass"
    );
    store.remove(&["b".to_string()]).unwrap();
    wrote(store, "remove");
    store
        .set_manifest(&Manifest { chunker: Some("x".into()), ..store.manifest().unwrap() })
        .unwrap();
    wrote(store, "set_manifest");
    store.set_aux("blob", b"1").unwrap();
    wrote(store, "set_aux");
    let derived = DerivedWrite {
        doc_id: "a".into(),
        hash: store.document_hash("a").unwrap().unwrap(),
        summaries: vec![("lead".into(), "some".into())],
        lexical: Vec::new(),
        vectors: Vec::new(),
    };
    store.write_derived(vec![derived]).unwrap();
    wrote(store, "write_derived");
    let chunk_ids: Vec<ChunkId> = store.chunks_of("a").unwrap().iter().map(|c| c.id).collect();
    let asked = [chunk_ids[1], ChunkId(i64::MAX), chunk_ids[0]];
    assert_eq!(store.live_chunks(&asked).unwrap(), [chunk_ids[1], chunk_ids[0]]);
    assert!(store.begin_read().unwrap());
    assert!(!store.begin_read().unwrap(), "no nested snapshot");
    assert_eq!(store.document_ids().unwrap().len(), 3);
    store.end_read().unwrap();
}

/// Property 12.
pub fn nearest(store: &mut dyn StoreWrite) {
    // Document i's two leaves point at angles i/10 and i/10 + 1.5 in the plane.
    let docs: Vec<DocumentWrite> = (0..20u8)
        .map(|i| {
            let mut w = sample(&format!("n{i:02}"), "left half right half");
            w.vectors = [(1, 0.0), (2, 1.5)]
                .iter()
                .map(|&(ordinal, offset)| {
                    let a = f32::from(i) / 10.0 + offset;
                    VectorEntry { repr: "plain".into(), ordinal, vector: vec![a.cos(), a.sin()] }
                })
                .collect();
            w
        })
        .collect();
    store.write_batch(docs).unwrap();
    let a = 0.72_f32;
    let query = [a.cos(), a.sin()];
    let Some(search) = store.vector_search() else {
        return;
    };
    let m = search.nearest("plain", &query, 2, true, None).unwrap();
    assert_eq!(store.doc_ids_by_key(&m.docs).unwrap(), ["n07", "n08"]);
    assert_eq!(m.dim, 2);
    let stored = store.vectors("plain").unwrap();
    let row = stored.ids.iter().position(|id| *id == m.ids[0]).unwrap();
    assert_eq!(m.row(0), stored.row(row), "vectors come back as stored");
    let key = |id: &str| store.document(id).unwrap().unwrap().key;
    let within = [key("n15"), key("n03")];
    let m = search.nearest("plain", &query, 5, true, Some(&within)).unwrap();
    let ids = store.doc_ids_by_key(&m.docs).unwrap();
    assert_eq!(ids.len(), 4, "both leaves of the two allowed documents: {ids:?}");
    assert!(ids.iter().all(|id| id == "n03" || id == "n15"), "{ids:?}");
    assert!(search.nearest("missing", &query, 3, true, None).unwrap().is_empty());
}

/// Property 14.
pub fn filter_operators(store: &mut dyn StoreWrite) {
    use serde_json::json;
    let metadata = [
        json!({"year": 2020, "lang": "en", "tags": ["x", "y"], "path": "docs/a.md", "draft": true,
               "at": "2024-05-01T10:00:00+02:00", "score": 0.5}),
        json!({"year": 2021, "lang": "de", "tags": [], "path": "docs/sub/b.md", "draft": false,
               "at": "2024-05-01", "score": 1}),
        json!({"year": "2020", "lang": ["en", "zh"], "path": "notes/c.md", "note": null,
               "at": "2024-04-30T23:59:59Z"}),
        json!({"year": 2019.5, "lang": "zh", "path": "文档/河流.md", "区": "东区",
               "tags": ["河流", "海"], "score": -3}),
        json!({"year": 1e3, "nested": {"k": 1}, "path": "docs", "lang": [["en", "de"], "fr"]}),
        json!({}),
    ];
    let docs = metadata
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let mut d = sample(&format!("m{i}"), "some words here");
            d.document.metadata = m.clone();
            d
        })
        .collect();
    store.write_batch(docs).unwrap();
    let filters = [
        "year = 2020",
        "year != 2020",
        "year > 2019.5",
        "year >= 2020",
        "year < 2020",
        "year <= 2019.5",
        "year > 100",
        "year in [2020, 2021]",
        "year not in [2020]",
        "lang = en",
        "lang in [zh, fr]",
        "lang not in [en]",
        "tags ~ y",
        "tags ~ 河流",
        "path ^= docs/",
        "path ^= 文档/",
        "path ^= docs",
        "path ~ sub",
        "note exists",
        "not note exists",
        "区 = 东区",
        "区 ^= 东",
        "draft = true",
        "draft = false",
        "at >= \"2024-05-01\"",
        "at < \"2024-05-01T09:00:00Z\"",
        "score > 0",
        "score <= 0.5",
        "year >= 2020 and lang = en",
        "year = 2021 or lang = zh",
        "not (lang = en or year < 2000)",
        "missing exists",
        "tags = []",
    ];
    let mut cases: Vec<MetadataFilter> = filters
        .iter()
        .map(|f| MetadataFilter::parse(f).unwrap_or_else(|e| panic!("{f}: {e}")))
        .collect();
    for raw in [
        json!({"lang": ["en", "de"]}),
        json!({"nested": {"k": 1}}),
        json!({"year": {"$gt": 2019, "$lt": 2021}}),
        json!({"tags": {"$contains": "x"}}),
        json!({"year": {"$in": []}}),
        json!({"$or": [{"year": 2021}, {"$not": {"lang": "en"}}]}),
        json!({"$and": [{"path": {"$prefix": "docs/"}}, {"draft": {"$ne": true}}]}),
    ] {
        cases.push(serde_json::from_value(raw).unwrap());
    }
    // The widest and deepest filters the bounds let through are still SQL the database takes
    // (a flat OR of a thousand parts was past SQLite's expression depth).
    let wide: Vec<_> =
        (0..crate::MAX_FILTER_CONDITIONS).map(|i| json!({"year": 1000 + i})).collect();
    let values: Vec<_> = (0..crate::MAX_FILTER_VALUES).map(|i| json!(i + 1000)).collect();
    let mut deep = json!({"lang": "zh"});
    for _ in 0..crate::MAX_FILTER_DEPTH {
        deep = json!({"$and": [deep, {"path": {"$prefix": "文档"}}]});
    }
    for raw in [json!({"$or": wide}), json!({"year": {"$in": values}}), deep] {
        cases.push(serde_json::from_value(raw).unwrap());
    }
    for filter in cases {
        let keys = store.doc_keys_where(&filter).unwrap();
        let got = store.doc_ids_by_key(&keys).unwrap();
        let want: Vec<String> = metadata
            .iter()
            .enumerate()
            .filter(|(_, m)| filter.matches(m))
            .map(|(i, _)| format!("m{i}"))
            .collect();
        assert_eq!(got, want, "{}", serde_json::to_string(&filter).unwrap());
    }
}
