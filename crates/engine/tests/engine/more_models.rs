//! A store with vectors of two models: adding the second embeds every stored chunk (plain and
//! contextual) and then records it; documents added later get its vectors; `models=A+B`
//! fuses BM25 with a dense list per model, `--explain` giving each list's part; what the
//! store does not hold is refused with the command that adds it. English and Chinese.

use std::sync::Arc;

use ckeep_core::Document;
use ckeep_embed::{Embedder, HashingEmbedder};
use ckeep_engine::{AnalyzerChoice, Engine, Fields, SearchRequest};
use ckeep_store::{SqliteStore, StoreRead};

const ENGLISH: [(&str, &str, &str); 4] = [
    ("a", "Towers", "The Eiffel Tower in Paris is 330 metres tall and was built in 1889."),
    (
        "b",
        "Bridges",
        "The Golden Gate Bridge spans the strait at the entrance to San Francisco Bay.",
    ),
    ("c", "Rivers", "The Seine flows through Paris past the tower and into the English Channel."),
    ("d", "Mountains", "Mont Blanc is the highest mountain in the Alps, at 4,806 metres."),
];

const CHINESE: [(&str, &str, &str); 4] = [
    ("a", "铁塔", "埃菲尔铁塔位于巴黎，高三百三十米，建于一八八九年。"),
    ("b", "大桥", "金门大桥横跨旧金山湾入口的海峡。"),
    ("c", "河流", "塞纳河流经巴黎，经过铁塔，流入英吉利海峡。"),
    ("d", "山峰", "勃朗峰是阿尔卑斯山的最高峰，海拔四千八百零六米。"),
];

fn own() -> Arc<dyn Embedder> {
    Arc::new(HashingEmbedder::new(256))
}

fn further() -> Arc<dyn Embedder> {
    Arc::new(HashingEmbedder::new(96))
}

/// A store of `docs` (titles indexed with the text) by the 256-dimension model.
fn store(docs: &[(&str, &str, &str)], chinese: bool) -> Engine<SqliteStore> {
    filled(SqliteStore::in_memory().unwrap(), own(), docs, chinese)
}

/// `store` with `docs` added by `model`, titles indexed with the text.
fn filled(
    store: SqliteStore,
    model: Arc<dyn Embedder>,
    docs: &[(&str, &str, &str)],
    chinese: bool,
) -> Engine<SqliteStore> {
    let mut engine = Engine::new(store).with_embedder(model);
    if chinese {
        engine = engine.with_analyzer(AnalyzerChoice::Fixed(ckeep_engine::Analyzer::Jieba));
    }
    let mut ingest = engine.writer().ingest(&"paragraphs".parse().unwrap()).unwrap();
    let contextual = Fields::TitleText.representation();
    ingest.require(&contextual.into_iter().collect::<Vec<_>>(), &[]).unwrap();
    ingest.set_default_repr(contextual).unwrap();
    for (id, title, text) in docs {
        ingest.add(Document::new(*id, *title, *text)).unwrap();
    }
    ingest.finish().unwrap();
    engine
}

fn chunks(engine: &Engine<SqliteStore>) -> usize {
    engine.store().vectors("plain").unwrap().ids.len()
}

