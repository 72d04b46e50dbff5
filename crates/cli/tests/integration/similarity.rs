//! Chunk-pair similarity through the CLI, with the real all-MiniLM-L6-v2: `similar` checked
//! against a direct computation from `ckeep embed` vectors, and `pairs` on real QQP lines
//! (which include invalid UTF-8).

use crate::{data_dir, fails, json};

fn cosine(a: &[f64], b: &[f64]) -> f64 {
    let dot: f64 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    dot / (a.iter().map(|x| x * x).sum::<f64>().sqrt()
        * b.iter().map(|x| x * x).sum::<f64>().sqrt())
}

fn vectors(v: &serde_json::Value) -> Vec<Vec<f64>> {
    v["vectors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect())
        .collect()
}

/// A SQuAD article's first `words` words, plain letters only (so that counting them is plain
/// too: no hyphens, numbers or apostrophes that split into more words).
fn article(words: usize) -> String {
    let raw =
        std::fs::read_to_string(data_dir().join("squad_dev/longdoc-v1.1.docs.jsonl")).unwrap();
    let doc: serde_json::Value = serde_json::from_str(raw.lines().next().unwrap()).unwrap();
    let text = doc["text"].as_str().unwrap().split_whitespace();
    text.filter(|w| w.chars().all(char::is_alphabetic)).take(words).collect::<Vec<_>>().join(" ")
}

#[test]
#[ignore = "real tier (scripts/test.sh): installed models and ../shared/data"]
fn similar_is_the_mean_of_the_top_k_chunk_cosines() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    // 120 words → windows of 30 words (clamp(120/4, 18, 150)): 4 chunks; 80 words → 20: 4.
    let a = article(120);
    let b = article(200).split_whitespace().skip(120).collect::<Vec<_>>().join(" ");
    let out = json(&store, &["similar", &a, &b, "--explain", "--top-k", "3"]);
    assert_eq!(out["chunks"], serde_json::json!([4, 4]));
    let top = out["top"].as_array().unwrap();
    assert_eq!(top.len(), 3);
    // Every span slices its text, and the chunk texts re-embedded give the same cosines.
    let mut want = Vec::new();
    for p in top {
        for (side, text) in [("a", &a), ("b", &b)] {
            let span = &p[side]["span"];
            let (s, e) = (span[0].as_u64().unwrap(), span[1].as_u64().unwrap());
            assert_eq!(&text[s as usize..e as usize], p[side]["text"].as_str().unwrap());
        }
        let v = vectors(&json(
            &store,
            &["embed", p["a"]["text"].as_str().unwrap(), p["b"]["text"].as_str().unwrap()],
        ));
        let c = cosine(&v[0], &v[1]);
        assert!((c - p["cosine"].as_f64().unwrap()).abs() < 1e-5);
        want.push(c);
    }
    assert!(want.windows(2).all(|w| w[0] >= w[1] - 1e-6), "best first: {want:?}");
    let mean = want.iter().sum::<f64>() / 3.0;
    assert!((out["chunk_pair"].as_f64().unwrap() - mean).abs() < 1e-5);
    // The whole-text cosine is the cosine of the two texts' own embeddings.
    let v = vectors(&json(&store, &["embed", &a, &b]));
    assert!((out["whole"].as_f64().unwrap() - cosine(&v[0], &v[1])).abs() < 1e-5);
    // A text compared with itself is a duplicate by both scores.
    let same = json(&store, &["similar", &a, &a]);
    assert!(same["chunk_pair"].as_f64().unwrap() > 0.9999);
    assert_eq!(same["duplicate"], true);
}

#[test]
#[ignore = "real tier (scripts/test.sh): installed models and ../shared/data"]
fn similar_refuses_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    let (code, err) = fails(&store, &["similar", "some text", "   "]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("B is empty"), "{err}");
    let bad = dir.path().join("bad.txt");
    std::fs::write(&bad, b"caf\xe9").unwrap();
    let good = dir.path().join("good.txt");
    std::fs::write(&good, "a cafe").unwrap();
    let (code, err) =
        fails(&store, &["similar", "--files", bad.to_str().unwrap(), good.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("not UTF-8"), "{err}");
    // --lossy compares the repaired text instead.
    let repaired = json(
        &store,
        &["similar", "--files", "--lossy", bad.to_str().unwrap(), good.to_str().unwrap()],
    );
    assert!(repaired["chunk_pair"].as_f64().unwrap() > 0.0);
    let (code, _) = fails(&store, &["similar", "a", "b", "--chunker", "semantic"]);
    assert_ne!(code, 0);
    let (code, _) = fails(&store, &["similar", "a", "b", "--top-k", "0"]);
    assert_eq!(code, 2);
}

