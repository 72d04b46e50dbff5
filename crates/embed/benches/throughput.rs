//! Encoder throughput on the CPU: 1,000 short texts and 200 passages of 200–256 tokens, plus
//! single-query latency, in f32 and in int8 (with the int8 vectors' least cosine to the f32
//! ones). all-MiniLM-L6-v2 (the default) reads STS-B test sentences and SciFact abstracts;
//! multilingual-e5-small (`CKEEP_BENCH_MODEL=multilingual-e5-small`) reads LCQMC questions as
//! queries and DRCD paragraphs (Traditional Chinese) as passages, with its prompts. Prints one
//! JSON object, and writes the exact inputs to `target/embed-bench/<model>/` so
//! `bench/embed_speed.sh` can hand the same texts to PyTorch and ONNX Runtime in the same run.
//!
//! Run: `cargo bench -p ckeep-embed --bench throughput` (or the comparison script).

use std::path::{Path, PathBuf};
use std::time::Instant;

use ckeep_embed::{Embedder, InputKind, SentenceTransformer};

/// Best of this many passes over each input set.
const PASSES: usize = 3;

use ckeep_testkit::data_dir;

/// The two input sets of a model: short texts and their kind, and passages.
struct Inputs {
    short: Vec<String>,
    short_kind: InputKind,
    passages: Vec<String>,
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .map(str::to_string)
        .collect()
}

/// 200 texts of 200–256 tokens, in file order.
fn of_passage_length(texts: Vec<String>, model: &SentenceTransformer) -> Vec<String> {
    texts
        .into_iter()
        .filter(|t| (200..=256).contains(&model.count_tokens(t).unwrap()))
        .take(200)
        .collect()
}

fn inputs(name: &str, data: &Path, model: &SentenceTransformer) -> Inputs {
    let json = |line: &str| serde_json::from_str::<serde_json::Value>(line).unwrap();
    if name == "multilingual-e5-small" {
        let zh = data.join("zh");
        let questions = lines(&zh.join("pairs/lcqmc/dev.tsv"));
        let short =
            questions.iter().filter_map(|l| l.split('\t').nth(1)).take(1000).map(str::to_string);
        // Paragraph spans count characters, not bytes.
        let paragraphs: Vec<String> = lines(&zh.join("retrieval/drcd/dev/docs.jsonl"))
            .iter()
            .flat_map(|l| {
                let doc = json(l);
                let chars: Vec<char> = doc["text"].as_str().unwrap().chars().collect();
                let span = |p: &serde_json::Value, key: &str| p[key].as_u64().unwrap() as usize;
                let paragraphs = doc["paragraphs"].as_array().unwrap().iter();
                paragraphs
                    .map(|p| chars[span(p, "start")..span(p, "end")].iter().collect())
                    .collect::<Vec<String>>()
            })
            .collect();
        return Inputs {
            short: short.collect(),
            short_kind: InputKind::Query,
            passages: of_passage_length(paragraphs, model),
        };
    }
    let short = lines(&data.join("stsb/sts-test.csv"))
        .iter()
        .filter_map(|l| l.split('\t').nth(5).map(str::to_string))
        .take(1000)
        .collect();
    let abstracts = lines(&data.join("beir_scifact/corpus.jsonl"))
        .iter()
        .map(|l| json(l)["text"].as_str().unwrap().to_string())
        .collect();
    Inputs { short, short_kind: InputKind::Document, passages: of_passage_length(abstracts, model) }
}

/// Best-of-`PASSES` seconds, the token count of one pass, and the vectors.
fn time(
    model: &SentenceTransformer,
    texts: &[String],
    kind: InputKind,
) -> (f64, usize, Vec<Vec<f32>>) {
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let mut best = f64::MAX;
    let mut tokens = 0;
    let mut vectors = Vec::new();
    for _ in 0..PASSES {
        let t = Instant::now();
        let (v, stats) = model.embed(&refs, kind).unwrap();
        best = best.min(t.elapsed().as_secs_f64());
        tokens = stats.tokens;
        vectors = v;
    }
    (best, tokens, vectors)
}

/// Median milliseconds to embed one short query, over 50 runs.
fn query_latency(model: &SentenceTransformer, query: &str) -> f64 {
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
    let name = std::env::var("CKEEP_BENCH_MODEL").unwrap_or_else(|_| "all-MiniLM-L6-v2".into());
    let model = SentenceTransformer::load(&models.join(&name))
        .unwrap_or_else(|e| panic!("{e}: run `ckeep model pull {name}`"));
    let data = data_dir();
    let Inputs { short, short_kind, passages } = inputs(&name, &data, &model);
    let sets = [("sentences", short, short_kind), ("passages", passages, InputKind::Document)];
    let out = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/embed-bench").join(&name);
    std::fs::create_dir_all(&out).unwrap();
    let mut report = serde_json::Map::new();
    report.insert("model".into(), serde_json::json!(name));
    report.insert(
        "kinds".into(),
        serde_json::json!({"sentences": format!("{short_kind:?}"), "passages": "Document"}),
    );
    for (name, texts, kind) in &sets {
        std::fs::write(
            out.join(format!("{name}.jsonl")),
            texts.iter().map(|t| serde_json::to_string(t).unwrap() + "\n").collect::<String>(),
        )
        .unwrap();
        let (secs, tokens, vectors) = time(&model, texts, *kind);
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
    let int8 = SentenceTransformer::load(&models.join(&name)).unwrap().into_int8().unwrap();
    for (name, texts, kind) in &sets {
        let (secs, tokens, vectors) = time(&int8, texts, *kind);
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
    // The same question in the model's language; the comparison script asks PyTorch the same.
    let query = if name == "multilingual-e5-small" {
        "地球为什么会有四季？"
    } else {
        "What causes the seasons on Earth?"
    };
    report.insert("query".into(), serde_json::json!(query));
    report.insert("query_ms_p50".into(), serde_json::json!(query_latency(&model, query)));
    report.insert("query_ms_p50_int8".into(), serde_json::json!(query_latency(&int8, query)));
    report.insert("gemm_peak_gflops".into(), serde_json::json!(gemm_peak()));
    println!("{}", serde_json::Value::Object(report));
}
