//! Parity with sentence-transformers: the vectors of `../shared/models/reference_embeddings.json`
//! (all-MiniLM-L6-v2: mean pooling, L2-normalised, `max_seq_length` 256), also in batches that mix
//! lengths and for an input longer than 256 tokens.
//!
//! The model directory comes from `CKEEP_MODELS` (default `~/.cache/ckeep/models`), filled by
//! `ckeep model pull` (`scripts/test.sh` does).

use std::path::PathBuf;

use ckeep_embed::{Embedder, InputKind, SentenceTransformer, StaticModel};

fn models_dir() -> PathBuf {
    std::env::var_os("CKEEP_MODELS").map_or_else(
        || PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache/ckeep/models"),
        PathBuf::from,
    )
}

/// A reference file in `../shared/models` (beside `$CKEEP_DATA`).
fn shared_model_file(name: &str) -> serde_json::Value {
    let dir = ckeep_testkit::shared_models_dir();
    serde_json::from_str(&std::fs::read_to_string(dir.join(name)).unwrap()).unwrap()
}

fn reference() -> (Vec<String>, serde_json::Value) {
    let reference = shared_model_file("reference_embeddings.json");
    let texts = reference["texts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap().to_string())
        .collect();
    (texts, reference)
}

fn expected(reference: &serde_json::Value, model: &str) -> Vec<Vec<f32>> {
    let key = reference.as_object().unwrap().keys().find(|k| k.starts_with(model)).unwrap();
    serde_json::from_value(reference[key].clone()).unwrap()
}

fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let dot: f64 = a.iter().zip(b).map(|(x, y)| f64::from(*x) * f64::from(*y)).sum();
    let na: f64 = a.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    let nb: f64 = b.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    dot / (na * nb)
}

#[test]
#[ignore = "real tier (scripts/test.sh): installed models"]
fn minilm_matches_sentence_transformers() {
    let model = SentenceTransformer::load(&models_dir().join("all-MiniLM-L6-v2"))
        .expect("run `ckeep model pull all-MiniLM-L6-v2`");
    assert_eq!((model.dim(), model.max_seq_length()), (384, 256));
    let (texts, reference) = reference();
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    let want = expected(&reference, "all-MiniLM-L6-v2");
    // One batch mixing all lengths, and each text alone: both must match.
    let (together, _) = model.embed(&texts, InputKind::Document).unwrap();
    for (i, t) in texts.iter().enumerate() {
        let (alone, _) = model.embed_raw(&[t]).unwrap();
        let c1 = cosine(&together[i], &want[i]);
        let c2 = cosine(&alone[0], &want[i]);
        assert!(c1 >= 0.99999 && c2 >= 0.99999, "{t:?}: batch {c1}, alone {c2}");
        let norm: f32 = together[i].iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-4);
    }
}

#[test]
#[ignore = "real tier (scripts/test.sh): installed models"]
fn potion_matches_model2vec() {
    let model = StaticModel::load(&models_dir().join("potion-base-8M"))
        .expect("run `ckeep model pull potion-base-8M`");
    assert_eq!(model.info().dim, 256);
    let (texts, reference) = reference();
    let want = expected(&reference, "potion-base-8M");
    // The reference texts, then a long input (over 512 tokens) to show truncation is counted.
    let long = texts.join(" ").repeat(40);
    let mut inputs: Vec<&str> = texts.iter().map(String::as_str).collect();
    inputs.push(&long);
    let (got, stats) = model.embed(&inputs, InputKind::Query).unwrap();
    for (i, t) in texts.iter().enumerate() {
        let c = cosine(&got[i], &want[i]);
        assert!(c >= 0.99999, "{t:?}: {c}");
    }
    assert_eq!(stats.truncated, 1);
    let (alone, _) = model.embed_raw(&[texts[3].as_str()]).unwrap();
    assert_eq!(alone[0], got[3], "a text's vector does not depend on its batch");
}

