//! The real Qwen2.5-Coder 0.5B instruct GGUF (installed by `ckeep model pull
//! qwen2.5-coder-0.5b-instruct`, as `scripts/test.sh` does) run by llama.cpp: the tokenizer
//! round-trips text and keeps the chat markers whole; greedy generation answers a question it
//! knows, the same way twice, through the cache the second time; and the generation service's
//! parts hold: streamed pieces make the answer, prompts run side by side answer as they do one by
//! one (in English and Chinese), a one-line answer stops at its line, a prompt too long for the
//! model is refused, and a cancelled generation stops.

mod common;

use ckeep_llm::{CachedGenerator, Error, Generator, LlamaGguf, Prompt};
use common::{StopAfter, ask};

fn model() -> LlamaGguf {
    let model = ckeep_models::known("qwen2.5-coder-0.5b-instruct").expect("in the model table");
    LlamaGguf::load(&ckeep_models::installed_weights(model))
        .expect("ckeep model pull qwen2.5-coder-0.5b-instruct")
}

#[test]
#[ignore = "real tier (scripts/test.sh): the installed language model"]
fn qwen_tokenizes_and_answers() {
    let model = model();
    // "<|im_start|>", "user", "\n", "<|im_end|>": markers are one token each.
    assert_eq!(model.count_tokens("<|im_start|>user\n<|im_end|>"), 4);
    for text in ["Héllo, wörld! 1234 — naïve café\n\n  indented", "Łódź 東京 🚀 x=y+1;"]
    {
        assert_eq!(model.decode(&model.encode(text)), text);
    }
    let prompt = Prompt {
        system: "You answer in one word.".into(),
        user: "What is the capital of France?".into(),
        max_tokens: 8,
        one_line: false,
    };
    let dir = tempfile::tempdir().unwrap();
    let cached = CachedGenerator::open(Box::new(model), &dir.path().join("g.sqlite")).unwrap();
    let first = cached.generate(&prompt).unwrap();
    assert!(first.text.contains("Paris"), "{:?}", first.text);
    assert!(!first.cached && first.completion_tokens > 0 && first.completion_tokens <= 8);
    let again = cached.generate(&prompt).unwrap();
    assert!(again.cached);
    assert_eq!(again.text, first.text);
    let err = LlamaGguf::load(&dir.path().join("g.sqlite")).unwrap_err().to_string();
    assert!(err.contains("not a GGUF file"), "{err}");
}

#[test]
#[ignore = "real tier (scripts/test.sh): the installed language model"]
fn streams_batches_stops_at_a_line_refuses_and_cancels() {
    let model = model();
    // Streamed pieces add up to the answer, and the answer is the one without streaming.
    let prompt = ask("Name three colours of the rainbow.", 24, false);
    let mut pieces = Vec::new();
    let streamed = model.stream(&prompt, &mut |p: &str| pieces.push(p.to_string())).unwrap();
    assert!(pieces.len() > 3, "{pieces:?}");
    assert_eq!(pieces.concat(), streamed.text);
    assert_eq!(model.generate(&prompt).unwrap().text, streamed.text);

    // Side by side, each answer is the one it gets alone (English and Chinese).
    let prompts: Vec<Prompt> = [
        "What is the capital of France?",
        "What is the capital of Japan?",
        "法国的首都是哪里？",
        "Write a haiku about the sea.",
    ]
    .iter()
    .map(|q| ask(q, 20, false))
    .collect();
    let together: Vec<String> =
        model.generate_many(&prompts).into_iter().map(|g| g.unwrap().text).collect();
    let alone: Vec<String> = prompts.iter().map(|p| model.generate(p).unwrap().text).collect();
    assert_eq!(together, alone);
    assert!(together[2].contains("巴黎"), "{together:?}");

    // A one-line answer ends at its first line; the same prompt unbounded goes on.
    let lines = ask("List four fruits, one per line, nothing else.", 40, false);
    let many = model.generate(&lines).unwrap();
    assert!(many.text.trim().lines().count() > 1, "{:?}", many.text);
    let one = model.generate(&Prompt { one_line: true, ..lines }).unwrap();
    assert!(!one.text.trim().is_empty() && !one.text.trim().contains('\n'), "{:?}", one.text);
    assert!(many.text.starts_with(&one.text), "{:?} / {:?}", one.text, many.text);
    assert!(one.completion_tokens < many.completion_tokens);

    // Too long for the model: refused before any work, as the user's error.
    let limit = model.context_length();
    let long = ask(&"word ".repeat(limit), 8, false);
    let err = model.generate(&long).unwrap_err();
    assert!(matches!(err, Error::TooLong { .. }) && err.is_user_error(), "{err}");

    // Cancelled after the third piece: stops with Cancelled, and the model still answers after.
    let err = model.stream(&ask("Count from one to fifty.", 200, false), &mut StopAfter(3));
    assert!(matches!(err, Err(Error::Cancelled)), "{err:?}");
    assert_eq!(model.generate(&prompt).unwrap().text, streamed.text);
}
