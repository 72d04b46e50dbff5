//! `ckeep eval`: scoring runs from any system, and comparing strategies on real datasets.

use crate::{data_dir, fails, json, ok};

/// The committed `pytrec_eval` reference, as files.
fn reference_files(dir: &std::path::Path) -> (String, String, serde_json::Value) {
    let reference: serde_json::Value =
        serde_json::from_str(include_str!("../../../eval/tests/data/pytrec_reference.json"))
            .unwrap();
    let qrels = dir.join("qrels.txt");
    let run = dir.join("run.trec");
    std::fs::write(&qrels, reference["qrels"].as_str().unwrap()).unwrap();
    std::fs::write(&run, reference["run"].as_str().unwrap()).unwrap();
    (qrels.display().to_string(), run.display().to_string(), reference["expected"].clone())
}

#[test]
fn metrics_of_a_run_file_match_pytrec_eval_means() {
    let dir = tempfile::tempdir().unwrap();
    let (qrels, run, expected) = reference_files(dir.path());
    let store = dir.path().join("unused");
    let out = json(
        &store,
        &[
            "eval",
            "metrics",
            "--qrels",
            &qrels,
            "--run",
            &run,
            "--metrics",
            "ndcg@10,map,recall@100,mrr",
        ],
    );
    let expected = expected.as_object().unwrap();
    assert_eq!(out["queries"], expected.len());
    for m in ["ndcg@10", "map", "recall@100", "mrr"] {
        let want: f64 =
            expected.values().map(|v| v[m].as_f64().unwrap()).sum::<f64>() / expected.len() as f64;
        let got = out["means"][m].as_f64().unwrap();
        assert!((got - want).abs() < 1e-9, "{m}: {got} vs {want}");
    }
    assert!(out["missing_from_run"].as_array().unwrap().iter().any(|q| q == "q3"));
}

#[test]
fn malformed_runs_and_unknown_metrics_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let (qrels, _, _) = reference_files(dir.path());
    let bad = dir.path().join("bad.trec");
    std::fs::write(&bad, "q1 Q0 d1 1 0.5 x\nq1 Q0 d2\n").unwrap();
    let store = dir.path().join("unused");
    let (code, err) =
        fails(&store, &["eval", "metrics", "--qrels", &qrels, "--run", bad.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.contains("line 2: expected `qid Q0 docid rank score tag`"), "{err}");
    let (code, err) = fails(
        &store,
        &["eval", "metrics", "--qrels", &qrels, "--run", &qrels, "--metrics", "ndcg"],
    );
    assert_eq!(code, 2);
    assert!(err.contains("unknown metric `ndcg`"), "{err}");
}

#[test]
fn eval_help_explains_every_metric() {
    let help = ok(std::path::Path::new("unused"), &["eval", "run", "--help"]);
    for m in ["ndcg@K", "mrr[@K]", "map[@K]", "recall@K", "p@K", "hit@K"] {
        assert!(help.contains(m), "{m} missing from:\n{help}");
    }
}

#[test]
#[ignore = "real tier (scripts/test.sh): ../shared/data"]
fn bm25_on_scifact_reaches_the_published_range() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("report");
    let scifact = data_dir().join("beir_scifact");
    let out = json(
        &dir.path().join("unused"),
        &[
            "eval",
            "run",
            "--dataset",
            scifact.to_str().unwrap(),
            "--strategy",
            "chunker=whole,level=doc",
            "--strategy",
            "chunker=sentences:3,level=doc,agg=mean:3",
            "--metrics",
            "ndcg@10,recall@100",
            "--report",
            report.to_str().unwrap(),
        ],
    );
    assert_eq!(out["queries"], 300);
    let first = &out["strategies"][0];
    let ndcg = first["means"]["ndcg@10"].as_f64().unwrap();
    assert!(ndcg >= 0.65, "BM25 nDCG@10 on SciFact: {ndcg}");
    assert!(first["p_values"]["ndcg@10"].is_null(), "the baseline has no p-value");
    let p = out["strategies"][1]["p_values"]["ndcg@10"].as_f64().unwrap();
    assert!((0.0..=1.0).contains(&p));
    for f in ["table.md", "results.json", "run-1.trec", "run-2.trec", "metrics.svg", "recall.svg"] {
        assert!(report.join(f).is_file(), "{f} missing");
    }
    // The written run scores the same through `eval metrics`.
    let again = json(
        &dir.path().join("unused"),
        &[
            "eval",
            "metrics",
            "--qrels",
            scifact.join("qrels/test.tsv").to_str().unwrap(),
            "--run",
            report.join("run-1.trec").to_str().unwrap(),
            "--metrics",
            "ndcg@10",
        ],
    );
    assert!((again["means"]["ndcg@10"].as_f64().unwrap() - ndcg).abs() < 1e-9);
}