#[test]
#[ignore = "real tier (scripts/test.sh): installed models"]
fn long_inputs_are_truncated_at_256_tokens_and_counted() {
    let dir = models_dir().join("all-MiniLM-L6-v2");
    let model = SentenceTransformer::load(&dir).expect("run `ckeep model pull all-MiniLM-L6-v2`");
    // 400 distinct whole-word tokens from the model's vocabulary: one token each.
    let vocab = std::fs::read_to_string(dir.join("vocab.txt")).unwrap();
    let words: Vec<&str> = vocab
        .lines()
        .skip(3000)
        .filter(|w| w.chars().all(|c| c.is_ascii_lowercase()) && w.len() > 3)
        .take(400)
        .collect();
    let (long, first254, first126) =
        (words.join(" "), words[..254].join(" "), words[..126].join(" "));
    let (v, stats) =
        model.embed_raw(&[long.as_str(), first254.as_str(), first126.as_str()]).unwrap();
    assert_eq!(stats.truncated, 1, "only the 400-word input is over the limit");
    // [CLS] + 254 words + [SEP] = 256 tokens: exactly what the long input is cut to.
    assert!(cosine(&v[0], &v[1]) > 0.99999, "cut at 256 tokens: {}", cosine(&v[0], &v[1]));
    assert!(cosine(&v[0], &v[2]) < 0.999, "not at tokenizer.json's 128: {}", cosine(&v[0], &v[2]));
}

