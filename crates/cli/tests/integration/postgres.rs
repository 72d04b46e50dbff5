//! `ckeep --store postgres://…`: every command on a real PostgreSQL 18 + pgvector (started by
//! `scripts/pg.sh`), and clear errors for a database without a store or a server that cannot
//! be reached.

use std::path::Path;
use std::process::Output;

use ckeep_store::test_postgres::fresh_database;

fn ckeep(url: &str, cache: &Path, args: &[&str]) -> Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_ckeep"))
        .arg("--store")
        .arg(url)
        .args(args)
        .env_remove("CKEEP_STORE")
        .env("CKEEP_CACHE", cache)
        .output()
        .expect("ckeep runs")
}

fn ok(url: &str, cache: &Path, args: &[&str]) -> String {
    let out = ckeep(url, cache, args);
    assert!(out.status.success(), "ckeep {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

fn json(url: &str, cache: &Path, args: &[&str]) -> serde_json::Value {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    serde_json::from_str(&ok(url, cache, &all)).unwrap()
}

#[test]
#[ignore = "real tier (scripts/test.sh): PostgreSQL and installed models"]
fn every_command_works_on_a_postgres_store() {
    let url = fresh_database("cli");
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache.sqlite");
    let cats = dir.path().join("cats.md");
    let lava = dir.path().join("lava.md");
    std::fs::write(&cats, "# Cats\n\nCats purr when they are content.\n\nThey sleep all day.\n")
        .unwrap();
    std::fs::write(&lava, "# Volcanoes\n\nLava flows from the erupting volcano.\n").unwrap();
    let (cats, lava) = (cats.to_str().unwrap(), lava.to_str().unwrap());
    let added = json(&url, &cache, &["add", "--model", "potion-base-8M", cats, lava]);
    assert_eq!(added["added"], 2, "{added}");
    let found = json(&url, &cache, &["search", "--mode", "hybrid", "kittens purring"]);
    assert_eq!(found["results"][0]["doc_id"], cats, "{found}");
    let found = json(&url, &cache, &["search", "--mode", "dense", "--exact", "molten rock"]);
    assert_eq!(found["results"][0]["doc_id"], lava, "{found}");
    assert_eq!(ok(&url, &cache, &["show", lava]), std::fs::read_to_string(lava).unwrap());
    let stats = json(&url, &cache, &["stats"]);
    assert_eq!(stats["stats"]["documents"], 2);
    assert_eq!(stats["store"], url.as_str());
    ok(&url, &cache, &["check"]);
    assert_eq!(json(&url, &cache, &["rm", cats])["removed"], 1);
    assert_eq!(json(&url, &cache, &["stats"])["stats"]["documents"], 1);
    // Adding again without --model uses the store's model.
    let again = json(&url, &cache, &["add", cats]);
    assert_eq!(again["model"], "potion-base-8M", "{again}");
}

#[test]
#[ignore = "real tier (scripts/test.sh): PostgreSQL and installed models"]
fn missing_stores_and_unreachable_servers_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache.sqlite");
    let empty = fresh_database("empty");
    let out = ckeep(&empty, &cache, &["stats"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "no store there is the user's error: {err}");
    assert!(err.contains("no store at postgres://") && err.contains("ckeep add"), "{err}");
    let out = ckeep("postgres://ckeep:secret@127.0.0.1:1/db", &cache, &["search", "x"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "an unreachable server is not: {err}");
    assert!(err.contains("PostgreSQL: error connecting to server"), "{err}");
    assert!(!err.contains("secret"), "{err}");
}

#[test]
#[ignore = "real tier (scripts/test.sh): PostgreSQL and installed models"]
fn serve_on_a_postgres_store_answers_and_stops_cleanly() {
    let url = fresh_database("serve");
    let dir = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_ckeep"))
        .args(["--store", &url, "--json", "serve", "--addr", "127.0.0.1:0", "--readers", "4"])
        .env_remove("CKEEP_STORE")
        .env("CKEEP_CACHE", dir.path().join("cache.sqlite"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let base = crate::listening(&mut child);
    let agent: ureq::Agent =
        ureq::Agent::config_builder().http_status_as_error(false).build().into();
    let doc = serde_json::json!({"id": "n1", "text": "Owls hunt at night. Larks sing at dawn."});
    let res = agent.post(format!("{base}/documents")).send_json(&doc).unwrap();
    assert_eq!(res.status(), 200);
    let mut res = agent
        .post(format!("{base}/search"))
        .send_json(serde_json::json!({"query": "owls at night"}))
        .unwrap();
    let found: serde_json::Value = res.body_mut().read_json().unwrap();
    assert_eq!(found["results"][0]["doc_id"], "n1", "{found}");
    // SIGTERM: connections are closed outside the async runtime, and the exit is clean.
    let killed =
        std::process::Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
    assert!(killed.unwrap().success());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "exit status {}: {stderr}", out.status);
    assert!(!stderr.contains("panicked"), "{stderr}");
    let cache = dir.path().join("cache.sqlite");
    assert_eq!(
        json(&url, &cache, &["show", "n1"])["text"],
        "Owls hunt at night. Larks sing at dawn."
    );
}
