//! `ckeep ask` and `ckeep eval answers` end to end:
//! - an extractive answer (`--llm none`) whose every citation is the stored file's bytes at its
//!   span, the same from the CLI, `POST /ask` (whole and as server-sent events), the MCP `ask`
//!   tool and, in python/tests, `Store.ask`;
//! - a Chinese question answered from Chinese articles (CMRC 2018);
//! - bad input (an empty question, a store without documents, a model that is missing, a chat
//!   server that is down or answers garbage): a clear error and exit 1 or 2, the store as it
//!   was;
//! - `eval answers` on SQuAD 2.0 scores answerable and unanswerable questions.

use std::process::Stdio;

use serde_json::{Value, json};

use crate::errors::Mcp;
use crate::{agent, ckeep, data_dir, fails, json, ok, snapshot};

const QUESTION: &str = "What does the parameter k1 control in BM25?";

/// A store of the example corpus.
fn corpus_store(dir: &std::path::Path) -> std::path::PathBuf {
    let store = dir.join("s");
    let corpus = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/corpus");
    ok(&store, &["add", corpus]);
    store
}

/// What must agree between front ends: the answer, its sentences and citations, the context
/// (scores to six digits: an `f32` reaches clients through different JSON writers).
fn essence(answer: &Value) -> Value {
    let mut passages = answer["passages"].clone();
    for p in passages.as_array_mut().unwrap() {
        p["score"] = json!(format!("{:.6}", p["score"].as_f64().unwrap()));
    }
    json!({
        "answer": answer["answer"], "abstained": answer["abstained"],
        "sentences": answer["sentences"], "passages": passages,
        "strategy": answer["strategy"], "context": answer["context"],
    })
}

#[test]
fn an_extractive_answer_is_located_in_the_files_and_the_same_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let store = corpus_store(dir.path());
    let answer = json(&store, &["ask", QUESTION, "--llm", "none"]);
    assert_eq!(answer["answerer"], "extractive");
    assert_eq!(answer["abstained"], false);
    assert!(answer["answer"].as_str().unwrap().contains("k1 controls"), "{answer}");
    let sentences = answer["sentences"].as_array().unwrap();
    assert!(!sentences.is_empty());
    for s in sentences {
        assert_eq!(s["verified"], true, "{s}");
        for c in s["citations"].as_array().unwrap() {
            let file = c["doc_id"].as_str().unwrap();
            let text = std::fs::read_to_string(
                std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(file),
            )
            .unwrap();
            let (from, to) = (c["span"][0].as_u64().unwrap(), c["span"][1].as_u64().unwrap());
            assert_eq!(&text[from as usize..to as usize], c["quote"].as_str().unwrap());
        }
    }
    // The plain output: the answer, then the numbered passages with their spans.
    let plain = ok(&store, &["ask", QUESTION, "--llm", "none"]);
    assert!(plain.contains("k1 controls") && plain.contains("bm25.md [0..1005]"), "{plain}");
    assert!(plain.contains("(exact)"), "{plain}");

    // HTTP, whole and streamed.
    let (mut server, base) = crate::serve(&store);
    let body = json!({"question": QUESTION, "extractive": true});
    let mut res = agent().post(format!("{base}/ask")).send_json(&body).unwrap();
    assert_eq!(res.status(), 200);
    let over_http: Value = res.body_mut().read_json().unwrap();
    assert_eq!(essence(&over_http), essence(&answer));
    let mut streamed = json!({"stream": true});
    streamed.as_object_mut().unwrap().extend(body.as_object().unwrap().clone());
    let mut res = agent().post(format!("{base}/ask")).send_json(&streamed).unwrap();
    assert_eq!(res.headers()["content-type"], "text/event-stream");
    let events = res.body_mut().read_to_string().unwrap();
    let (pieces, last) = read_events(&events);
    assert_eq!(pieces, answer["answer"].as_str().unwrap(), "{events}");
    assert_eq!(essence(&last.expect("an answer event")), essence(&answer));
    let mut res = agent().post(format!("{base}/ask")).send_json(json!({"question": ""})).unwrap();
    assert_eq!(res.status(), 422, "{}", res.body_mut().read_to_string().unwrap());
    let _ = server.kill();
    let _ = server.wait();

    // MCP.
    let mut mcp = Mcp::start(&store);
    let over_mcp = mcp.tool("ask", &json!({"question": QUESTION, "extractive": true}));
    assert_eq!(essence(&over_mcp), essence(&answer));
}