#[test]
fn long_document_layout_with_answer_objects() {
    let dir = tempfile::tempdir().unwrap();
    let docs = dir.path().join("docs.jsonl");
    let queries = dir.path().join("queries.jsonl");
    std::fs::write(
        &docs,
        "{\"doc_id\": \"cats\", \"title\": \"Cats\", \"text\": \"Cats purr. Cats sleep all day.\"}\n{\"doc_id\": \"dogs\", \"title\": \"Dogs\", \"text\": \"Dogs bark. Dogs fetch sticks.\"}\n",
    )
    .unwrap();
    std::fs::write(
        &queries,
        "{\"qid\": \"1\", \"question\": \"what do dogs fetch\", \"doc_id\": \"dogs\", \"answers\": [{\"text\": \"sticks\", \"start\": 22, \"end\": 28}]}\n{\"qid\": \"2\", \"question\": \"who purrs\", \"doc_id\": \"cats\", \"answers\": [\"Cats\"]}\n",
    )
    .unwrap();
    let store = dir.path().join("unused");
    let out = json(
        &store,
        &[
            "eval",
            "run",
            "--docs",
            docs.to_str().unwrap(),
            "--queries",
            queries.to_str().unwrap(),
            "--strategy",
            "chunker=sentences,level=doc",
            "--metrics",
            "mrr",
        ],
    );
    assert_eq!(out["strategies"][0]["means"]["mrr"], 1.0);
    std::fs::write(&queries, "{\"qid\": \"1\", \"question\": \"q\"}\nnot json\n").unwrap();
    let (code, err) = fails(
        &store,
        &[
            "eval",
            "run",
            "--docs",
            docs.to_str().unwrap(),
            "--queries",
            queries.to_str().unwrap(),
            "--strategy",
            "level=doc",
        ],
    );
    assert_eq!(code, 2);
    assert!(
        err.contains("line 1: needs `qid`, `question` and `doc_id`")
            && err.contains("line 2: invalid JSON"),
        "{err}"
    );
}

#[test]
#[ignore = "real tier (scripts/test.sh): ../shared/data"]
fn fastbook_chapter_one_answer_containment() {
    let dir = tempfile::tempdir().unwrap();
    let fastbook = data_dir().join("fastbook_benchmark");
    let out = json(
        &dir.path().join("unused"),
        &[
            "eval",
            "run",
            "--dataset",
            fastbook.to_str().unwrap(),
            "--split",
            "ch1",
            "--strategy",
            "chunker=paragraphs",
            "--strategy",
            "chunker=paragraphs:3",
            "--metrics",
            "contain@1,contain@3,contain@5",
        ],
    );
    assert_eq!(out["queries"], 30);
    assert_eq!(out["documents"], 1);
    for s in out["strategies"].as_array().unwrap() {
        let m = &s["means"];
        let (c1, c3, c5) = (
            m["contain@1"].as_f64().unwrap(),
            m["contain@3"].as_f64().unwrap(),
            m["contain@5"].as_f64().unwrap(),
        );
        assert!(c1 <= c3 && c3 <= c5, "containment grows with k: {c1} {c3} {c5}");
        assert!(c5 >= 0.5, "BM25 finds a gold passage in the top 5 for most questions: {c5}");
    }
    let (code, err) = fails(
        &dir.path().join("unused"),
        &["eval", "metrics", "--qrels", "x", "--run", "y", "--metrics", "contain@3"],
    );
    assert_eq!(code, 2);
    assert!(err.contains("needs the retrieved text"), "{err}");
}