#[test]
#[ignore = "real tier (scripts/test.sh): installed models and ../shared/data"]
fn pairs_scores_real_qqp_lines_and_calibrates_on_other_pairs() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    // The first 400 QQP dev pairs; line 3 holds invalid UTF-8.
    let raw = std::fs::read(data_dir().join("qqp/dev.tsv")).unwrap();
    let lines: Vec<&[u8]> = raw.split(|b| *b == b'\n').take(400).collect();
    let file = dir.path().join("pairs.tsv");
    std::fs::write(&file, lines.join(&b'\n')).unwrap();
    let scores = dir.path().join("scores.tsv");
    let out = json(
        &store,
        &[
            "pairs",
            file.to_str().unwrap(),
            "--calibrate-split",
            "0.5",
            "--out",
            scores.to_str().unwrap(),
        ],
    );
    assert_eq!(out["pairs"], 200);
    assert_eq!(out["calibration_pairs"], 200);
    let results = out["results"].as_array().unwrap();
    assert_eq!(results.len(), 4, "fixed and calibrated, both methods");
    for r in results {
        let acc = r["accuracy"].as_f64().unwrap();
        let ci = r["accuracy_ci95"].as_array().unwrap();
        assert!(ci[0].as_f64().unwrap() <= acc && acc <= ci[1].as_f64().unwrap());
        // Real signal: MiniLM separates QQP duplicates far better than chance.
        assert!(r["roc_auc"].as_f64().unwrap() > 0.7, "{r}");
    }
    let written = std::fs::read_to_string(&scores).unwrap();
    assert_eq!(written.lines().count(), 201, "a header and one line per reported pair");
    // A row with too few columns is refused with its line number.
    std::fs::write(&file, "1\tonly one question\n").unwrap();
    let (code, err) = fails(&store, &["pairs", file.to_str().unwrap()]);
    assert_ne!(code, 0);
    assert!(err.contains("line 1"), "{err}");
}