#[test]
#[ignore = "real tier (scripts/test.sh): installed models"]
fn missing_files_are_named() {
    let dir = std::env::temp_dir().join(format!("ckeep-empty-model-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let err = SentenceTransformer::load(&dir).unwrap_err().to_string();
    assert!(err.contains("config.json") && err.contains("missing"), "{err}");
    std::fs::write(dir.join("config.json"), r#"{"model_type": "mpnet"}"#).unwrap();
    let err = SentenceTransformer::load(&dir).unwrap_err().to_string();
    assert!(err.contains("unsupported model") && err.contains("mpnet"), "{err}");
    // A BERT directory whose weights are cut short: the weights file is named.
    let real = models_dir().join("all-MiniLM-L6-v2");
    for f in ["config.json", "tokenizer.json"] {
        std::fs::copy(real.join(f), dir.join(f)).unwrap();
    }
    let weights = std::fs::read(real.join("model.safetensors")).unwrap();
    std::fs::write(dir.join("model.safetensors"), &weights[..weights.len() / 2]).unwrap();
    let err = SentenceTransformer::load(&dir).unwrap_err().to_string();
    assert!(err.contains("model.safetensors") && err.contains("corrupt"), "{err}");
    let err = ckeep_embed::load(dir.to_str().unwrap()).unwrap_err().to_string();
    assert!(err.contains("model.safetensors"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
#[ignore = "real tier (scripts/test.sh): installed models"]
fn token_vectors_are_the_encoders_and_windows_keep_context() {
    let dir = models_dir().join("all-MiniLM-L6-v2");
    let model = SentenceTransformer::load(&dir).expect("run `ckeep model pull all-MiniLM-L6-v2`");
    let (texts, reference) = reference();
    let want = expected(&reference, "all-MiniLM-L6-v2");
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let together = model.token_vectors(&refs, InputKind::Document).unwrap();
    for ((t, w), tv) in texts.iter().zip(&want).zip(together) {
        let alone = model.token_vectors(&[t.as_str()], InputKind::Document).unwrap();
        assert_eq!(alone[0], tv, "a text's token vectors do not depend on its batch");
        assert_eq!(tv.windows, 1);
        assert_eq!(tv.offsets.len() * tv.dim, tv.vectors.len());
        // The pooled sentence vector also averages [CLS] and [SEP]; the content mean is close.
        let mean = tv.mean_in(0, t.len()).unwrap();
        assert!(tv.offsets.len() < 10 || cosine(&mean, w) > 0.95, "{t:?}: {}", cosine(&mean, w));
        for &(s, e) in &tv.offsets {
            assert!(s < e && e <= t.len() && t.is_char_boundary(s), "{t:?}: {s}..{e}");
        }
    }
    // 1,200 one-token words read in windows of 510: the first tokens come from the first
    // window up to where the second window (from token 255) holds them more centrally, i.e. token
    // 382; that window is exactly the text of the first 510 words read alone.
    let vocab = std::fs::read_to_string(dir.join("vocab.txt")).unwrap();
    let words: Vec<&str> = vocab
        .lines()
        .skip(3000)
        .filter(|w| w.chars().all(|c| c.is_ascii_lowercase()) && w.len() > 3)
        .take(1200)
        .collect();
    let (long, head) = (words.join(" "), words[..510].join(" "));
    let mut read = model.token_vectors(&[&long, &head], InputKind::Document).unwrap();
    let (head, long) = (read.pop().unwrap(), read.pop().unwrap());
    assert_eq!((long.offsets.len(), long.windows, head.windows), (1200, 4, 1));
    let d = long.dim;
    for t in [0, 100, 254, 381] {
        assert_eq!(long.vectors[t * d..(t + 1) * d], head.vectors[t * d..(t + 1) * d], "token {t}");
    }
    // Token 400 sits more centrally in the second window: its vector is that window's.
    assert!(long.vectors[400 * d..401 * d] != head.vectors[400 * d..401 * d]);
    let static_model = StaticModel::load(&models_dir().join("potion-base-8M")).unwrap();
    let err = static_model.token_vectors(&["text"], InputKind::Document).unwrap_err().to_string();
    assert!(err.contains("late chunking"), "{err}");
}

/// multilingual-e5-small from its packed 4-bit image (`ckeep model pull multilingual-e5-small`)
/// against `reference_embeddings_e5.json`: sentence-transformers on the same weights
/// dequantised to f32, `query: ` / `passage: ` prompts, Chinese (Simplified and Traditional),
/// Japanese and English, and one input longer than 512 tokens (truncated, and counted).
#[test]
#[ignore = "real tier (scripts/test.sh): installed models"]
fn multilingual_e5_matches_sentence_transformers() {
    let model = SentenceTransformer::load(&models_dir().join("multilingual-e5-small"))
        .expect("run `ckeep model pull multilingual-e5-small`");
    assert_eq!((model.dim(), model.max_seq_length()), (384, 512));
    let reference = shared_model_file("reference_embeddings_e5.json");
    let items = reference["items"].as_array().unwrap();
    for kind in [InputKind::Query, InputKind::Document] {
        let name = if kind == InputKind::Query { "query" } else { "passage" };
        let mine: Vec<&serde_json::Value> = items.iter().filter(|i| i["kind"] == name).collect();
        let texts: Vec<&str> = mine.iter().map(|i| i["text"].as_str().unwrap()).collect();
        let (got, stats) = model.embed(&texts, kind).unwrap();
        assert_eq!(stats.truncated, 1, "the long input is over 512 tokens");
        for ((item, v), t) in mine.iter().zip(&got).zip(&texts) {
            let want: Vec<f32> = serde_json::from_value(item["embedding"].clone()).unwrap();
            let c = cosine(v, &want);
            assert!(c >= 0.9999, "{name} {t:?}: cosine {c}");
        }
    }
}

use ckeep_testkit::data_dir;

/// The least cosine between the int8 and the f32 vectors of `texts`.
fn int8_agreement(
    f32_model: &SentenceTransformer,
    int8_model: &SentenceTransformer,
    texts: &[&str],
    kind: InputKind,
) -> f64 {
    let (want, _) = f32_model.embed(texts, kind).unwrap();
    let (got, _) = int8_model.embed(texts, kind).unwrap();
    want.iter().zip(&got).map(|(w, g)| cosine(w, g)).fold(f64::MAX, f64::min)
}

/// `--precision int8` keeps MiniLM's vectors within a cosine of 0.995 of sentence-transformers'
/// and of our f32 ones, on the reference texts and on 500 real STS-B sentences; the int8 model
/// says so in its name and fingerprint, so caches and stores never mix the two.
#[test]
#[ignore = "real tier (scripts/test.sh): installed models and ../shared/data"]
fn minilm_in_int8_stays_within_a_cosine_of_0_995() {
    let dir = models_dir().join("all-MiniLM-L6-v2");
    let f32_model =
        SentenceTransformer::load(&dir).expect("run `ckeep model pull all-MiniLM-L6-v2`");
    let int8_model = SentenceTransformer::load(&dir).unwrap().into_int8().unwrap();
    assert_eq!(int8_model.info().name, "all-MiniLM-L6-v2@int8");
    assert_ne!(int8_model.info().fingerprint, f32_model.info().fingerprint);

    let (texts, reference) = reference();
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    let (got, _) = int8_model.embed(&texts, InputKind::Document).unwrap();
    for ((v, want), t) in got.iter().zip(expected(&reference, "all-MiniLM-L6-v2")).zip(&texts) {
        let c = cosine(v, &want);
        assert!(c >= 0.995, "{t:?}: cosine {c} to sentence-transformers");
    }

    let stsb = std::fs::read_to_string(data_dir().join("stsb/sts-test.csv")).unwrap();
    let sentences: Vec<&str> =
        stsb.lines().filter_map(|l| l.split('\t').nth(5)).take(500).collect();
    assert_eq!(sentences.len(), 500);
    let least = int8_agreement(&f32_model, &int8_model, &sentences, InputKind::Document);
    assert!(least >= 0.995, "least cosine to f32 on STS-B: {least}");
}

/// The same for multilingual-e5-small on real Chinese: CMRC 2018 paragraphs (up to 512 tokens)
/// and questions, and the reference's Chinese, Japanese and English texts.
#[test]
#[ignore = "real tier (scripts/test.sh): installed models and ../shared/data"]
fn multilingual_e5_in_int8_stays_within_a_cosine_of_0_995() {
    let dir = models_dir().join("multilingual-e5-small");
    let f32_model =
        SentenceTransformer::load(&dir).expect("run `ckeep model pull multilingual-e5-small`");
    let int8_model = SentenceTransformer::load(&dir).unwrap().into_int8().unwrap();
    let reference = shared_model_file("reference_embeddings_e5.json");
    for item in reference["items"].as_array().unwrap() {
        let kind = if item["kind"] == "query" { InputKind::Query } else { InputKind::Document };
        let text = item["text"].as_str().unwrap();
        let (got, _) = int8_model.embed(&[text], kind).unwrap();
        let want: Vec<f32> = serde_json::from_value(item["embedding"].clone()).unwrap();
        let c = cosine(&got[0], &want);
        assert!(c >= 0.995, "{text:?}: cosine {c} to sentence-transformers");
    }

    let cmrc = data_dir().join("zh/retrieval/cmrc2018/dev");
    let field = |file: &str, key: &str, n: usize| -> Vec<String> {
        let text = std::fs::read_to_string(cmrc.join(file)).unwrap();
        let rows = text.lines().take(n);
        rows.map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()[key].as_str().unwrap().to_string()
        })
        .collect()
    };
    let paragraphs = field("docs.jsonl", "text", 40);
    let questions = field("queries.jsonl", "question", 200);
    assert!(paragraphs.iter().all(|p| p.chars().any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c))));
    for (texts, kind) in [(&paragraphs, InputKind::Document), (&questions, InputKind::Query)] {
        let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
        let least = int8_agreement(&f32_model, &int8_model, &texts, kind);
        assert!(least >= 0.995, "least cosine to f32 on CMRC ({kind:?}): {least}");
    }
}
