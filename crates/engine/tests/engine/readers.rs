//! Readers beside a writer on one store (real `SQLite` file, real potion-base-8M): shared
//! vectors follow the store's writes, stale vectors never surface removed documents, and a
//! metadata filter selects before ranking.

use std::sync::Arc;
use std::time::Duration;

use ckeep_core::Document;
use ckeep_embed::Embedder;
use ckeep_engine::{Engine, MetadataFilter, Mode, SearchRequest, Strategy};
use ckeep_store::{SqliteStore, StoreWrite};

fn model() -> Arc<dyn Embedder> {
    ckeep_testkit::model("potion-base-8M")
}

fn dense(query: &str) -> SearchRequest {
    let strategy = Strategy { mode: Mode::Dense, k: 10, ..Strategy::default() };
    SearchRequest::new(query).with_strategy(strategy)
}

fn ids(engine: &Engine<SqliteStore>, req: &SearchRequest) -> Vec<String> {
    engine.search(req).unwrap().results.into_iter().map(|r| r.doc_id).collect()
}

fn add(engine: &mut Engine<SqliteStore>, docs: &[(&str, &str, serde_json::Value)]) {
    let mut ingest = engine.writer().ingest(&"paragraphs".parse().unwrap()).unwrap();
    for (id, text, meta) in docs {
        let mut d = Document::new(*id, "", *text);
        d.metadata = meta.clone();
        ingest.add(d).unwrap();
    }
    ingest.finish().unwrap();
}

#[test]
#[ignore = "real tier (scripts/test.sh): installed models"]
fn readers_follow_writes_strictly_or_within_the_refresh_interval() {
    let dir = tempfile::tempdir().unwrap();
    let mut writer =
        Engine::new(SqliteStore::open_or_create(dir.path()).unwrap()).with_embedder(model());
    add(
        &mut writer,
        &[
            ("cats", "Cats purr and chase mice.", serde_json::json!({"kind": "pet"})),
            (
                "volcano",
                "Lava flows from the erupting volcano.",
                serde_json::json!({"kind": "geo"}),
            ),
        ],
    );
    let strict = writer.reader(SqliteStore::open(dir.path()).unwrap());
    let lagging = writer
        .reader(SqliteStore::open(dir.path()).unwrap())
        .with_refresh_interval(Duration::from_hours(1));
    assert_eq!(ids(&strict, &dense("kittens purring"))[0], "cats");
    assert_eq!(ids(&lagging, &dense("kittens purring"))[0], "cats");

    // The writer replaces `cats` (new chunk ids) and adds `dogs`.
    add(
        &mut writer,
        &[
            ("cats", "Cats sleep most of the day.", serde_json::json!({"kind": "pet"})),
            ("dogs", "Dogs bark and fetch sticks.", serde_json::json!({"kind": "pet"})),
        ],
    );
    // The strict reader reloads: `dogs` is found at once.
    assert_eq!(ids(&strict, &dense("a barking dog fetching"))[0], "dogs");
    // The lagging reader shares the strict reader's loaded vectors, so it sees that reload.
    assert_eq!(ids(&lagging, &dense("a barking dog fetching"))[0], "dogs");

    // A lagging reader on its own caches, after removals and additions it has not reloaded.
    let own = Engine::new(SqliteStore::open(dir.path()).unwrap())
        .with_embedder(model())
        .with_refresh_interval(Duration::from_hours(1));
    assert_eq!(ids(&own, &dense("lava")).len(), 3);
    writer.store_mut().remove(&["volcano".to_string()]).unwrap();
    add(&mut writer, &[("fish", "Fish swim in the river.", serde_json::json!({"kind": "pet"}))]);
    let got = ids(&own, &dense("lava"));
    assert!(!got.contains(&"volcano".to_string()), "a removed document never surfaces: {got:?}");
    assert!(!got.contains(&"fish".to_string()), "not reloaded yet: {got:?}");
    assert!(got.iter().all(|id| !id.is_empty()));
    // BM25 reads the store itself, so it sees the new document at once.
    let bm25 = SearchRequest {
        strategy: Some(Strategy { mode: Mode::Bm25, ..Strategy::default() }),
        ..dense("fish river")
    };
    assert_eq!(ids(&own, &bm25), ["fish"]);
    // A strict engine of its own sees everything.
    let fresh = Engine::new(SqliteStore::open(dir.path()).unwrap()).with_embedder(model());
    assert_eq!(ids(&fresh, &dense("fish swimming"))[0], "fish");

    // Filters select before ranking.
    let filter: MetadataFilter =
        serde_json::from_value(serde_json::json!({"kind": "pet"})).unwrap();
    let req = SearchRequest { filter: Some(filter), ..dense("lava erupting") };
    let got = ids(&fresh, &req);
    assert_eq!(got.len(), 3, "{got:?}");
}