#[test]
#[ignore = "real tier (scripts/test.sh): installed models and ../shared/data"]
fn dedup_clusters_edited_copies_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    let raw =
        std::fs::read_to_string(data_dir().join("squad_dev/longdoc-v1.1.docs.jsonl")).unwrap();
    let articles: Vec<String> = raw
        .lines()
        .take(3)
        .map(|l| {
            let d: serde_json::Value = serde_json::from_str(l).unwrap();
            d["text"].as_str().unwrap().split_whitespace().take(300).collect::<Vec<_>>().join(" ")
        })
        .collect();
    let sentences = |t: &str| t.split_inclusive(". ").map(str::to_string).collect::<Vec<_>>();
    // Article 0 with its third sentence removed; article 1 with its sentences reversed.
    let mut cut = sentences(&articles[0]);
    cut.remove(2);
    let mut reversed = sentences(&articles[1]);
    reversed.reverse();
    let docs = [
        ("a0", articles[0].clone()),
        ("a0-cut", cut.concat()),
        ("a1", articles[1].clone()),
        ("a1-reversed", reversed.join(" ")),
        ("a2", articles[2].clone()),
    ];
    let file = dir.path().join("docs.jsonl");
    let lines: Vec<String> = docs
        .iter()
        .map(|(id, text)| serde_json::json!({"id": id, "text": text}).to_string())
        .collect();
    std::fs::write(&file, lines.join("\n")).unwrap();
    crate::ok(
        &store,
        &["add", file.to_str().unwrap(), "--chunker", "sentences", "--model", "all-MiniLM-L6-v2"],
    );
    let out = json(&store, &["dedup", "--explain"]);
    let clusters = out["clusters"].as_array().unwrap();
    let mut members: Vec<Vec<&str>> = clusters
        .iter()
        .map(|c| c["documents"].as_array().unwrap().iter().map(|d| d.as_str().unwrap()).collect())
        .collect();
    members.sort();
    assert_eq!(members, [vec!["a0", "a0-cut"], vec!["a1", "a1-reversed"]], "{out}");
    // The matching spans hold the same sentence on both sides.
    for c in clusters {
        let m = &c["pairs"][0]["matches"][0];
        assert!(m["cosine"].as_f64().unwrap() > 0.999);
        assert_eq!(m["a"]["text"], m["b"]["text"]);
    }
    // Chunk level finds the shared sentences themselves.
    let chunks = json(&store, &["dedup", "--level", "chunk", "--threshold", "0.99"]);
    let pairs: usize = chunks["clusters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["pairs"].as_array().unwrap().len())
        .sum();
    assert!(pairs >= 10, "{pairs} identical sentence pairs");
    // A store without vectors is a clear usage error.
    let lexical = dir.path().join("lexical");
    crate::ok(&lexical, &["add", file.to_str().unwrap()]);
    let (code, err) = fails(&lexical, &["dedup"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("no vectors"), "{err}");
}

/// QQP dev as read, and 600 of its pairs (from the second line on) written to `dir/pairs.tsv`.
fn qqp_sample(dir: &std::path::Path) -> (Vec<u8>, std::path::PathBuf) {
    let raw = std::fs::read(data_dir().join("qqp/dev.tsv")).unwrap();
    let lines: Vec<&[u8]> = raw.split(|b| *b == b'\n').skip(1).take(600).collect();
    let file = dir.join("pairs.tsv");
    std::fs::write(&file, lines.join(&b'\n')).unwrap();
    (raw, file)
}

/// `pairs --learn` on real QQP pairs: fitted on a calibration half and judged on the other, or
/// cross-validated over all of them; the saved model gives `similar --pair-model` the same
/// probability for a pair as its features imply, and refuses features made another way.
#[test]
#[ignore = "real tier (scripts/test.sh): installed models and ../shared/data"]
fn pairs_learn_a_score_judged_on_pairs_it_did_not_see() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    let (raw, file) = qqp_sample(dir.path());
    let pairs_file = file.to_str().unwrap();
    let saved = dir.path().join("model.json");
    let calibrated = json(&store, &["pairs", pairs_file, "--calibrate-split", "0.5", "--learn"]);
    let folds =
        json(&store, &["pairs", pairs_file, "--learn", "--save-model", saved.to_str().unwrap()]);
    for (out, method) in
        [(&calibrated, "learned, calibrated"), (&folds, "learned, 5-fold out of fold")]
    {
        let results = out["results"].as_array().unwrap();
        let learned = results.iter().find(|r| r["method"] == method).expect(method);
        let auc = learned["roc_auc"].as_f64().unwrap();
        assert!(auc > 0.7, "real signal: {learned}");
        let acc = learned["accuracy"].as_f64().unwrap();
        assert!(acc > 0.6 && acc <= 1.0, "{learned}");
        let test = &out["learned_vs_whole"];
        assert!(test["p_value"].as_f64().is_some_and(|p| p > 0.0 && p <= 1.0), "{out}");
    }
    let model: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&saved).unwrap()).unwrap();
    assert_eq!(model["kind"], "ckeep-pair-logistic");
    assert_eq!(model["model"], "all-MiniLM-L6-v2");
    assert_eq!(model["trained_on"], folds["pairs"]);
    let (first, second) =
        ("How do I learn Python quickly?", "What is the fastest way to learn Python?");
    let model_path = saved.to_str().unwrap();
    let one = json(&store, &["similar", first, second, "--pair-model", model_path]);
    let probability = one["learned"]["probability"].as_f64().unwrap();
    assert!((0.0..=1.0).contains(&probability), "{one}");
    let threshold = model["threshold"].as_f64().unwrap();
    assert_eq!(one["learned"]["duplicate"], probability >= threshold);
    let (code, err) = fails(
        &store,
        &["similar", first, second, "--pair-model", model_path, "--chunker", "sentences"],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("fitted on all-MiniLM-L6-v2"), "{err}");
    let questions = dir.path().join("questions");
    dedup_by_the_learned_model(&questions, &raw, model_path, threshold, &[]);
    std::fs::write(&saved, "{\"kind\": \"something else\"}").unwrap();
    let (code, err) = fails(&store, &["similar", first, second, "--pair-model", model_path]);
    assert_eq!(code, 2, "{err}");
}

