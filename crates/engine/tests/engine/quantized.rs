//! Dense search over quantised vectors (int8, binary): the store records the choice, searches
//! find what float32 search finds, in English and Chinese, with and without rescoring, under
//! filters, and see writes and deletions. Fast tier: `SQLite` and the deterministic test
//! embedder. (Recall on real vectors: `ann.rs`, real tier.)

use std::sync::Arc;

use ckeep_core::Document;
use ckeep_engine::{Engine, SearchRequest, Strategy};
use ckeep_index::Quantization;
use ckeep_store::{MetadataFilter, SqliteStore, StoreRead};

const DOCS: [(&str, &str); 6] = [
    ("rivers", "Rivers carry water from the mountains down to the sea."),
    ("bread", "Knead the dough, let it rise, then bake the bread in a hot oven."),
    ("stars", "Stars burn hydrogen into helium in their cores for billions of years."),
    ("chess", "The knight moves in an L shape and can jump over other pieces."),
    ("河流", "河流把山上的水带到大海。"),
    ("面包", "揉面，让面团发酵，然后在热烤箱里烤面包。"),
];

fn engine() -> Engine<SqliteStore> {
    let mut engine = Engine::new(SqliteStore::in_memory().unwrap())
        .with_embedder(Arc::new(ckeep_embed::HashingEmbedder::new(256)));
    let mut ingest = engine.writer().ingest(&"paragraphs".parse().unwrap()).unwrap();
    for (id, text) in DOCS {
        let mut doc = Document::new(id, "", text);
        let lang = if text.is_ascii() { "en" } else { "zh" };
        doc.metadata = serde_json::json!({ "lang": lang });
        ingest.add(doc).unwrap();
    }
    ingest.finish().unwrap();
    engine
}

fn search(engine: &Engine<SqliteStore>, query: &str, spec: &str) -> Vec<(String, f32)> {
    let strategy: Strategy = format!("mode=dense,{spec}").parse().unwrap();
    let req = SearchRequest::new(query).with_strategy(strategy);
    let hits = engine.search(&req).unwrap().results;
    hits.into_iter().map(|r| (r.doc_id, r.score)).collect()
}

fn top(engine: &Engine<SqliteStore>, query: &str, spec: &str) -> String {
    search(engine, query, spec).first().map(|h| h.0.clone()).unwrap_or_default()
}

#[test]
fn quantised_search_ranks_and_scores_as_float32_search_does() {
    let mut engine = engine();
    let exact = search(&engine, "water of rivers", "k=6");
    for kind in [Quantization::Int8, Quantization::Binary] {
        engine.writer().set_quantization(None, kind).unwrap();
        assert_eq!(engine.store().manifest().unwrap().quantize["plain"], kind.to_string());
        // Rescored: the same documents, with their exact scores.
        let got = search(&engine, "water of rivers", "k=6,oversample=6");
        assert_eq!(got, exact, "{kind}");
        assert_eq!(top(&engine, "bake the bread", "k=3"), "bread", "{kind}");
        assert_eq!(top(&engine, "山上的河流", "k=3"), "河流", "{kind}");
        assert_eq!(top(&engine, "烤面包", "k=3"), "面包", "{kind}");
        // The codes alone still find the obvious match.
        assert_eq!(top(&engine, "water of rivers", "k=3,rescore=false"), "rivers", "{kind}");
        // `exact=true` scans the float32 vectors.
        assert_eq!(search(&engine, "water of rivers", "k=6,exact=true"), exact, "{kind}");
    }
    let memory = engine.vectors().memory();
    let codes: Vec<_> = memory.iter().filter(|(k, _)| k.contains('@')).collect();
    assert_eq!(codes.len(), 2, "int8 and binary codes were loaded: {memory:?}");
    assert!(memory.iter().any(|(k, _)| k == "plain"), "and float32 vectors, to scan exactly");
    let binary = memory.iter().find(|(k, _)| k.ends_with("@binary")).unwrap().1;
    assert_eq!(binary, 6 * (256 / 8 + 16), "32 bytes of bits and two ids per chunk");
    engine.writer().set_quantization(None, Quantization::None).unwrap();
    assert!(engine.store().manifest().unwrap().quantize.is_empty());
    // A strategy can ask for codes the store does not keep, to try them on its vectors.
    assert_eq!(search(&engine, "water of rivers", "k=6,quantize=int8,oversample=6"), exact);
    assert_eq!(top(&engine, "烤面包", "k=1,quantize=int8,rescore=false"), "面包");
}

