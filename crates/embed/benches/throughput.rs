//! all-MiniLM-L6-v2 throughput on the CPU: 1,000 short sentences (STS-B test) and 200 passages
//! of 200–256 tokens (SciFact abstracts), plus single-query latency, in f32 and in int8 (with
//! the int8 vectors' least cosine to the f32 ones). Prints one JSON object, and
//! writes the exact inputs to `target/embed-bench/` so `bench/embed_speed.sh` can hand the same
//! texts to sentence-transformers on PyTorch in the same run.
//!
//! Run: `cargo bench -p ckeep-embed --bench throughput` (or the comparison script).

use std::path::{Path, PathBuf};
use std::time::Instant;

use ckeep_embed::{Embedder, InputKind, SentenceTransformer};

/// Best of this many passes over each input set.
const PASSES: usize = 3;

use ckeep_testkit::data_dir;

fn sentences(data: &Path) -> Vec<String> {
    std::fs::read_to_string(data.join("stsb/sts-test.csv"))
        .expect("STS-B test set")
        .lines()
        .filter_map(|l| l.split('\t').nth(5).map(str::to_string))
        .take(1000)
        .collect()
}

fn passages(data: &Path, model: &SentenceTransformer) -> Vec<String> {
    std::fs::read_to_string(data.join("beir_scifact/corpus.jsonl"))
        .expect("SciFact corpus")
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["text"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .filter(|t| (200..=256).contains(&model.count_tokens(t).unwrap()))
        .take(200)
        .collect()
}

/// Best-of-`PASSES` seconds, the token count of one pass, and the vectors.
fn time(model: &SentenceTransformer, texts: &[String]) -> (f64, usize, Vec<Vec<f32>>) {
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let mut best = f64::MAX;
    let mut tokens = 0;
    let mut vectors = Vec::new();
    for _ in 0..PASSES {
        let t = Instant::now();
        let (v, stats) = model.embed(&refs, InputKind::Document).unwrap();
        best = best.min(t.elapsed().as_secs_f64());
        tokens = stats.tokens;
        vectors = v;
    }
    (best, tokens, vectors)
}

/// Median milliseconds to embed one short query, over 50 runs.
fn query_latency(model: &SentenceTransformer) -> f64 {
    let query = "What causes the seasons on Earth?";
    let mut lat: Vec<f64> = (0..50)
        .map(|_| {
            let t = Instant::now();
            model.embed(&[query], InputKind::Query).unwrap();
            t.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    lat.sort_by(f64::total_cmp);
    lat[25]
}

/// The best matrix-product rate this machine reaches (faer, 2048², all threads), in GFLOP/s:
/// the practical compute ceiling the model's throughput is compared with.
fn gemm_peak() -> f64 {
    use faer::linalg::matmul::matmul;
    use faer::{Accum, MatMut, MatRef, Par};
    let size = 2048;
    let input: Vec<f32> = (0..size * size).map(|i| (i % 13) as f32 * 0.01).collect();
    let mut product = vec![0f32; size * size];
    let mut best = f64::MAX;
    for _ in 0..8 {
        let started = Instant::now();
        let lhs = MatRef::from_row_major_slice(&input, size, size);
        let dst = MatMut::from_row_major_slice_mut(&mut product, size, size);
        matmul(dst, Accum::Replace, lhs, lhs, 1.0, Par::rayon(0));
        best = best.min(started.elapsed().as_secs_f64());
    }
    2.0 * (size * size * size) as f64 / best / 1e9
}

fn main() {
    let models = std::env::var_os("CKEEP_MODELS").map_or_else(
        || PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cache/ckeep/models"),
        PathBuf::from,
    );
    let model = SentenceTransformer::load(&models.join("all-MiniLM-L6-v2"))
        .expect("ckeep model pull all-MiniLM-L6-v2");
    let data = data_dir();
    let sets = [("sentences", sentences(&data)), ("passages", passages(&data, &model))];
    let out = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/embed-bench");
    std::fs::create_dir_all(&out).unwrap();
    let mut report = serde_json::Map::new();
    for (name, texts) in &sets {
        std::fs::write(
            out.join(format!("{name}.jsonl")),
            texts.iter().map(|t| serde_json::to_string(t).unwrap() + "\n").collect::<String>(),
        )
        .unwrap();
        let (secs, tokens, vectors) = time(&model, texts);
        // The vectors too, so the comparison script can check parity on the same inputs.
        std::fs::write(
            out.join(format!("{name}.vectors.json")),
            serde_json::to_string(&vectors).unwrap(),
        )
        .unwrap();
        report.insert(
            (*name).to_string(),
            serde_json::json!({"texts": texts.len(), "tokens": tokens, "seconds": secs,
                "texts_per_s": texts.len() as f64 / secs, "tokens_per_s": tokens as f64 / secs}),
        );
    }
    let int8 =
        SentenceTransformer::load(&models.join("all-MiniLM-L6-v2")).unwrap().into_int8().unwrap();
    for (name, texts) in &sets {
        let (secs, tokens, vectors) = time(&int8, texts);
        let f32_vectors: Vec<Vec<f32>> = serde_json::from_slice(
            &std::fs::read(out.join(format!("{name}.vectors.json"))).unwrap(),
        )
        .unwrap();
        let min_cosine = vectors
            .iter()
            .zip(&f32_vectors)
            .map(|(a, b)| a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>())
            .fold(f32::MAX, f32::min);
        report.insert(
            format!("{name}_int8"),
            serde_json::json!({"texts": texts.len(), "tokens": tokens, "seconds": secs,
                "texts_per_s": texts.len() as f64 / secs, "tokens_per_s": tokens as f64 / secs,
                "min_cosine_to_f32": min_cosine}),
        );
    }
    report.insert("query_ms_p50".into(), serde_json::json!(query_latency(&model)));
    report.insert("query_ms_p50_int8".into(), serde_json::json!(query_latency(&int8)));
    report.insert("gemm_peak_gflops".into(), serde_json::json!(gemm_peak()));
    println!("{}", serde_json::Value::Object(report));
}