/// Strategies on one chunker that differ in needing the model (BM25 with and without title
/// context, dense, hybrid), with `--model` given once, in both orders: every row comes back,
/// and title context finds what only a title names.
#[test]
fn mixed_strategies_share_one_model_flag() {
    let dir = tempfile::tempdir().unwrap();
    let docs = dir.path().join("docs.jsonl");
    let queries = dir.path().join("queries.jsonl");
    std::fs::write(
        &docs,
        concat!(
            "{\"doc_id\": \"owls\", \"title\": \"Owls\", \"text\": \"These birds hunt at night on soft feathers.\"}\n",
            "{\"doc_id\": \"larks\", \"title\": \"Larks\", \"text\": \"These birds sing at dawn over the fields.\"}\n",
            "{\"doc_id\": \"tea\", \"title\": \"Oolong\", \"text\": \"A partly oxidised tea from Fujian and Taiwan.\"}\n",
        ),
    )
    .unwrap();
    std::fs::write(
        &queries,
        concat!(
            "{\"qid\": \"1\", \"question\": \"owls\", \"doc_id\": \"owls\"}\n",
            "{\"qid\": \"2\", \"question\": \"larks singing\", \"doc_id\": \"larks\"}\n",
            "{\"qid\": \"3\", \"question\": \"oolong tea\", \"doc_id\": \"tea\"}\n",
        ),
    )
    .unwrap();
    let strategies = [
        "chunker=whole,level=doc,mode=hybrid",
        "chunker=whole,level=doc,mode=bm25,repr=contextual:title",
        "chunker=whole,level=doc,mode=bm25",
        "chunker=whole,level=doc,mode=dense",
    ];
    let store = dir.path().join("unused");
    for order in [strategies.to_vec(), strategies.iter().rev().copied().collect()] {
        let (d, q) = (docs.to_str().unwrap(), queries.to_str().unwrap());
        let mut args = vec!["eval", "run", "--docs", d, "--queries", q, "--model", "test-hash-256"];
        for s in &order {
            args.extend(["--strategy", s]);
        }
        args.extend(["--metrics", "mrr"]);
        let out = json(&store, &args);
        let rows = out["strategies"].as_array().unwrap();
        assert_eq!(rows.len(), 4, "{out}");
        let mrr = |spec: &str| {
            let row = rows.iter().find(|r| {
                let s = r["strategy"].as_str().unwrap();
                s.contains(spec) && (spec.contains("repr=") || !s.contains("repr="))
            });
            row.unwrap_or_else(|| panic!("no row for {spec}: {out}"))["means"]["mrr"]
                .as_f64()
                .unwrap()
        };
        assert!(mrr("repr=contextual:title") > 0.999, "titles name every document: {out}");
        assert!(mrr("mode=bm25") < 1.0, "`owls` is in no text, only a title: {out}");
        assert!(mrr("mode=hybrid") > 0.0 && mrr("mode=dense") > 0.0, "{out}");
    }
}

/// A BEIR corpus with documents of empty text (as Cranfield has two) is evaluated without
/// them, with a warning naming each once; `--strict` refuses it; a malformed line is reported
/// once, flat, with its number.
#[test]
fn empty_documents_are_left_out_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let beir = dir.path().join("beir");
    std::fs::create_dir_all(beir.join("qrels")).unwrap();
    let corpus = concat!(
        "{\"_id\": \"d1\", \"title\": \"Owls\", \"text\": \"Owls hunt at night.\"}\n",
        "{\"_id\": \"d2\", \"title\": \"\", \"text\": \"\"}\n",
        "{\"_id\": \"d3\", \"title\": \"Larks\", \"text\": \"Larks sing at dawn.\"}\n",
        "{\"_id\": \"d4\", \"title\": \"Blank\", \"text\": \"  \\n \"}\n",
    );
    std::fs::write(beir.join("corpus.jsonl"), corpus).unwrap();
    std::fs::write(
        beir.join("queries.jsonl"),
        "{\"_id\": \"q1\", \"text\": \"owls at night\"}\n{\"_id\": \"q2\", \"text\": \"larks\"}\n",
    )
    .unwrap();
    std::fs::write(
        beir.join("qrels/test.tsv"),
        "query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td3\t1\n",
    )
    .unwrap();
    let store = dir.path().join("unused");
    let args = ["eval", "run", "--dataset", beir.to_str().unwrap(), "--strategy", "level=doc"];
    let out = crate::run(&store, &[&["--json"], &args[..]].concat());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("2 document(s) with empty text"), "{stderr}");
    assert!(stderr.contains("corpus.jsonl:2: document `d2` has empty text"), "{stderr}");
    assert!(stderr.contains("corpus.jsonl:4: document `d4` has empty text"), "{stderr}");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (report["documents"].as_u64(), report["skipped_documents"].as_u64()),
        (Some(2), Some(2))
    );
    assert_eq!(report["strategies"][0]["means"]["ndcg@10"], 1.0);

    let (code, err) = fails(&store, &[&args[..], &["--strict"]].concat());
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("document `d4` has empty text"), "{err}");

    std::fs::write(beir.join("corpus.jsonl"), format!("{corpus}{{\"_id\": \"d5\"}}\n")).unwrap();
    let (code, err) = fails(&store, &args);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("1 malformed line(s):\n  line 5: missing `text`"), "{err}");
    assert!(!err.contains("line 0"), "one flat list: {err}");
}

