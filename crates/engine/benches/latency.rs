//! End-to-end query latency on a collection of 100k+ chunks, per retrieval mode, and the exact
//! scan's throughput against the machine's memory bandwidth measured in the same run.
//!
//! Collection (from `CKEEP_DATA`, default `../shared/data`), cut into sentences and embedded
//! with all-MiniLM-L6-v2 (vectors come from the embedding cache after the first run): `SciFact`'s
//! 5,183 abstracts, 10,033 Wikipedia vital-article summaries, the 48 `SQuAD` long documents and
//! the `WikiText-2` test articles. Queries: `SciFact`'s 1,109 claims and the first 1,000 `SQuAD`
//! questions, each searched once per mode, top 10 chunks with their text.
//!
//! Every latency includes embedding the query (the query embedder is uncached), scoring,
//! ranking and reading the results' text from the store; the graph and vectors are loaded by a
//! warm-up query first, as a long-running process would have them.
//!
//! Quantised rows scan int8 or binary codes and rescore the candidates with float32 vectors read
//! from the store (`quantize=` in the strategy).
//!
//! Run: `cargo bench -p ckeep-engine --bench latency` (needs `ckeep model pull all-MiniLM-L6-v2`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use ckeep_embed::{CachedEmbedder, Embedder, EmbeddingCache, InputKind};
use ckeep_engine::{Engine, SearchRequest, Strategy};
use ckeep_index::{dot_all, simd};
use ckeep_store::{SqliteStore, StoreRead};
use rayon::prelude::*;

mod common;

use common::{MODEL, corpus, data_dir, measure, queries};

/// The fastest of `runs` timed calls of `f`.
fn best_of(runs: usize, mut f: impl FnMut()) -> Duration {
    (0..runs)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .min()
        .unwrap_or_default()
}

/// Read bandwidth in GB/s: a lane-wise sum over a 1 GiB buffer, all cores, best of 5.
fn memory_bandwidth() -> f64 {
    let buffer: Vec<f32> = (0..(1usize << 28)).map(|i| (i % 7) as f32).collect();
    let best = best_of(5, || {
        let total: f32 = buffer
            .par_chunks(1 << 16)
            .map(|block| {
                simd(
                    #[inline(always)]
                    || {
                        let mut lanes = [0f32; 32];
                        for c in block.chunks_exact(32) {
                            for i in 0..32 {
                                lanes[i] += c[i];
                            }
                        }
                        lanes.iter().sum::<f32>()
                    },
                )
            })
            .sum();
        std::hint::black_box(total);
    });
    (buffer.len() * 4) as f64 / best.as_secs_f64() / 1e9
}

/// The exact scan's kernel over the store's vectors in GB/s (all cores, best of 20).
fn scan_bandwidth(data: &[f32], dim: usize, q: &[f32]) -> f64 {
    let best = best_of(20, || {
        std::hint::black_box(dot_all(data, dim, q));
    });
    (data.len() * 4) as f64 / best.as_secs_f64() / 1e9
}

fn main() {
    let data = data_dir();
    let model = ckeep_embed::load(MODEL).expect("ckeep model pull all-MiniLM-L6-v2");
    let cache = Arc::new(EmbeddingCache::open(&EmbeddingCache::default_path()).unwrap());
    let cached: Arc<dyn Embedder> = Arc::new(CachedEmbedder::new(Arc::clone(&model), Some(cache)));
    let dir = tempfile::tempdir().unwrap();
    let docs = corpus(&data);
    let started = Instant::now();
    let mut engine =
        Engine::new(SqliteStore::open_or_create(dir.path()).unwrap()).with_embedder(cached);
    let mut ingest = engine.writer().ingest(&"sentences".parse().unwrap()).unwrap();
    for d in &docs {
        ingest.add(d.clone()).unwrap();
    }
    let report = ingest.finish().unwrap();
    println!(
        "{} documents, {} chunks, {} vectors ({} from the cache); ingest {:.0} s, HNSW built: {}",
        docs.len(),
        report.chunks,
        report.vectors,
        report.cached_vectors,
        started.elapsed().as_secs_f64(),
        report.vector_index_built
    );
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    let engine =
        Engine::new(SqliteStore::open(dir.path()).unwrap()).with_embedder(Arc::clone(&model));
    let queries = queries(&data);
    println!("{} queries, {cores} cores, top 10 chunks with text", queries.len());
    println!();
    println!("| mode | p50 ms | p99 ms | queries/s |");
    println!("|---|---|---|---|");
    let row = |name: &str, (p50, p99, qps): (f64, f64, f64)| {
        println!("| {name} | {p50:.2} | {p99:.2} | {qps:.0} |");
    };
    row(
        "query embedding alone",
        measure(&queries, |q| {
            std::hint::black_box(model.embed(&[q], InputKind::Query).unwrap());
        }),
    );
    let modes = [
        ("bm25", "mode=bm25"),
        ("dense (HNSW)", "mode=dense"),
        ("dense (exact scan)", "mode=dense,exact=true"),
        ("dense (int8 codes, rescored)", "mode=dense,quantize=int8"),
        ("dense (binary codes, rescored)", "mode=dense,quantize=binary"),
        ("hybrid rrf (HNSW)", "mode=hybrid"),
        ("hybrid rrf (exact scan)", "mode=hybrid,exact=true"),
        ("hybrid rrf (int8 codes, rescored)", "mode=hybrid,quantize=int8"),
    ];
    for (name, spec) in modes {
        let strategy: Strategy = spec.parse().unwrap();
        let search = |q: &str| {
            let req = SearchRequest::new(q.to_string()).with_strategy(strategy.clone());
            std::hint::black_box(engine.search(&req).unwrap());
        };
        search("warm up");
        row(name, measure(&queries, search));
    }
    let mut m = engine.store().vectors("plain").unwrap();
    m.data.par_chunks_mut(m.dim).for_each(ckeep_embed::normalize);
    let q = m.data[..m.dim].to_vec();
    let scan = scan_bandwidth(&m.data, m.dim, &q);
    let memory = memory_bandwidth();
    println!();
    println!(
        "exact scan: {:.0} MB of vectors at {scan:.1} GB/s; memory read bandwidth {memory:.1} GB/s; ratio {:.2}",
        (m.data.len() * 4) as f64 / 1e6,
        scan / memory
    );
}