#[test]
fn quantised_search_sees_writes_filters_and_deletions() {
    let mut engine = engine();
    engine.writer().set_quantization(Some("plain"), Quantization::Int8).unwrap();
    assert_eq!(top(&engine, "the knight jumps", "k=1"), "chess");
    let mut ingest = engine.writer().ingest(&"paragraphs".parse().unwrap()).unwrap();
    ingest.add(Document::new("knight", "", "A knight in armour rode to the castle.")).unwrap();
    ingest.remove(["chess".to_string()]);
    ingest.finish().unwrap();
    let found: Vec<String> =
        search(&engine, "the knight jumps", "k=6").into_iter().map(|h| h.0).collect();
    assert!(found.contains(&"knight".to_string()), "{found:?}");
    assert!(!found.contains(&"chess".to_string()), "{found:?}");
    // A filter keeps only its documents' chunks, ranked among themselves.
    let filter: MetadataFilter = serde_json::from_str(r#"{"lang": "zh"}"#).unwrap();
    let strategy: Strategy = "mode=dense,k=6".parse().unwrap();
    let req =
        SearchRequest::new("bake bread 面包").with_strategy(strategy).with_filter(Some(filter));
    let found: Vec<String> =
        engine.search(&req).unwrap().results.into_iter().map(|r| r.doc_id).collect();
    assert_eq!(found, ["面包", "河流"]);
}

#[test]
fn quantising_what_is_not_there_is_a_clear_error() {
    let mut engine = engine();
    let err =
        engine.writer().set_quantization(Some("contextual:title"), Quantization::Int8).unwrap_err();
    assert!(err.to_string().contains("no stored representation `contextual:title`"), "{err}");
    let mut bare = Engine::new(SqliteStore::in_memory().unwrap());
    let err = bare.writer().set_quantization(None, Quantization::Binary).unwrap_err();
    assert!(err.to_string().contains("no vectors to quantize"), "{err}");
    assert!("mode=dense,oversample=0".parse::<Strategy>().is_err());
    assert!("mode=dense,rescore=maybe".parse::<Strategy>().is_err());
    assert!("mode=dense,quantize=int4".parse::<Strategy>().is_err());
    let s: Strategy = "mode=dense,quantize=binary,oversample=4,rescore=false".parse().unwrap();
    assert_eq!(s.to_string().parse::<Strategy>().unwrap(), s, "round trip through text");
}

#[test]
fn loaded_codes_follow_writes_by_the_change_log_as_a_full_read_would() {
    let dir = tempfile::tempdir().unwrap();
    let model = Arc::new(ckeep_embed::HashingEmbedder::new(256));
    let open = || {
        Engine::new(SqliteStore::open_or_create(dir.path()).unwrap()).with_embedder(model.clone())
    };
    let mut writer = open();
    let mut ingest = writer.writer().ingest(&"paragraphs".parse().unwrap()).unwrap();
    for (id, text) in DOCS {
        ingest.add(Document::new(id, "", text)).unwrap();
    }
    ingest.finish().unwrap();
    writer.writer().set_quantization(None, Quantization::Int8).unwrap();
    let reader = open();
    let queries =
        ["the knight jumps", "bake the bread", "山上的河流", "星星和太阳", "ships at sea"];
    let codes_only = |engine: &Engine<SqliteStore>| -> Vec<Vec<(String, f32)>> {
        queries.iter().map(|q| search(engine, q, "k=8,rescore=false")).collect()
    };
    let before = codes_only(&reader);
    // Replaced, added (English and Chinese) and removed documents.
    let mut ingest = writer.writer().ingest(&"paragraphs".parse().unwrap()).unwrap();
    ingest.add(Document::new("chess", "", "A bishop moves diagonally across the board.")).unwrap();
    ingest.add(Document::new("ships", "", "Ships sail across the sea to distant ports.")).unwrap();
    ingest.add(Document::new("星星", "", "星星在夜空中闪烁，太阳也是一颗恒星。")).unwrap();
    ingest.remove(["bread".to_string()]);
    ingest.finish().unwrap();
    let after = codes_only(&reader);
    assert_ne!(after, before, "the reader saw the writes");
    let fresh = open();
    assert_eq!(after, codes_only(&fresh), "the same codes, in the same order, as a full read");
    // The reader still holds the codes of the replaced and removed rows, as tombstones.
    let (held, read) = (reader.vectors().memory(), fresh.vectors().memory());
    assert_eq!(held.iter().map(|m| &m.0).collect::<Vec<_>>(), ["plain@int8"]);
    assert!(held[0].0 == read[0].0 && held[0].1 > read[0].1, "{held:?} {read:?}");
    assert_eq!(top(&reader, "星星和太阳", "k=1"), "星星");
    assert!(search(&reader, "bake the bread", "k=8").iter().all(|h| h.0 != "bread"));
}
