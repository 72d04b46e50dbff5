//! llama.cpp's own OpenAI-compatible server as a test fixture: the real process that the
//! `URL#MODEL` paths are tested against (the chat client in ckeep-llm, `ckeep ask` and
//! `POST /ask` in the CLI's tests). `scripts/test.sh prepare` builds it.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running `llama-server`, stopped when dropped.
#[derive(Debug)]
pub struct LlamaServer {
    child: Child,
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    log: PathBuf,
}

impl Drop for LlamaServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.log);
    }
}

/// The binary: `$CKEEP_LLAMA_SERVER`, else where `scripts/test.sh prepare` builds it.
pub fn binary() -> PathBuf {
    std::env::var_os("CKEEP_LLAMA_SERVER").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/llama-server/bin/llama-server"),
        PathBuf::from,
    )
}

impl LlamaServer {
    /// Starts the server on a free port with `weights` (a GGUF file) and a context of `context`
    /// tokens, two threads, one request at a time, and waits until it has loaded the model.
    pub fn start(weights: &Path, context: usize) -> Self {
        let binary = binary();
        assert!(
            binary.is_file(),
            "{} not found: scripts/test.sh prepare builds it (or set CKEEP_LLAMA_SERVER)",
            binary.display()
        );
        assert!(weights.is_file(), "{} not installed", weights.display());
        // A free port: bound and released, then given to the server.
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let log = std::env::temp_dir().join(format!("ckeep-llama-server-{port}.log"));
        let child = Command::new(&binary)
            .args(["--host", "127.0.0.1", "--port", &port.to_string(), "--threads", "2"])
            .args(["--ctx-size", &context.to_string(), "--parallel", "1", "--no-webui"])
            .arg("--model")
            .arg(weights)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap_or_else(|e| panic!("{}: {e}", binary.display()));
        let mut server = Self { child, url: format!("http://127.0.0.1:{port}"), log };
        server.wait_until_healthy(port);
        server
    }

    /// The chat spec ckeep takes for it (`URL/v1#MODEL`; the server serves one model whatever
    /// it is called).
    pub fn spec(&self, model: &str) -> String {
        format!("{}/v1#{model}", self.url)
    }

    /// What the server has logged.
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Waits until `/health` answers 200 (the model is loaded), or the server has exited.
    fn wait_until_healthy(&mut self, port: u16) {
        let deadline = Instant::now() + Duration::from_mins(5);
        loop {
            if health(port) == Some(200) {
                return;
            }
            if let Some(status) = self.child.try_wait().unwrap() {
                panic!("llama-server exited ({status}):\n{}", self.log_text());
            }
            assert!(Instant::now() < deadline, "llama-server not ready:\n{}", self.log_text());
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// The status of `GET /health`, if the server answers at all.
fn health(port: u16) -> Option<u16> {
    let mut conn = TcpStream::connect(("127.0.0.1", port)).ok()?;
    conn.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    conn.write_all(b"GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
    let mut head = [0_u8; 12];
    conn.read_exact(&mut head).ok()?;
    std::str::from_utf8(&head[9..12]).ok()?.parse().ok()
}