/// The `token` events' text, and the `answer` event.
fn read_events(stream: &str) -> (String, Option<Value>) {
    let (mut text, mut answer) = (String::new(), None);
    for event in stream.split("\n\n") {
        let name = event.lines().find_map(|l| l.strip_prefix("event: "));
        let data: String = event.lines().filter_map(|l| l.strip_prefix("data: ")).collect();
        match name {
            Some("token") => {
                let piece: Value = serde_json::from_str(&data).unwrap();
                text.push_str(piece["text"].as_str().unwrap());
            }
            Some("answer") => answer = Some(serde_json::from_str(&data).unwrap()),
            Some(other) => panic!("unexpected event {other}: {data}"),
            None => {}
        }
    }
    (text, answer)
}

#[test]
fn a_chinese_question_is_answered_from_chinese_articles() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("zh");
    let docs = data_dir().join("zh/retrieval/cmrc2018/dev/docs.jsonl");
    let queries = data_dir().join("zh/retrieval/cmrc2018/dev/queries.jsonl");
    let first: Vec<String> =
        std::fs::read_to_string(&docs).unwrap().lines().take(5).map(str::to_string).collect();
    let few = dir.path().join("few.jsonl");
    std::fs::write(&few, first.join("\n")).unwrap();
    ok(&store, &["add", few.to_str().unwrap()]);
    let doc: Value = serde_json::from_str(&first[0]).unwrap();
    let q: Value = std::fs::read_to_string(&queries)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|q| q["doc_id"] == doc["doc_id"])
        .unwrap();
    let answer = json(&store, &["ask", q["question"].as_str().unwrap(), "--llm", "none"]);
    assert_eq!(answer["abstained"], false, "{answer}");
    let context: String = answer["passages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["text"].as_str().unwrap())
        .collect();
    let gold = q["answers"][0].as_str().or(q["answers"][0]["text"].as_str()).unwrap();
    assert!(context.contains(gold), "{gold} not in the context of {}", q["question"]);
    for s in answer["sentences"].as_array().unwrap() {
        assert_eq!(s["verified"], true);
        let c = &s["citations"][0];
        let text = doc_text(&first, c["doc_id"].as_str().unwrap());
        let (from, to) = (c["span"][0].as_u64().unwrap(), c["span"][1].as_u64().unwrap());
        assert_eq!(&text[from as usize..to as usize], c["quote"].as_str().unwrap());
    }
}

fn doc_text(lines: &[String], id: &str) -> String {
    lines
        .iter()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|d| d["doc_id"] == id)
        .map(|d| d["text"].as_str().unwrap().to_string())
        .unwrap()
}