#[test]
#[ignore = "real tier (scripts/test.sh): installed models"]
fn a_reader_that_read_the_store_empty_follows_it_by_the_change_log() {
    let dir = tempfile::tempdir().unwrap();
    let mut writer = Engine::new(SqliteStore::open_or_create(dir.path()).unwrap())
        .with_embedder(model())
        .with_background_index();
    add(&mut writer, &[("cats", "Cats purr and chase mice.", serde_json::json!({}))]);
    let mut ingest = writer.writer().ingest(&"paragraphs".parse().unwrap()).unwrap();
    ingest.remove(["cats".to_string()]);
    ingest.finish().unwrap();
    // Its first read: a store with a model and no vectors left.
    let reader = writer.reader(SqliteStore::open(dir.path()).unwrap());
    assert!(ids(&reader, &dense("kittens purring")).is_empty());
    // Vectors written after that are applied from the log, each change exactly once.
    add(
        &mut writer,
        &[("volcano", "Lava flows from the erupting volcano.", serde_json::json!({}))],
    );
    add(&mut writer, &[("dogs", "Dogs bark at the mail carrier.", serde_json::json!({}))]);
    assert_eq!(ids(&reader, &dense("molten rock eruption"))[0], "volcano");
    assert_eq!(ids(&reader, &dense("barking puppy")).len(), 2);
    assert!(reader.vectors().build().unwrap().is_empty(), "too few vectors for a graph");
}

#[test]
#[ignore = "real tier (scripts/test.sh): installed models"]
fn a_reader_follows_chinese_writes_by_the_change_log() {
    let e5 = || {
        ckeep_embed::load("multilingual-e5-small").expect("ckeep model pull multilingual-e5-small")
    };
    let dir = tempfile::tempdir().unwrap();
    let mut writer = Engine::new(SqliteStore::open_or_create(dir.path()).unwrap())
        .with_embedder(e5())
        .with_background_index();
    add(
        &mut writer,
        &[
            ("猫", "猫喜欢晒太阳，也会抓老鼠。", serde_json::json!({})),
            ("火山", "火山喷发时，熔岩从山顶流下。", serde_json::json!({})),
        ],
    );
    let reader = writer.reader(SqliteStore::open(dir.path()).unwrap());
    assert_eq!(ids(&reader, &dense("小猫在阳光下睡觉"))[0], "猫");
    // A replaced document (new chunk ids), a new one and a removed one: the reader applies
    // the vectors that changed, read from the log, to the ones it loaded.
    add(
        &mut writer,
        &[
            ("猫", "猫一天中大部分时间都在睡觉。", serde_json::json!({})),
            ("河流", "长江是中国最长的河流，流入东海。", serde_json::json!({})),
        ],
    );
    writer.store_mut().remove(&["火山".to_string()]).unwrap();
    let got = ids(&reader, &dense("中国最长的河"));
    assert_eq!(got[0], "河流", "{got:?}");
    assert!(!got.contains(&"火山".to_string()), "a removed document never surfaces: {got:?}");
    assert_eq!(got.len(), 2, "{got:?}");
    // Traditional script finds the same document.
    assert_eq!(ids(&reader, &dense("中國最長的河流"))[0], "河流");
}