/// `eval tune` expands a grid, deals the queries into folds, and reports each fold's choice and
/// the out-of-fold mean, which is made of the chosen candidates' values on held-out queries.
#[test]
fn tune_reports_out_of_fold_scores() {
    let dir = tempfile::tempdir().unwrap();
    let docs = dir.path().join("docs.jsonl");
    let queries = dir.path().join("queries.jsonl");
    let animals = ["owls", "larks", "wrens", "gulls", "herons", "finches", "crows", "swans"];
    let mut d = String::new();
    let mut q = String::new();
    for (i, a) in animals.iter().enumerate() {
        use std::fmt::Write as _;
        let text = format!("The {a} of chapter {i} live by the river and eat seeds.");
        let doc = serde_json::json!({"doc_id": a, "title": a, "text": text});
        writeln!(d, "{doc}").unwrap();
        let query = serde_json::json!({"qid": format!("q{i}"), "question": format!("{a} river"), "doc_id": a});
        writeln!(q, "{query}").unwrap();
    }
    std::fs::write(&docs, d).unwrap();
    std::fs::write(&queries, q).unwrap();
    let store = dir.path().join("unused");
    let (d, q) = (docs.to_str().unwrap(), queries.to_str().unwrap());
    let mut args = vec!["eval", "tune", "--docs", d, "--queries", q, "--model", "test-hash-256"];
    args.extend([
        "--strategy",
        "level=doc,mode=hybrid:linear={0.2,0.8}",
        "--strategy",
        "level=doc",
    ]);
    args.extend(["--metric", "mrr", "--folds", "4"]);
    let out = json(&store, &args);
    let candidates = out["candidates"].as_array().unwrap();
    assert_eq!(candidates.len(), 3, "{out}");
    let folds = out["folds"].as_array().unwrap();
    assert_eq!(folds.len(), 4);
    assert_eq!(folds.iter().map(|f| f["queries"].as_u64().unwrap()).sum::<u64>(), 8);
    let names: Vec<&str> = candidates.iter().map(|c| c["strategy"].as_str().unwrap()).collect();
    let held: f64 = folds
        .iter()
        .map(|f| {
            assert!(names.contains(&f["strategy"].as_str().unwrap()), "{f}");
            f["held_out_mean"].as_f64().unwrap() * f["queries"].as_f64().unwrap()
        })
        .sum::<f64>()
        / 8.0;
    assert!((held - out["out_of_fold"].as_f64().unwrap()).abs() < 1e-9, "{out}");
    let best = out["in_sample_best"]["mean"].as_f64().unwrap();
    assert!(out["out_of_fold"].as_f64().unwrap() <= best + 1e-12, "{out}");
    assert!(out["p_vs_baseline"].as_f64().unwrap() > 0.0);
    // Plain output, and a grid that does not close.
    assert!(ok(&store, &args[..]).contains("out-of-fold mrr: "), "plain report");
    let bad =
        ["eval", "tune", "--docs", d, "--queries", q, "--strategy", "mode=hybrid:linear={0.2"];
    let (code, err) = fails(&store, &bad);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("without its"), "{err}");
}

/// BEIR datasets are searched over title and text unless told otherwise, and the labels say
/// which; `--fields text` searches the text alone.
#[test]
fn beir_datasets_search_titles_by_default() {
    let dir = tempfile::tempdir().unwrap();
    let beir = dir.path().join("beir");
    std::fs::create_dir_all(beir.join("qrels")).unwrap();
    std::fs::write(
        beir.join("corpus.jsonl"),
        concat!(
            "{\"_id\": \"d1\", \"title\": \"Owls\", \"text\": \"These birds hunt at night.\"}\n",
            "{\"_id\": \"d2\", \"title\": \"Larks\", \"text\": \"These birds sing at dawn.\"}\n",
        ),
    )
    .unwrap();
    std::fs::write(beir.join("queries.jsonl"), "{\"_id\": \"q1\", \"text\": \"owls\"}\n").unwrap();
    std::fs::write(beir.join("qrels/test.tsv"), "q1\td1\t1\n").unwrap();
    let store = dir.path().join("unused");
    let args = ["eval", "run", "--dataset", beir.to_str().unwrap(), "--strategy", "level=doc"];
    let titled = json(&store, &args);
    let row = &titled["strategies"][0];
    assert!(row["strategy"].as_str().unwrap().contains("repr=contextual:title"), "{row}");
    assert!(row["means"]["ndcg@10"].as_f64().unwrap() > 0.99, "{row}");
    let plain = json(&store, &[&args[..], &["--fields", "text"]].concat());
    let row = &plain["strategies"][0];
    assert!(!row["strategy"].as_str().unwrap().contains("repr="), "{row}");
    assert!(row["means"]["ndcg@10"].as_f64().unwrap() < 0.01, "no owls in the text: {row}");
}