#[test]
fn bad_questions_stores_and_models_are_clear_errors_that_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = corpus_store(dir.path());
    let before = snapshot(&store);
    let (code, err) = fails(&store, &["ask", "  ", "--llm", "none"]);
    assert_eq!(code, 2, "{err}");
    let (code, err) = fails(&store, &["ask", QUESTION, "--llm", "/no/such/model.gguf"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("no language model `/no/such/model.gguf`"), "{err}");
    // Nothing listens on port 9 (discard): the server is down.
    // (Without the generation cache, which keys answers by model name, not by server.)
    let (code, err) =
        fails(&store, &["--no-cache", "ask", QUESTION, "--llm", "http://127.0.0.1:9/v1#m"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("127.0.0.1:9"), "{err}");
    // A server that answers garbage: one connection, a 200 whose body is not JSON.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let garbage = format!("http://{}/v1#m", listener.local_addr().unwrap());
    let serving = std::thread::spawn(move || {
        use std::io::{Read, Write};
        let (mut conn, _) = listener.accept().unwrap();
        let mut request = vec![0_u8; 1 << 16];
        let _ = conn.read(&mut request);
        let body = "<html>not an API</html>";
        let _ = write!(
            conn,
            "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        );
    });
    let (code, err) = fails(&store, &["--no-cache", "ask", QUESTION, "--llm", &garbage]);
    serving.join().unwrap();
    assert_eq!(code, 1, "{err}");
    let (code, err) = fails(&store, &["ask", QUESTION, "--llm", "none", "--context-tokens", "0"]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(snapshot(&store), before, "nothing was written");

    let empty = dir.path().join("empty");
    let note = dir.path().join("note.txt");
    std::fs::write(&note, "Owls hunt at night.").unwrap();
    ok(&empty, &["add", note.to_str().unwrap()]);
    ok(&empty, &["rm", note.to_str().unwrap()]);
    let (code, err) = fails(&empty, &["ask", QUESTION, "--llm", "none"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("no documents"), "{err}");
}

#[test]
fn with_no_model_installed_the_default_answer_is_the_best_sentences_with_a_note() {
    let dir = tempfile::tempdir().unwrap();
    let store = corpus_store(dir.path());
    let models = dir.path().join("no-models");
    let ask = |args: &[&str]| {
        crate::ckeep(&store).env("CKEEP_MODELS", &models).args(args).output().unwrap()
    };
    let out = ask(&["--json", "ask", QUESTION]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(answer["answerer"], "extractive");
    let note = answer["note"].as_str().expect("a note on how to install a model");
    assert!(note.contains("ckeep model pull qwen2.5-coder-1.5b-instruct"), "{note}");
    // The same answer `--llm none` gives, which carries no note.
    let none: Value =
        serde_json::from_slice(&ask(&["--json", "ask", QUESTION, "--llm", "none"]).stdout).unwrap();
    assert_eq!(essence(&answer), essence(&none));
    assert!(none.get("note").is_none(), "{none}");
    // On the terminal, the note goes to stderr.
    let out = ask(&["ask", QUESTION]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no language model is installed"));
}

#[test]
fn eval_answers_scores_squad_2_with_abstention() {
    let dir = tempfile::tempdir().unwrap();
    let squad = data_dir().join("squad_dev");
    let report = json(
        &dir.path().join("unused"),
        &[
            "eval",
            "answers",
            "--docs",
            squad.join("longdoc-v2.0.docs.jsonl").to_str().unwrap(),
            "--queries",
            squad.join("longdoc-v2.0.queries.jsonl").to_str().unwrap(),
            "--llm",
            "none",
            "--limit",
            "20",
        ],
    );
    assert_eq!(
        (report["questions"].as_u64(), report["unanswerable"].as_u64()),
        (Some(20), Some(20))
    );
    let system = &report["systems"][0];
    assert_eq!(system["system"], "mode=bm25,level=chunk,k=10 · none");
    // BM25 finds the article of most questions; an extractive answer never abstains, and
    // every citation it makes is located.
    assert!(system["context_recall"].as_f64().unwrap() >= 0.8, "{system}");
    assert_eq!(system["abstention"].as_f64(), Some(0.0));
    assert_eq!(system["citations_located"].as_f64(), Some(1.0));
    let accuracy = system["accuracy"].as_f64().unwrap();
    assert!(accuracy > 0.0 && accuracy <= system["context_recall"].as_f64().unwrap());
}

#[test]
#[ignore = "real tier (scripts/test.sh): llama.cpp's server and the installed language model"]
fn answers_stream_from_a_real_chat_server_to_the_terminal_and_over_http() {
    let dir = tempfile::tempdir().unwrap();
    let store = corpus_store(dir.path());
    // The installed GGUF, as `ckeep model list` names it.
    let models = json(&store, &["model", "list"]);
    let qwen = models["models"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "qwen2.5-coder-0.5b-instruct")
        .expect("in the model table");
    let installed = std::path::Path::new(qwen["installed"].as_str().expect("installed"));
    let weights = installed.join("qwen2.5-coder-0.5b-instruct-q4_k_m.gguf");
    let server = ckeep_testkit::llama_server::LlamaServer::start(&weights, 4096);
    let spec = server.spec("qwen");

    // The CLI streams the model's words to stdout, then the checked passages.
    let out = crate::run(&store, &["--no-cache", "ask", QUESTION, "--llm", &spec]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let plain = String::from_utf8(out.stdout).unwrap();
    assert!(plain.contains("[1] ") && plain.contains("bm25.md"), "{plain}");

    // HTTP: token events as the server writes, then the answer they make up.
    let mut serving = ckeep(&store)
        .args(["--no-cache", "--json", "serve", "--addr", "127.0.0.1:0", "--llm", &spec])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let base = crate::listening(&mut serving);
    let body = json!({"question": QUESTION, "stream": true});
    let mut res = agent().post(format!("{base}/ask")).send_json(&body).unwrap();
    assert_eq!(res.status(), 200);
    let events = res.body_mut().read_to_string().unwrap();
    let (pieces, last) = read_events(&events);
    let answer = last.unwrap_or_else(|| panic!("no answer event: {events}"));
    assert_eq!(answer["answerer"], "qwen");
    assert!(events.matches("event: token").count() > 1, "{events}");
    assert!(answer["tokens"]["prompt"].as_u64().unwrap() > 100, "{answer}");
    if answer["abstained"] == false {
        // The answer is what was streamed, citations taken out.
        let kept: String = pieces.split_whitespace().collect();
        let first = answer["sentences"][0]["text"].as_str().unwrap();
        let first: String = first.split_whitespace().collect();
        assert!(kept.contains(first.trim_end_matches('.')), "{pieces:?} / {answer}");
    }
    // Every verified citation is the stored bytes at its span.
    for c in answer["sentences"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["citations"].as_array().unwrap())
    {
        if c["verified"] == true {
            let text = std::fs::read_to_string(c["doc_id"].as_str().unwrap()).unwrap();
            let (from, to) = (c["span"][0].as_u64().unwrap(), c["span"][1].as_u64().unwrap());
            assert!(text.get(from as usize..to as usize).is_some(), "{c}");
        }
    }
    let _ = serving.kill();
    let _ = serving.wait();
    drop(server);
}
