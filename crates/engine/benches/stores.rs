//! The PostgreSQL + pgvector store beside the embedded SQLite store on the same 100k+ chunks:
//! ingest time, and per-query latency and throughput of each retrieval mode, side by side.
//!
//! Collection and queries as in the `latency` benchmark (`SciFact`, Wikipedia summaries, `SQuAD`,
//! `WikiText-2`, cut into sentences; all-MiniLM-L6-v2 vectors from the embedding cache after the
//! first run). Query vectors come from the cache too, embedded once before timing, so the
//! figures are the stores' and the engine's, not the model's. Vector search on `SQLite` is the
//! engine's in memory (its HNSW graph, or an exact scan); on PostgreSQL it runs in the database
//! (pgvector's HNSW index, or an exact scan there), and nothing is loaded into the engine.
//!
//! Run: `bench/pg_store.sh` (starts PostgreSQL 18 from `scripts/pg.sh`), or
//! `CKEEP_BENCH_POSTGRES=postgres://… cargo bench -p ckeep-engine --bench stores`.

use std::sync::Arc;
use std::time::Instant;

use ckeep_embed::{CachedEmbedder, Embedder, EmbeddingCache, InputKind};
use ckeep_engine::{Engine, Mode, SearchRequest, Strategy};
use ckeep_index::Fusion;
use ckeep_store::{DynStore, PgStore, SqliteStore, StoreRead};

mod common;

use common::{MODEL, corpus, data_dir, measure, queries};

/// Ingests the collection; returns the engine and the seconds it took.
fn ingest(
    store: DynStore,
    model: &Arc<dyn Embedder>,
    docs: &[ckeep_core::Document],
) -> (Engine<DynStore>, f64, u64) {
    let started = Instant::now();
    let mut engine = Engine::new(store).with_embedder(Arc::clone(model));
    let mut ingest = engine.writer().ingest(&"sentences".parse().unwrap()).unwrap();
    for d in docs {
        ingest.add(d.clone()).unwrap();
    }
    let report = ingest.finish().unwrap();
    (engine, started.elapsed().as_secs_f64(), report.chunks)
}

fn main() {
    let data = data_dir();
    let model = ckeep_embed::load(MODEL).expect("ckeep model pull all-MiniLM-L6-v2");
    let cache = Arc::new(EmbeddingCache::open(&EmbeddingCache::default_path()).unwrap());
    let cached: Arc<dyn Embedder> = Arc::new(CachedEmbedder::new(Arc::clone(&model), Some(cache)));
    let docs = corpus(&data);
    let queries = queries(&data);
    // Every vector into the cache first, so neither store's ingest pays for the model.
    let (warm, _, chunks) =
        ingest(DynStore::from(SqliteStore::in_memory().unwrap()), &cached, &docs);
    drop(warm);
    let refs: Vec<&str> = queries.iter().map(String::as_str).collect();
    cached.embed(&refs, InputKind::Query).unwrap();

    let url = std::env::var("CKEEP_BENCH_POSTGRES")
        .expect("CKEEP_BENCH_POSTGRES (bench/pg_store.sh sets it)");
    let dir = tempfile::tempdir().unwrap();
    let (sqlite, sqlite_s, _) =
        ingest(DynStore::from(SqliteStore::open_or_create(dir.path()).unwrap()), &cached, &docs);
    let (postgres, postgres_s, _) =
        ingest(DynStore::from(PgStore::open_or_create(&url).unwrap()), &cached, &docs);
    let size = |e: &Engine<DynStore>| e.store().stats().unwrap().disk_bytes as f64 / 1e6;
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    println!(
        "{} documents, {chunks} chunks (sentences), all-MiniLM-L6-v2 vectors from the cache, {cores} cores",
        docs.len()
    );
    println!();
    println!("| ingest | SQLite | PostgreSQL | PostgreSQL / SQLite |");
    println!("|---|---|---|---|");
    println!("| seconds | {sqlite_s:.1} | {postgres_s:.1} | {:.2}× |", postgres_s / sqlite_s);
    println!(
        "| chunks/s | {:.0} | {:.0} | |",
        chunks as f64 / sqlite_s,
        chunks as f64 / postgres_s
    );
    println!("| size on disk, MB | {:.0} | {:.0} | |", size(&sqlite), size(&postgres));
    println!();
    println!(
        "{} queries, each once per mode, top 10 chunks with their text; one thread",
        queries.len()
    );
    println!();
    println!(
        "| mode | SQLite p50 / p99 ms | PostgreSQL p50 / p99 ms | SQLite q/s | PostgreSQL q/s | PostgreSQL / SQLite time |"
    );
    println!("|---|---|---|---|---|---|");
    let modes = [
        ("bm25", Mode::Bm25, false),
        ("dense (HNSW)", Mode::Dense, false),
        ("dense (exact scan)", Mode::Dense, true),
        ("hybrid rrf (HNSW)", Mode::Hybrid(Fusion::default()), false),
        ("dense (HNSW), doc level", Mode::Dense, false),
    ];
    let sqlite = sqlite.with_embedder(Arc::clone(&cached));
    let postgres = postgres.with_embedder(Arc::clone(&cached));
    for (name, mode, exact) in modes {
        let level = if name.ends_with("doc level") {
            ckeep_engine::Level::Doc
        } else {
            ckeep_engine::Level::Chunk
        };
        let strategy = Strategy { mode, exact, level, ..Strategy::default() };
        let search = |engine: &Engine<DynStore>, q: &str| {
            let req = SearchRequest::new(q.to_string()).with_strategy(strategy.clone());
            std::hint::black_box(engine.search(&req).unwrap());
        };
        search(&sqlite, "warm up");
        search(&postgres, "warm up");
        let a = measure(&queries, |q| search(&sqlite, q));
        let b = measure(&queries, |q| search(&postgres, q));
        println!(
            "| {name} | {:.2} / {:.2} | {:.2} / {:.2} | {:.0} | {:.0} | {:.2}× |",
            a.0,
            a.1,
            b.0,
            b.1,
            a.2,
            b.2,
            a.2 / b.2
        );
    }
}
