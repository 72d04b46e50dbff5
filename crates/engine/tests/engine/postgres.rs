//! The engine on PostgreSQL + pgvector, against real servers from `scripts/pg.sh` and the real
//! all-MiniLM-L6-v2: the same answers as the embedded store (quantised searches included), on
//! one server and sharded across two behind a coordinator; a streaming replica serving reads; and a server crash during ingest
//! that loses nothing acknowledged, shows nothing half-written, and that the writer survives.

use std::process::Command;
use std::sync::{Arc, OnceLock};

use ckeep_core::Document;
use ckeep_embed::{CachedEmbedder, Embedder, EmbeddingCache};
use ckeep_engine::{Engine, SearchRequest, Strategy};
use ckeep_store::test_postgres::{Server, fresh_database, script};
use ckeep_store::{DynStore, PgStore, SqliteStore, StoreRead, StoreWrite};

/// The real MiniLM behind the product's own embedding cache, in memory and shared by this file's
/// tests: they index the same SciFact abstracts into two or three stores each, and what they
/// check is the stores' answers. The cache hands back the vectors the model made, to the bit, so
/// each text is embedded once (the three stores of the sharding test took 115 s on 2 cores).
fn model() -> Arc<dyn Embedder> {
    static CACHED: OnceLock<Arc<dyn Embedder>> = OnceLock::new();
    let cached = CACHED.get_or_init(|| {
        let cache = EmbeddingCache::in_memory().unwrap();
        Arc::new(CachedEmbedder::new(ckeep_testkit::model("all-MiniLM-L6-v2"), Some(cache.into())))
    });
    Arc::clone(cached)
}

/// The first `n` SciFact abstracts.
fn scifact(n: usize) -> Vec<Document> {
    ckeep_testkit::scifact_values(n)
        .into_iter()
        .map(|v| {
            let mut d = Document::new(
                v["_id"].as_str().unwrap(),
                v["title"].as_str().unwrap(),
                v["text"].as_str().unwrap(),
            );
            d.metadata = serde_json::json!({"year": v["_id"].as_str().unwrap().len() % 3});
            d
        })
        .collect()
}

