//! The README's tour, run as printed: every command of its shell block is executed in a scratch
//! directory laid out as the repository is (`examples/` and `testdata/` copied, the evaluation
//! data at `../shared/data`), each once as printed and once with `--json`. The `export PATH`
//! line must put the release build's directory first (the tests run the same binary, built for
//! testing). Only the server's address is changed (a free port instead of 8080). A renamed flag,
//! a file the tour names that does not exist, a command that stops working, or output that stops
//! parsing fails here.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use crate::{agent, data_dir, listening};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The commands of the README's "A tour" shell block, split into words, comments dropped.
fn tour() -> Vec<Vec<String>> {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let block = readme.split("## A tour").nth(1).expect("the README has a tour");
    let block = block.split("```sh\n").nth(1).unwrap().split("```").next().unwrap();
    block
        .lines()
        .map(|line| line.split(" # ").next().unwrap().trim())
        .filter(|line| !line.is_empty())
        .map(|line| shlex::split(line).expect("a shell line"))
        .collect()
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        let target = to.join(path.file_name().unwrap());
        if path.is_dir() {
            copy_dir(&path, &target);
        } else {
            std::fs::copy(&path, &target).unwrap();
        }
    }
}

/// The scratch directory: `work/` with the repository's `examples/` and `testdata/`, and
/// `shared/data` beside it.
fn scratch(dir: &Path) -> PathBuf {
    let work = dir.join("work");
    copy_dir(&repo().join("examples"), &work.join("examples"));
    copy_dir(&repo().join("testdata"), &work.join("testdata"));
    std::fs::create_dir_all(dir.join("shared")).unwrap();
    std::os::unix::fs::symlink(data_dir(), dir.join("shared/data")).unwrap();
    work
}

fn command(work: &Path, args: &[String]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ckeep"));
    cmd.args(args).current_dir(work).env_remove("CKEEP_STORE");
    cmd.env("CKEEP_CACHE", work.join("cache.sqlite"));
    cmd
}

/// Runs one tour command; its stdout, after checking it succeeded and ended its last line.
fn run(work: &Path, args: &[String]) -> String {
    let out = command(work, args).output().unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        out.status.success(),
        "ckeep {} failed: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.ends_with('\n'), "ckeep {}: {stdout:?}", args.join(" "));
    stdout
}

/// The server command, with a free port; answers a search, then is stopped.
fn serve(work: &Path, args: &[String]) {
    let mut args = args.to_vec();
    let addr = args.iter().position(|a| a == "--addr").expect("the tour gives an address");
    args[addr + 1] = "127.0.0.1:0".into();
    args.insert(0, "--json".into());
    let mut child =
        command(work, &args).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap();
    let base = listening(&mut child);
    let query = json!({"query": "why do chunks lose context", "mode": "hybrid", "level": "doc"});
    let mut res = agent().post(format!("{base}/search")).send_json(&query).unwrap();
    let answer: Value = res.body_mut().read_json().unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(res.status(), 200, "{answer}");
    assert!(!answer["results"].as_array().unwrap().is_empty(), "{answer}");
}

#[test]
#[ignore = "real tier (scripts/test.sh): all-MiniLM-L6-v2 and ../shared/data"]
fn the_readme_tour_runs_as_printed() {
    let dir = tempfile::tempdir().unwrap();
    let work = scratch(dir.path());
    let commands = tour();
    assert!(commands.len() >= 8, "{commands:?}");
    for words in &commands {
        if words[0] == "export" {
            assert_eq!(words[1], "PATH=$PWD/target/release:$PATH", "where scripts/demo.sh builds");
            continue;
        }
        assert_eq!(words[0], "ckeep", "{words:?}");
        let args = &words[1..];
        if args.contains(&"serve".to_string()) {
            serve(&work, args);
            continue;
        }
        let plain = run(&work, args);
        let mut with_json = vec!["--json".to_string()];
        with_json.extend_from_slice(args);
        let answer: Value = serde_json::from_str(&run(&work, &with_json))
            .unwrap_or_else(|e| panic!("ckeep {}: not JSON: {e}", with_json.join(" ")));
        if args.contains(&"search".to_string()) {
            let results = answer["results"].as_array().unwrap();
            assert!(!results.is_empty(), "{}: {answer}", args.join(" "));
            assert!(plain.contains(results[0]["doc_id"].as_str().unwrap()), "{plain}");
        }
        if args.contains(&"ask".to_string()) {
            let sentences = answer["sentences"].as_array().unwrap();
            assert!(!sentences.is_empty(), "{answer}");
            assert!(sentences.iter().all(|s| s["verified"] == true), "{answer}");
            assert!(plain.contains(answer["passages"][0]["doc_id"].as_str().unwrap()), "{plain}");
        }
    }
    // What the tour built: the default store from two kinds of input, the dense one embedded.
    let stats = |store: &str| {
        let args = ["--json", "--store", store, "stats"].map(String::from);
        serde_json::from_str::<Value>(&run(&work, &args)).unwrap()
    };
    let default = stats(".ckeep");
    assert!(default["stats"]["documents"].as_u64().unwrap() > 10, "{default}");
    let dense = stats(".ckeep-dense");
    assert_eq!(dense["manifest"]["model"], "all-MiniLM-L6-v2", "{dense}");
}
