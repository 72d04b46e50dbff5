//! What an update of a live server's vector index costs at 100k and at a million vectors: 1,000
//! chunks added and 100 removed in a store whose whole graph is saved, then the server's
//! indexer pass as a stopping server makes it (the new rows frozen into a segment with a graph
//! of its own) and its save (that segment, the removed rows' vectors, the segment list). Time
//! and bytes written, median of three rounds, at each size; the last line is the million's
//! cost over the 100k's. A save that wrote the whole graph again would cost ten times as much
//! at ten times the rows.
//!
//! The vectors: the million real text vectors of `bench/million.sh` (potion-base-8M, 256
//! dimensions), served to the ingest by an embedder that looks each document's row up, so the
//! stores (kept under `BENCH_DIR/segments-N`, built once: the million's graph takes minutes)
//! hold real vectors without embedding them again.
//!
//! Run: `bench/segments.sh` (`BENCH_SIZES` to change the sizes).

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use ckeep_core::Document;
use ckeep_embed::{EmbedStats, Embedder, InputKind, ModelInfo, TokenVectors};
use ckeep_engine::Engine;
use ckeep_store::{SqliteStore, StoreRead};

const DIM: usize = 256;
const ADDED: usize = 1_000;
const REMOVED: usize = 100;
const ROUNDS: usize = 3;

/// Serves row `i` of the benchmark's vectors for the text `r{i}`.
#[derive(Debug)]
struct RowEmbedder {
    rows: Arc<Vec<f32>>,
    info: ModelInfo,
}

impl RowEmbedder {
    fn new(rows: Arc<Vec<f32>>) -> Self {
        let info = ModelInfo {
            name: "million-rows".into(),
            fingerprint: "million-rows/potion-base-8M".into(),
            architecture: "rows".into(),
            dim: DIM,
            max_tokens: None,
            normalized: true,
            query_prefix: String::new(),
            document_prefix: String::new(),
            pair_prefix: String::new(),
            source: "bench".into(),
        };
        Self { rows, info }
    }
}

impl Embedder for RowEmbedder {
    fn info(&self) -> &ModelInfo {
        &self.info
    }

    fn embed_raw(&self, texts: &[&str]) -> ckeep_embed::Result<(Vec<Vec<f32>>, EmbedStats)> {
        // Rows past the last (the rounds' additions to the million) start over.
        let row = |t: &str| {
            let i: usize = t.trim().trim_start_matches('r').parse().expect("a row text");
            let i = i % (self.rows.len() / DIM);
            self.rows[i * DIM..(i + 1) * DIM].to_vec()
        };
        Ok((texts.iter().map(|t| row(t)).collect(), EmbedStats::default()))
    }

    fn count_text_tokens(&self, _text: &str) -> Option<usize> {
        Some(1)
    }

    fn token_vectors(
        &self,
        _texts: &[&str],
        _kind: InputKind,
    ) -> ckeep_embed::Result<Vec<TokenVectors>> {
        Err(ckeep_embed::no_token_vectors(&self.info))
    }
}

