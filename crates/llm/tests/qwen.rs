//! The real Qwen2.5-Coder 0.5B instruct GGUF (installed by `ckeep model pull
//! qwen2.5-coder-0.5b-instruct`, as `scripts/test.sh` does): the tokenizer rebuilt from the GGUF
//! metadata round-trips text and keeps the chat markers whole, and greedy generation answers a
//! question it knows, the same way twice, through the cache the second time.

use ckeep_llm::{CachedGenerator, Generator, Prompt, QwenGguf};

fn model_path() -> std::path::PathBuf {
    let model = ckeep_models::known("qwen2.5-coder-0.5b-instruct").expect("in the model table");
    ckeep_models::installed_weights(model)
}

#[test]
#[ignore = "real tier (scripts/test.sh): the installed language model"]
fn qwen_tokenizes_and_answers() {
    let model =
        QwenGguf::load(&model_path()).expect("ckeep model pull qwen2.5-coder-0.5b-instruct");
    // "<|im_start|>", "user", "\n", "<|im_end|>": markers are one token each.
    assert_eq!(model.count_tokens("<|im_start|>user\n<|im_end|>").unwrap(), 4);
    for text in ["Héllo, wörld! 1234 — naïve café\n\n  indented", "Łódź 東京 🚀 x=y+1;"]
    {
        assert_eq!(model.decode(&model.encode(text).unwrap()).unwrap(), text);
    }
    let prompt = Prompt {
        system: "You answer in one word.".into(),
        user: "What is the capital of France?".into(),
        max_tokens: 8,
    };
    let dir = tempfile::tempdir().unwrap();
    let cached = CachedGenerator::open(Box::new(model), &dir.path().join("g.sqlite")).unwrap();
    let first = cached.generate(&prompt).unwrap();
    assert!(first.text.contains("Paris"), "{:?}", first.text);
    assert!(!first.cached && first.completion_tokens > 0 && first.completion_tokens <= 8);
    let again = cached.generate(&prompt).unwrap();
    assert!(again.cached);
    assert_eq!(again.text, first.text);
    let err = QwenGguf::load(&dir.path().join("g.sqlite")).unwrap_err().to_string();
    assert!(err.contains("not a GGUF file"), "{err}");
}
