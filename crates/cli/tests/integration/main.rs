//! End-to-end tests of the `ckeep` binary on real data, as one test binary.
#![allow(clippy::missing_panics_doc)] // test helpers panic on failure by design

mod adapt;
mod ask;
mod bad_input;
mod chinese;
mod commands;
mod docs_facts;
mod documents;
mod durability;
mod errors;
mod eval;
mod expansion;
mod models;
mod outputs;
mod own_docs;
mod portable;
mod postgres;
mod real_data;
mod serve;
mod similarity;
mod slips;
mod sync;
mod tour;
mod watch;

use std::path::Path;
use std::process::{Command, Output};

pub use ckeep_testkit::data_dir;

/// A `ckeep` command on `store`.
pub fn ckeep(store: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ckeep"));
    cmd.arg("--store").arg(store).env_remove("CKEEP_STORE");
    // Each store gets its own embedding cache, so tests see exactly what they embedded.
    cmd.env("CKEEP_CACHE", store.with_extension("cache.sqlite"));
    cmd
}

/// Runs `ckeep --store STORE ARGS…` and returns its output.
pub fn run(store: &Path, args: &[&str]) -> Output {
    ckeep(store).args(args).output().expect("ckeep runs")
}

/// Runs and asserts exit code 0; returns stdout.
pub fn ok(store: &Path, args: &[&str]) -> String {
    let out = run(store, args);
    assert!(
        out.status.success(),
        "ckeep {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8 stdout")
}

/// Runs with `--json` and parses stdout.
pub fn json(store: &Path, args: &[&str]) -> serde_json::Value {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    serde_json::from_str(&ok(store, &all)).expect("one JSON document on stdout")
}

/// Exit code and stderr of a run expected to fail.
pub fn fails(store: &Path, args: &[&str]) -> (i32, String) {
    let out = run(store, args);
    assert!(!out.status.success(), "ckeep {args:?} should fail");
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// The store's document count and `check` verdict, through the CLI.
pub fn snapshot(store: &Path) -> (u64, u64, bool) {
    let stats = json(store, &["stats"]);
    let check = run(store, &["check"]);
    (
        stats["stats"]["documents"].as_u64().unwrap(),
        stats["stats"]["chunks"].as_u64().unwrap(),
        check.status.success(),
    )
}

/// `ckeep --json serve` on `store` at a free port (stderr dropped), and its base URL.
pub fn serve(store: &Path) -> (std::process::Child, String) {
    serve_with(store, &[])
}

/// [`serve`] with more of `serve`'s arguments.
pub fn serve_with(store: &Path, args: &[&str]) -> (std::process::Child, String) {
    let mut server = ckeep(store)
        .args(["--json", "serve", "--addr", "127.0.0.1:0"])
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let base = listening(&mut server);
    (server, base)
}

/// The base URL a `ckeep --json serve` child prints on its first line (its stdout is taken).
pub fn listening(child: &mut std::process::Child) -> String {
    use std::io::BufRead;
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().expect("stdout piped"))
        .read_line(&mut line)
        .unwrap();
    let started: serde_json::Value = serde_json::from_str(&line).expect("the listening line");
    started["listening"].as_str().expect("a URL").to_string()
}

/// An HTTP client for a test server: statuses are answers, not errors; a minute at most.
pub fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(std::time::Duration::from_mins(1)))
        .build()
        .into()
}
