//! The binary runs on an x86-64 CPU without AVX, AVX2, FMA or F16C: QEMU's user-mode emulator
//! with its Nehalem model (a 2008 CPU) runs `ckeep add` of a few short documents and a dense
//! and a BM25 search with the real MiniLM model, so every kernel on those paths must choose its
//! instruction set at run time. A build with a compile-time AVX2 baseline dies here with SIGILL
//! (exit 132). Real tier: needs `qemu-x86_64` (Debian's `qemu-user`, which scripts/test.sh
//! installs).
//!
//! The binary is this build's (same target features as a release build; dependencies at
//! opt-level 3), or the one `$CKEEP_PORTABLE_BIN` names: bench/portable.sh runs this test on
//! its release build.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// `qemu-x86_64 -cpu Nehalem PROGRAM ARGS…`.
fn nehalem(program: &Path, args: &[&str], store: &Path) -> Output {
    Command::new("qemu-x86_64")
        .args(["-cpu", "Nehalem"])
        .arg(program)
        .args(args)
        .env("CKEEP_CACHE", store.with_extension("cache.sqlite"))
        .env_remove("CKEEP_STORE")
        .output()
        .expect("qemu-x86_64 runs (apt-get install qemu-user)")
}

#[test]
#[cfg(target_arch = "x86_64")]
#[ignore = "real tier (scripts/test.sh): qemu-user and the installed MiniLM model"]
fn runs_on_a_cpu_without_avx2() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    // The emulated CPU really lacks AVX2: glibc's loader does not find x86-64-v3 support.
    let loader = nehalem(Path::new("/lib64/ld-linux-x86-64.so.2"), &["--help"], &store);
    let hwcaps = String::from_utf8_lossy(&loader.stdout).into_owned();
    assert!(
        hwcaps.contains("x86-64-v2 (supported") && !hwcaps.contains("x86-64-v3 (supported"),
        "{hwcaps}"
    );
    let corpus = small_corpus(dir.path());
    let ckeep = std::env::var_os("CKEEP_PORTABLE_BIN")
        .map_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_ckeep")), PathBuf::from);
    let s = store.to_str().unwrap();
    let run = |args: &[&str]| {
        let mut all = vec!["--store", s, "--quiet"];
        all.extend_from_slice(args);
        let out = nehalem(&ckeep, &all, &store);
        assert!(
            out.status.success(),
            "ckeep {args:?} under a CPU without AVX2: {:?} {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    run(&["add", corpus.to_str().unwrap(), "--model", "all-MiniLM-L6-v2"]);
    for mode in ["dense", "bm25"] {
        let found = run(&["--json", "search", "birds that hunt in the dark", "--mode", mode]);
        let hits: serde_json::Value = serde_json::from_str(&found).unwrap();
        assert_eq!(hits["results"][0]["doc_id"], "owls", "{mode}: {found}");
    }
}

/// A few documents of the shared fixture, each cut to its first paragraph, written under `dir`:
/// the emulated CPU runs the model about a hundred times slower than a real one (a tenth of a
/// second per token), and a few short chunks in English, Chinese and Japanese take every kernel
/// the whole fixture would (12 documents took 155 CPU-seconds to embed, the test's cost).
fn small_corpus(dir: &Path) -> PathBuf {
    let kept = ["owls", "larks", "bread", "河流", "桜"];
    let lines: Vec<String> = ckeep_testkit::corpus_values()
        .into_iter()
        .filter(|doc| kept.contains(&doc["id"].as_str().unwrap()))
        .map(|mut doc| {
            let first = doc["text"].as_str().unwrap().split("\n\n").next().unwrap().to_string();
            doc["text"] = first.into();
            doc.to_string()
        })
        .collect();
    assert_eq!(lines.len(), kept.len());
    let path = dir.join("corpus.jsonl");
    std::fs::write(&path, lines.join("\n")).unwrap();
    path
}