/// Adds the documents of rows `added` and removes those of rows `removed`, in one ingest.
fn write(engine: &mut Engine<SqliteStore>, added: std::ops::Range<usize>, removed: &[usize]) {
    let mut ingest =
        engine.writer().ingest(&"paragraphs".parse().expect("chunker")).expect("ingest");
    ingest.remove(removed.iter().map(|i| format!("d{i}")));
    for i in added {
        ingest.add(Document::new(format!("d{i}"), "", format!("r{i}"))).expect("add");
    }
    ingest.finish().expect("finish");
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

/// The median time (s) and bytes of the update, in a store of `n` rows under `dir`.
fn update_cost(dir: &Path, n: usize, model: &Arc<dyn Embedder>) -> (f64, f64) {
    let open = || SqliteStore::open_or_create(dir).expect("store");
    if !dir.join(".built").exists() {
        let _ = std::fs::remove_dir_all(dir);
        std::fs::create_dir_all(dir).expect("store dir");
        let start = Instant::now();
        write(&mut Engine::new(open()).with_embedder(Arc::clone(model)), 0..n, &[]);
        eprintln!(
            "{n} rows: store and whole graph built in {:.0} s",
            start.elapsed().as_secs_f64()
        );
        std::fs::write(dir.join(".built"), b"").expect("mark");
    }
    let mut writer = Engine::new(open()).with_embedder(Arc::clone(model)).with_background_index();
    let reader = writer.reader(open());
    // A server's reader holds the vectors (and the stored graph is current) before it starts.
    let start = Instant::now();
    assert!(reader.vectors().build().expect("load").is_empty(), "a store left mid-way");
    eprintln!("{n} rows: read in {:.1} s", start.elapsed().as_secs_f64());
    let whole = writer.store().aux("hnsw:plain").expect("aux").map_or(0, |b| b.len());
    let (mut times, mut bytes) = (Vec::new(), Vec::new());
    // Documents past the collection, after those earlier runs added.
    let runs: usize =
        std::fs::read_to_string(dir.join(".runs")).map_or(0, |r| r.parse().unwrap_or(0));
    std::fs::write(dir.join(".runs"), (runs + 1).to_string()).expect("runs");
    let first = n + ADDED * ROUNDS * runs;
    for round in 0..ROUNDS {
        let from = first + round * ADDED;
        let removed: Vec<usize> = (0..REMOVED).map(|i| (from * 7 + i * 131) % n).collect();
        write(&mut writer, from..from + ADDED, &removed);
        let start = Instant::now();
        let builds = reader.vectors().compact().expect("pass");
        let written: usize = builds.iter().map(ckeep_engine::VectorIndexBuild::bytes).sum();
        writer.writer().save_vector_index(builds).expect("save");
        times.push(start.elapsed().as_secs_f64());
        bytes.push(written as f64);
    }
    let (time, written) = (median(times), median(bytes));
    println!(
        "{n} rows: {ADDED} added and {REMOVED} removed, pass and save {time:.3} s, \
         {:.2} MB written (the whole graph: {:.1} MB)",
        written / 1e6,
        whole as f64 / 1e6
    );
    (time, written)
}

fn main() {
    let dir = std::env::var("BENCH_DIR").unwrap_or_else(|_| "target/quantize-bench".into());
    let dir = Path::new(&dir);
    let sizes: Vec<usize> = std::env::var("BENCH_SIZES")
        .unwrap_or_else(|_| "100000,1000000".into())
        .split(',')
        .map(|s| s.trim().parse().expect("BENCH_SIZES: numbers"))
        .collect();
    let largest = sizes.iter().max().copied().unwrap_or(0);
    let bytes = std::fs::read(dir.join("million.base.f32")).expect("run bench/million.sh first");
    let rows: Vec<f32> =
        bytes.chunks_exact(4).map(|b| f32::from_le_bytes(b.try_into().expect("4"))).collect();
    drop(bytes);
    assert!(rows.len() / DIM >= largest, "{largest} rows asked, {} in the file", rows.len() / DIM);
    let model: Arc<dyn Embedder> = Arc::new(RowEmbedder::new(Arc::new(rows)));
    let costs: Vec<(usize, (f64, f64))> = sizes
        .iter()
        .map(|&n| (n, update_cost(&dir.join(format!("segments-{n}")), n, &model)))
        .collect();
    if let [(small, (t0, b0)), .., (large, (t1, b1))] = costs[..] {
        let name = |n: usize| match n {
            n if n % 1_000_000 == 0 => format!("{}M", n / 1_000_000),
            n => format!("{}k", n / 1_000),
        };
        println!(
            "update cost {}/{}: time {:.2}, bytes {:.2}",
            name(large),
            name(small),
            t1 / t0,
            b1 / b0
        );
    }
}