#[test]
fn a_further_model_embeds_every_chunk_and_then_fuses() {
    for (docs, query, chinese) in
        [(&ENGLISH, "tower in Paris", false), (&CHINESE, "巴黎铁塔", true)]
    {
        let mut engine = store(docs, chinese);
        let report = engine.writer().add_model(further(), &mut |_, _, _| {}).unwrap();
        assert_eq!(report.documents as usize, 2 * docs.len(), "plain and contextual, each doc");
        let manifest = engine.store().manifest().unwrap();
        assert_eq!(manifest.extra_models.len(), 1);
        assert_eq!(manifest.extra_models[0].name, "test-hash-96");
        for name in ["plain|test-hash-96", "contextual:title|test-hash-96"] {
            assert!(manifest.representations.iter().any(|r| r == name), "{name}");
            let m = engine.store().vectors(name).unwrap();
            assert_eq!((m.ids.len(), m.dim), (chunks(&engine), 96), "{name}");
        }
        // Adding it again does nothing.
        assert_eq!(engine.writer().add_model(further(), &mut |_, _, _| {}).unwrap().documents, 0);

        let spec = "models=test-hash-256+test-hash-96,mode=hybrid:linear=0.3+0.3,level=doc,k=4";
        let req = SearchRequest::new(query).with_strategy(spec.parse().unwrap()).with_explain(true);
        let res = engine.search(&req).unwrap();
        assert_eq!(res.results[0].doc_id, "a", "{query}");
        let ex = res.results[0].explain.as_ref().unwrap();
        assert_eq!(ex.model.as_deref(), Some("test-hash-256+test-hash-96"));
        let lists = &ex.chunks[0].lists;
        let names: Vec<&str> = lists.iter().map(|l| l.list.as_str()).collect();
        assert_eq!(names, ["bm25", "test-hash-256", "test-hash-96"], "{query}");
        let sum: f32 = lists.iter().map(|l| l.contribution).sum();
        assert!((sum - ex.chunks[0].fused.unwrap()).abs() < 1e-5, "{lists:?}");
        // BM25's weight is what the models leave: 0.4 of its best normalised score.
        assert!((lists[0].contribution - 0.4).abs() < 1e-5 || lists[0].rank > 1, "{lists:?}");
        // Plain `hybrid` beside two models is that linear fusion, the models sharing 0.6.
        let plain = SearchRequest {
            strategy: Some(
                "models=test-hash-256+test-hash-96,mode=hybrid,level=doc,k=4".parse().unwrap(),
            ),
            ..req.clone()
        };
        let plain = engine.search(&plain).unwrap();
        let scores = |r: &ckeep_engine::SearchResponse| -> Vec<(String, f32)> {
            r.results.iter().map(|h| (h.doc_id.clone(), h.score)).collect()
        };
        assert_eq!(scores(&plain), scores(&res), "{query}");
        assert!(plain.strategy.contains("mode=hybrid,"), "{}", plain.strategy);
        // The further model's list alone ranks by its own vectors: weights 0 + 1.
        let alone = SearchRequest {
            strategy: Some(
                "models=test-hash-256+test-hash-96,mode=hybrid:linear=0+1,level=doc,k=4"
                    .parse()
                    .unwrap(),
            ),
            ..req.clone()
        };
        let dense96 = engine.search(&alone).unwrap();
        let direct = filled(SqliteStore::in_memory().unwrap(), further(), docs, chinese);
        let dense = SearchRequest {
            strategy: Some("mode=dense,level=doc,k=4".parse().unwrap()),
            explain: false,
            ..req.clone()
        };
        let expected: Vec<String> =
            direct.search(&dense).unwrap().results.into_iter().map(|r| r.doc_id).collect();
        let got: Vec<String> = dense96.results.into_iter().map(|r| r.doc_id).collect();
        assert_eq!(got, expected, "the further model's vectors are its own ({query})");
        // Named alone, the further model is searched by its own vectors too.
        let named = SearchRequest {
            strategy: Some("model=test-hash-96,mode=dense,level=doc,k=4".parse().unwrap()),
            explain: false,
            ..req.clone()
        };
        let alone: Vec<String> =
            engine.search(&named).unwrap().results.into_iter().map(|r| r.doc_id).collect();
        assert_eq!(alone, expected, "model=test-hash-96 alone ({query})");
    }
}

#[test]
fn documents_added_later_get_the_further_model_too() {
    let dir = tempfile::tempdir().unwrap();
    let mut engine =
        filled(SqliteStore::open_or_create(dir.path()).unwrap(), own(), &ENGLISH[..2], false);
    engine.writer().add_model(further(), &mut |_, _, _| {}).unwrap();
    drop(engine);
    // Another engine over the store loads the further model from where the manifest says.
    let mut engine = Engine::new(SqliteStore::open(dir.path()).unwrap()).with_embedder(own());
    let mut ingest = engine.writer().ingest(&"paragraphs".parse().unwrap()).unwrap();
    for (id, title, text) in &ENGLISH[2..] {
        ingest.add(Document::new(*id, *title, *text)).unwrap();
    }
    let report = ingest.finish().unwrap();
    assert!(report.derived.iter().any(|s| s.stage == "representation plain|test-hash-96"));
    for name in ["plain|test-hash-96", "contextual:title|test-hash-96"] {
        assert_eq!(engine.store().vectors(name).unwrap().ids.len(), chunks(&engine), "{name}");
    }
    let req = SearchRequest::new("Seine river")
        .with_strategy("models=test-hash-256+test-hash-96,mode=hybrid,level=doc".parse().unwrap());
    assert_eq!(engine.search(&req).unwrap().results[0].doc_id, "c");
}

#[test]
fn what_the_store_does_not_hold_is_refused() {
    let mut engine = store(&ENGLISH, false);
    let req = |spec: &str| SearchRequest::new("tower").with_strategy(spec.parse().unwrap());
    let e =
        engine.search(&req("models=test-hash-256+test-hash-96,mode=hybrid,level=doc")).unwrap_err();
    assert!(e.to_string().contains("ckeep add --model test-hash-96"), "{e}");
    assert!(e.is_user_error());
    engine.writer().add_model(further(), &mut |_, _, _| {}).unwrap();
    // Derived representations come from the store's own model's vectors only.
    let e = engine
        .search(&req("models=test-hash-256+test-hash-96,mode=hybrid,level=doc,repr=window-avg:1"))
        .unwrap_err();
    assert!(e.to_string().contains("plain and contextual vectors only"), "{e}");
    // A store without a model of its own takes none further.
    let mut bare = Engine::new(SqliteStore::in_memory().unwrap());
    let mut ingest = bare.writer().ingest(&"paragraphs".parse().unwrap()).unwrap();
    ingest.add(Document::new("a", "", "text")).unwrap();
    ingest.finish().unwrap();
    let e = bare.writer().add_model(further(), &mut |_, _, _| {}).unwrap_err();
    assert!(e.to_string().contains("no model of its own"), "{e}");
}