/// `pairs --learn` with a further model: its cosines are features of the saved model, which
/// `similar` applies only when given the same models, and `dedup` over a store of the first
/// model alone loads the further one by name, scoring pairs as `similar` does.
#[test]
#[ignore = "real tier (scripts/test.sh): installed models and ../shared/data"]
fn pairs_learn_from_two_models_and_dedup_applies_both() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    let (raw, file) = qqp_sample(dir.path());
    let (saved, scores) = (dir.path().join("model.json"), dir.path().join("scores.tsv"));
    let models = ["--model", "all-MiniLM-L6-v2", "--model", "potion-base-8M"];
    let mut args = vec!["pairs", file.to_str().unwrap(), "--learn"];
    args.extend(["--save-model", saved.to_str().unwrap(), "--out", scores.to_str().unwrap()]);
    args.extend(models);
    let out = json(&store, &args);
    assert_eq!(out["model"], "all-MiniLM-L6-v2+potion-base-8M");
    let learned = out["results"].as_array().unwrap().last().unwrap();
    assert!(learned["roc_auc"].as_f64().unwrap() > 0.7, "real signal: {learned}");
    let model: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&saved).unwrap()).unwrap();
    assert_eq!(model["further_models"], serde_json::json!(["potion-base-8M"]));
    let features: Vec<&str> =
        model["features"].as_array().unwrap().iter().map(|f| f.as_str().unwrap()).collect();
    assert!(features.contains(&"whole_cosine:potion-base-8M"), "{features:?}");
    assert!(features.contains(&"whole_cosine*whole_cosine:potion-base-8M"), "{features:?}");
    // --out has one column per feature, named as the model names them.
    let table = std::fs::read_to_string(&scores).unwrap();
    let header: Vec<&str> = table.lines().next().unwrap().split('\t').collect();
    assert_eq!(header[4..], features[..]);
    assert_eq!(table.lines().count(), 601);

    let (first, second) =
        ("How do I learn Python quickly?", "What is the fastest way to learn Python?");
    let model_path = saved.to_str().unwrap();
    let (code, err) = fails(&store, &["similar", first, second, "--pair-model", model_path]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--model all-MiniLM-L6-v2 --model potion-base-8M"), "{err}");
    let mut args = vec!["similar", first, second, "--pair-model", model_path];
    args.extend(models);
    let one = json(&store, &args);
    assert_eq!(one["further_models"][0]["model"], "potion-base-8M");
    let probability = one["learned"]["probability"].as_f64().unwrap();
    assert!((0.0..=1.0).contains(&probability), "{one}");
    let questions = dir.path().join("questions");
    let threshold = model["threshold"].as_f64().unwrap();
    let reported = dedup_by_the_learned_model(&questions, &raw, model_path, threshold, &models);
    assert!(reported > 0);
}

/// `dedup --pair-model` over a store of QQP questions the model was not fitted on: every pair
/// it reports reaches the model's threshold with the probability `similar --pair-model` gives
/// the same two texts (given `models` for its features); a chunk-level run is refused. Returns
/// the pairs reported.
fn dedup_by_the_learned_model(
    store: &std::path::Path,
    qqp: &[u8],
    model: &str,
    threshold: f64,
    models: &[&str],
) -> usize {
    let text = String::from_utf8_lossy(qqp);
    let mut docs = String::new();
    for (n, line) in text.lines().skip(601).take(300).enumerate() {
        let cols: Vec<&str> = line.split('\t').collect();
        if let [_, a, b, _] = cols.as_slice() {
            for (side, q) in [("a", a), ("b", b)] {
                docs.push_str(
                    &serde_json::json!({"id": format!("{n}{side}"), "text": q}).to_string(),
                );
                docs.push('\n');
            }
        }
    }
    let file = store.with_extension("jsonl");
    std::fs::write(&file, docs).unwrap();
    crate::ok(store, &["add", file.to_str().unwrap(), "--model", "all-MiniLM-L6-v2"]);
    let out = json(store, &["dedup", "--pair-model", model]);
    let pairs: Vec<&serde_json::Value> = out["clusters"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["pairs"].as_array().unwrap())
        .collect();
    assert!(!pairs.is_empty(), "QQP has duplicate questions: {out}");
    for p in pairs.iter().take(5) {
        let score = p["score"].as_f64().unwrap();
        assert!(score >= threshold, "{p}");
        let read = |id: &serde_json::Value| {
            json(store, &["show", id.as_str().unwrap()])["text"].as_str().unwrap().to_string()
        };
        let (a, b) = (read(&p["a"]), read(&p["b"]));
        let mut args = vec!["similar", &a, &b, "--pair-model", model];
        args.extend(models);
        let one = json(store, &args);
        let probability = one["learned"]["probability"].as_f64().unwrap();
        assert!((probability - score).abs() < 1e-4, "{p} vs {one}");
    }
    let (code, err) = fails(store, &["dedup", "--pair-model", model, "--level", "chunk"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("document pairs"), "{err}");
    pairs.len()
}