/// The first `n` SciFact queries.
fn queries(n: usize) -> Vec<String> {
    let text =
        std::fs::read_to_string(ckeep_testkit::data_dir().join("beir_scifact/queries.jsonl"))
            .unwrap();
    text.lines()
        .take(n)
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["text"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect()
}

fn index(store: DynStore, model: &Arc<dyn Embedder>, docs: &[Document]) -> Engine<DynStore> {
    let mut engine = Engine::new(store).with_embedder(Arc::clone(model));
    let mut ingest = engine.writer().ingest(&"sentences:3".parse().unwrap()).unwrap();
    for d in docs {
        ingest.add(d.clone()).unwrap();
    }
    ingest.finish().unwrap();
    engine
}

const STRATEGIES: &[&str] = &[
    "level=doc",
    "level=chunk,expand=window:1",
    "mode=dense,level=chunk,exact=true",
    "mode=dense,level=doc,agg=mean:3,exact=true",
    "mode=hybrid,level=doc,exact=true",
    "mode=hybrid:linear=0.5,level=chunk,exact=true",
    // Quantised: the engine scans codes and reads the candidates' vectors back from the store.
    "mode=dense,level=chunk,quantize=int8",
    "mode=hybrid,level=doc,quantize=binary",
];

/// Every query under every strategy (and one metadata filter): ids, ranks, spans, texts and
/// scores, to the bit.
fn answers(engine: &Engine<DynStore>, queries: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for spec in STRATEGIES {
        let strategy: Strategy = spec.parse().unwrap();
        for (i, q) in queries.iter().enumerate() {
            let filter = (i % 4 == 0)
                .then(|| serde_json::from_value(serde_json::json!({"year": 1})).unwrap());
            let req =
                SearchRequest::new(q.clone()).with_strategy(strategy.clone()).with_filter(filter);
            for r in engine.search(&req).unwrap().results {
                out.push(format!(
                    "{spec} q{i} #{} {} {:?} {:08x} {}",
                    r.rank,
                    r.doc_id,
                    r.spans,
                    r.score.to_bits(),
                    r.text
                ));
            }
        }
    }
    out
}

#[test]
#[ignore = "real tier (scripts/test.sh): PostgreSQL"]
fn one_server_and_two_shards_answer_exactly_as_sqlite() {
    let model = model();
    let docs = scifact(300);
    let queries = queries(24);
    let dir = tempfile::tempdir().unwrap();
    let sqlite =
        index(DynStore::from(SqliteStore::open_or_create(dir.path()).unwrap()), &model, &docs);
    let expected = answers(&sqlite, &queries);
    assert!(expected.len() > 500, "{} results", expected.len());

    let single = PgStore::open_or_create(&fresh_database("parity")).unwrap();
    let single = index(DynStore::from(single), &model, &docs);
    assert_eq!(answers(&single, &queries), expected, "one PostgreSQL server");

    let coordinator = Server::start("coordinator");
    let shards = [Server::start("shard0"), Server::start("shard1")];
    let out = Command::new("bash")
        .arg(script().with_file_name("pg_shard.sh"))
        .arg(&coordinator.url)
        .args(shards.iter().map(|s| &s.url))
        .args(["--hnsw", "plain:384"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let sharded =
        index(DynStore::from(PgStore::open_or_create(&coordinator.url).unwrap()), &model, &docs);
    assert_eq!(answers(&sharded, &queries), expected, "sharded across two servers");
    // Both shards hold documents, and together all of them.
    let counts: Vec<i64> = shards
        .iter()
        .map(|s| {
            let mut c = postgres::Client::connect(&s.url, postgres::NoTls).unwrap();
            c.query_one("SELECT count(*) FROM ckeep.documents", &[]).unwrap().get(0)
        })
        .collect();
    assert!(counts.iter().all(|&n| n > 50), "{counts:?}");
    assert_eq!(counts.iter().sum::<i64>(), docs.len() as i64);
    assert!(sharded.store().check().unwrap().is_ok());

    // Approximate search by the HNSW index inside PostgreSQL finds what the exact scan finds.
    let approximate: Strategy = "mode=dense,level=chunk,k=10".parse().unwrap();
    let exact: Strategy = "mode=dense,level=chunk,k=10,exact=true".parse().unwrap();
    let (mut found, mut total) = (0, 0);
    for q in &queries {
        let ids = |s: &Strategy| -> Vec<i64> {
            let req = SearchRequest::new(q.clone()).with_strategy(s.clone());
            single.search(&req).unwrap().results.iter().map(|r| r.chunks[0].chunk_id.0).collect()
        };
        let truth = ids(&exact);
        found += ids(&approximate).iter().filter(|id| truth.contains(id)).count();
        total += truth.len();
    }
    assert!(found as f64 >= 0.95 * total as f64, "recall@10 {found}/{total}");
}

#[test]
#[ignore = "real tier (scripts/test.sh): PostgreSQL"]
fn a_streaming_replica_serves_the_same_reads_and_refuses_writes() {
    let model = model();
    let primary = Server::start("primary");
    let mut engine =
        index(DynStore::from(PgStore::open_or_create(&primary.url).unwrap()), &model, &scifact(60));
    let replica_dir = primary
        .dir
        .with_file_name(format!("{}-replica", primary.dir.file_name().unwrap().to_string_lossy()));
    let out = Command::new("bash")
        .arg(script())
        .arg("replica")
        .arg(&primary.dir)
        .arg(&replica_dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let replica =
        Server { dir: replica_dir, url: String::from_utf8(out.stdout).unwrap().trim().to_string() };
    replica.watch(std::process::id());
    // A write after the base backup reaches the replica by streaming.
    let mut ingest = engine.writer().ingest(&"sentences:3".parse().unwrap()).unwrap();
    ingest
        .add(Document::new(
            "late",
            "",
            "Streaming replication carries this sentence about telomeres.",
        ))
        .unwrap();
    ingest.finish().unwrap();
    let generation = engine.store().generation().unwrap();
    let mut reader =
        Engine::new(DynStore::from(PgStore::open(&replica.url).unwrap())).with_embedder(model);
    for _ in 0..100 {
        if reader.store().generation().unwrap() >= generation {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let queries = queries(8);
    assert_eq!(answers(&reader, &queries), answers(&engine, &queries));
    assert!(reader.store().document("late").unwrap().is_some());
    let err = reader.store_mut().remove(&["late".to_string()]).unwrap_err().to_string();
    assert!(err.contains("read-only"), "{err}");
}

/// Batches acknowledged before the crash is set off.
const ACKNOWLEDGED_BEFORE_CRASH: usize = 3;

#[test]
#[ignore = "real tier (scripts/test.sh): PostgreSQL"]
fn a_crash_during_ingest_loses_nothing_acknowledged_and_shows_nothing_half_written() {
    let model = model();
    let server = Server::start("crash");
    let docs = scifact(400);
    let mut engine = Engine::new(DynStore::from(PgStore::open_or_create(&server.url).unwrap()))
        .with_embedder(model);
    let chunker: ckeep_text::ChunkerSpec = "sentences:3".parse().unwrap();
    // Batches of 10 documents, each acknowledged when `finish` returns. The server is killed from
    // another thread once three batches are acknowledged, while later ones go in: a condition,
    // not a clock, so a busy machine cannot make the crash come before the first batch.
    let (acknowledged_tx, acknowledged_rx) = std::sync::mpsc::channel::<()>();
    let crash = {
        let dir = server.dir.clone();
        std::thread::spawn(move || {
            for _ in 0..ACKNOWLEDGED_BEFORE_CRASH {
                if acknowledged_rx.recv().is_err() {
                    break;
                }
            }
            Server { dir, url: String::new() }.crash();
        })
    };
    let ingest_batch = |engine: &mut Engine<DynStore>, batch: &[Document]| {
        let mut ingest = engine.writer().ingest(&chunker)?;
        for d in batch {
            ingest.add(d.clone())?;
        }
        ingest.finish()
    };
    // The last eleven documents are kept back: ten for a batch after the crash (should every
    // batch before it have finished first), one for the writer after the restart.
    let (before, after) = docs.split_at(docs.len() - 11);
    let mut acknowledged = Vec::new();
    let mut error = None;
    for batch in before.chunks(10) {
        match ingest_batch(&mut engine, batch) {
            Ok(_) => {
                acknowledged.extend(batch.iter().map(|d| d.id.clone()));
                let _ = acknowledged_tx.send(());
            }
            Err(e) => {
                error = Some(e.to_string());
                break;
            }
        }
    }
    drop(acknowledged_tx);
    crash.join().unwrap();
    let met_in_flight = error.is_some();
    let error = error.unwrap_or_else(|| {
        // Every batch finished before the crash landed: the next write meets the stopped server.
        ingest_batch(&mut engine, &after[..10]).expect_err("the server is down").to_string()
    });
    assert!(error.contains("PostgreSQL"), "a clear error: {error}");
    assert!(
        error.contains("lost the connection")
            || error.contains("terminating connection")
            || (!met_in_flight && error.contains("error connecting to server")),
        "{error}"
    );
    assert!(
        acknowledged.len() >= ACKNOWLEDGED_BEFORE_CRASH * 10,
        "{} acknowledged",
        acknowledged.len()
    );

    eprintln!(
        "{} documents acknowledged before the crash; the writer saw: {error}",
        acknowledged.len()
    );
    let restarted = Server::start_in(server.dir.clone());
    assert_eq!(restarted.url, server.url, "same port after a restart");
    // The writer that met the crash connects again by itself and goes on.
    ingest_batch(&mut engine, &after[10..]).unwrap();
    acknowledged.push(after[10].id.clone());
    let store = PgStore::open(&server.url).unwrap();
    let stored = store.document_ids().unwrap();
    for id in &acknowledged {
        assert!(stored.contains(id), "acknowledged document {id} was lost");
    }
    // Whatever is stored is whole: chunk tree, statistics and one vector per leaf chunk.
    assert!(store.check().unwrap().is_ok(), "{:?}", store.check().unwrap().problems);
    let stats = store.stats().unwrap();
    assert_eq!(stats.representations[0].vectors, stats.leaf_chunks);
    assert_eq!(stats.lexical[0].chunks, stats.leaf_chunks);
    assert!(
        stored.len() <= acknowledged.len() + 10,
        "at most the batch in flight was committed unacknowledged"
    );
}
