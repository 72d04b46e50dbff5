//! CI's short fuzz run: every target on its committed seeds (`fuzz/seeds/TARGET`), then on
//! seeded mutations of them up to a fixed budget of inputs (`CKEEP_FUZZ_RUNS`, default 2,000 per
//! target). The mutations are libFuzzer's kinds (bit flips, special bytes, insertions,
//! deletions, repeated ranges that deepen nesting, truncation, splices of two seeds, the
//! formats' own tokens) drawn from a generator seeded by the target's name, so a run is the same
//! inputs every time and a finding reproduces. Coverage-guided campaigns run the same bodies
//! under cargo-fuzz (`scripts/fuzz.sh`).
//!
//! A panic is caught and the input saved under `target/fuzz-replay/TARGET/`; an abort (a stack
//! overflow) cannot be caught, so each input is written to `target/fuzz-replay/TARGET.current`
//! before it runs: after a crash, that file is the input.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use ckeep_fuzz::{TARGETS, Target};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Inputs per target when `CKEEP_FUZZ_RUNS` is not set.
const RUNS: usize = 2000;

/// Bytes the formats give meaning to: nesting, quoting, separators.
const SPECIAL: &[u8] = b"\0\xff()[]{}<>\"'\\/,:;=!&|~*?\n ";

/// Tokens of the formats under test, inserted whole (libFuzzer's dictionary).
const TOKENS: &[&str] = &[
    " and ",
    " or ",
    "not ",
    ">=",
    "!=",
    "~",
    "$or",
    "$and",
    "$not",
    "$in",
    "{1,2}",
    "k1=",
    "mode=",
    "<div>",
    "</div>",
    "<p>",
    "<!--",
    "<![CDATA[",
    "&amp;",
    "obj",
    "endobj",
    " 0 R",
    "/Parent",
    "/Kids",
    "/XObject",
    "/Do",
    "stream\n",
    "\"cells\":",
    "\"text\":",
    "PK\x03\x04",
    "中文",
    "\u{200b}",
    "\u{fffd}",
];

fn budget() -> usize {
    std::env::var("CKEEP_FUZZ_RUNS").ok().and_then(|v| v.parse().ok()).unwrap_or(RUNS)
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The committed seeds of `target`, in name order.
fn seeds(target: &str) -> Vec<Vec<u8>> {
    let dir = repo().join("fuzz/seeds").join(target);
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .collect();
    paths.sort();
    let seeds: Vec<Vec<u8>> = paths.iter().map(|p| std::fs::read(p).unwrap()).collect();
    assert!(!seeds.is_empty(), "{} has no seeds", dir.display());
    seeds
}

/// A random position in `0..=len`.
fn position(rng: &mut ChaCha8Rng, len: usize) -> usize {
    rng.random_range(0..=len)
}

/// A random range inside `0..len` (empty when `len` is 0).
fn range(rng: &mut ChaCha8Rng, len: usize) -> std::ops::Range<usize> {
    let from = position(rng, len);
    let to = (from + rng.random_range(0..=64)).min(len);
    from..to
}

/// One mutation of `input`, in place; `other` is another seed for splices.
fn mutate(rng: &mut ChaCha8Rng, input: &mut Vec<u8>, other: &[u8]) {
    let len = input.len();
    match rng.random_range(0..8) {
        0 if len > 0 => {
            let at = rng.random_range(0..len);
            input[at] ^= 1 << rng.random_range(0..8);
        }
        1 if len > 0 => {
            let at = rng.random_range(0..len);
            input[at] = SPECIAL[rng.random_range(0..SPECIAL.len())];
        }
        2 => {
            let at = position(rng, len);
            let bytes: Vec<u8> = (0..rng.random_range(1..=8)).map(|_| rng.random()).collect();
            input.splice(at..at, bytes);
        }
        3 => {
            input.drain(range(rng, len));
        }
        4 => {
            // A range repeated in place, many times: nesting and long runs.
            let copied = input[range(rng, len)].to_vec();
            let at = position(rng, len);
            let times = rng.random_range(1..=32);
            input.splice(at..at, copied.repeat(times));
        }
        5 => input.truncate(position(rng, len)),
        6 => {
            let keep = position(rng, len);
            let from = position(rng, other.len());
            input.truncate(keep);
            input.extend_from_slice(&other[from..]);
        }
        _ => {
            let at = position(rng, len);
            let token = TOKENS[rng.random_range(0..TOKENS.len())].as_bytes();
            input.splice(at..at, token.iter().copied());
        }
    }
}

/// Runs `target` on its seeds, then on mutants up to the budget; fails naming every input that
/// panicked (each saved for a regression test).
fn replay(target: &Target) {
    let seeds = seeds(target.name);
    let out = repo().join("target/fuzz-replay");
    std::fs::create_dir_all(out.join(target.name)).unwrap();
    let current = out.join(format!("{}.current", target.name));
    let name_seed = target
        .name
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325_u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3));
    let mut rng = ChaCha8Rng::seed_from_u64(name_seed);
    let mut findings = Vec::new();
    let mut last = seeds[0].clone();
    for i in 0..budget().max(seeds.len()) {
        let input = if let Some(seed) = seeds.get(i) {
            seed.clone()
        } else {
            // From a seed, or on from the last mutant (deeper changes), a few mutations stacked.
            let mut input = if rng.random_bool(0.5) {
                seeds[rng.random_range(0..seeds.len())].clone()
            } else {
                last.clone()
            };
            let other = &seeds[rng.random_range(0..seeds.len())];
            for _ in 0..rng.random_range(1..=4) {
                mutate(&mut rng, &mut input, other);
            }
            input.truncate(1 << 20);
            input
        };
        std::fs::write(&current, &input).unwrap();
        if catch_unwind(AssertUnwindSafe(|| (target.run)(&input))).is_err() {
            let saved = out.join(target.name).join(format!("input-{i}"));
            std::fs::write(&saved, &input).unwrap();
            findings.push(saved.display().to_string());
        }
        last = input;
    }
    std::fs::remove_file(&current).unwrap();
    assert!(findings.is_empty(), "{}: inputs that panicked:\n{}", target.name, findings.join("\n"));
}

/// One test per target, so each reports on its own and they run side by side.
macro_rules! replay_tests {
    ($($name:ident),* $(,)?) => {
        /// The targets with a test here, in order.
        const TESTED: &[&str] = &[$(stringify!($name)),*];
        $(
            #[test]
            fn $name() {
                let target = TARGETS.iter().find(|t| t.name == stringify!($name));
                replay(target.expect("a target of that name"));
            }
        )*
    };
}

replay_tests!(
    load_pdf,
    load_html,
    load_epub,
    load_docx,
    load_notebook,
    load_jsonl,
    filter_text,
    filter_json,
    strategy,
    search_fields,
);

#[test]
fn every_target_has_seeds_and_a_test_here() {
    let dirs: Vec<String> = std::fs::read_dir(repo().join("fuzz/seeds"))
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    for t in TARGETS {
        assert!(dirs.contains(&t.name.to_string()), "no seeds for {}", t.name);
    }
    assert_eq!(dirs.len(), TARGETS.len(), "seed folders without a target: {dirs:?}");
    let names: Vec<&str> = TARGETS.iter().map(|t| t.name).collect();
    assert_eq!(TESTED, names, "a replay test for each target, in order");
}
