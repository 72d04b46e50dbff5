//! Facts the documentation states that can be checked against the code: every strategy spec
//! the book, the READMEs and the HTTP description show parses with the engine's parser (a
//! client copying one must not get a 422), every environment variable the code reads is in the
//! reference's table, and every crate is in the source layout.

use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every file under `dir` whose name ends with one of `exts`.
fn files(dir: &Path, exts: &[&str], out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            if !name.starts_with('.') && name != "target" && name != "__pycache__" {
                files(&path, exts, out);
            }
        } else if exts.iter().any(|e| name.ends_with(e)) {
            out.push(path);
        }
    }
}

/// The pages users read.
fn pages() -> Vec<PathBuf> {
    let mut pages = vec![repo().join("README.md"), repo().join("python/README.md")];
    files(&repo().join("docs"), &[".md"], &mut pages);
    pages
}

/// Keys that only a strategy spec starts with.
const STRATEGY_KEYS: [&str; 9] =
    ["mode", "chunker", "level", "agg", "expand", "repr", "k1", "title_weight", "rerank"];

/// Strategy specs shown in `text`: code spans and `--strategy` arguments whose first key is a
/// strategy's, without placeholders (an upper-case word such as `W`, `K` or `NAME`) or an
/// ellipsis.
fn specs(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut candidates: Vec<&str> = text.split('`').skip(1).step_by(2).collect();
    for line in text.lines() {
        let mut words = line.split_whitespace();
        while let Some(w) = words.next() {
            if w == "--strategy"
                && let Some(spec) = words.next()
            {
                candidates.push(spec);
            }
        }
    }
    for c in candidates {
        let c = c.trim_matches(|ch| matches!(ch, '"' | '\'' | ',' | ';' | ')' | '\\'));
        let Some((key, _)) = c.split_once('=') else { continue };
        let placeholder = c
            .split(|ch: char| !ch.is_ascii_alphanumeric() && ch != '_')
            .any(|w| !w.is_empty() && w.chars().all(|ch| ch.is_ascii_uppercase()));
        if STRATEGY_KEYS.contains(&key)
            && !c.ends_with('=')
            && !placeholder
            && !c.contains(' ')
            && !c.contains('…')
            && !c.contains("...")
            && !c.contains('$')
        {
            found.push(c.to_string());
        }
    }
    found
}

/// Fusion modes named in `text` (`hybrid:rrf`, `hybrid:linear=W`, …) as full specs, a
/// placeholder weight given a value: a list of modes is where a wrong separator hides.
fn modes(text: &str) -> Vec<String> {
    text.split(|ch: char| ch.is_whitespace() || matches!(ch, '`' | ',' | '"' | '(' | ')' | '|'))
        .filter(|w| w.starts_with("hybrid:"))
        .map(|w| {
            let w = w.trim_end_matches(['.', ';', ':']);
            let w = match (w.strip_suffix('W'), w.strip_suffix('K')) {
                (Some(head), _) => format!("{head}0.5"),
                (_, Some(head)) => format!("{head}60"),
                _ => w.to_string(),
            };
            format!("mode={w}")
        })
        .collect()
}

#[test]
fn every_strategy_the_docs_show_parses() {
    let mut checked = 0;
    let mut bad = Vec::new();
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        for spec in specs(&text).into_iter().chain(modes(&text)) {
            let expanded = match ckeep_eval::tune::expand_grid(&spec) {
                Ok(list) => list,
                Err(e) => {
                    bad.push(format!("{}: `{spec}`: {e}", page.display()));
                    continue;
                }
            };
            for one in expanded {
                checked += 1;
                if let Err(e) = one.parse::<ckeep_engine::Strategy>() {
                    bad.push(format!("{}: `{spec}`: {e}", page.display()));
                }
            }
        }
    }
    assert!(bad.is_empty(), "strategy specs in the docs that do not parse:\n{}", bad.join("\n"));
    assert!(checked > 80, "only {checked} specs found: is the extraction still right?");
}

#[test]
fn a_placeholder_in_a_spec_is_skipped_and_a_wrong_separator_is_caught() {
    assert!(specs("`mode=hybrid:linear=W`").is_empty());
    let caught = specs("`mode=hybrid:linear:0.5` and --strategy chunker=paragraphs,mode=bm25");
    assert_eq!(caught, ["mode=hybrid:linear:0.5", "chunker=paragraphs,mode=bm25"]);
    assert!(caught[0].parse::<ckeep_engine::Strategy>().is_err());
    let listed = modes("bm25, dense, hybrid:rrf, hybrid:linear:W");
    assert_eq!(listed, ["mode=hybrid:rrf", "mode=hybrid:linear:0.5"]);
    assert!(listed[1].parse::<ckeep_engine::Strategy>().is_err());
    assert!("mode=hybrid:linear=0.5".parse::<ckeep_engine::Strategy>().is_ok());
}

#[test]
fn every_environment_variable_the_code_reads_is_in_the_reference() {
    let mut sources = Vec::new();
    for dir in ["crates", "python", "scripts", "bench", "tests", ".ci"] {
        files(&repo().join(dir), &[".rs", ".py", ".sh", "run"], &mut sources);
    }
    let reference = std::fs::read_to_string(repo().join("docs/reference/cli.md")).unwrap();
    let mut missing = std::collections::BTreeSet::new();
    for source in sources {
        let text = std::fs::read_to_string(&source).unwrap_or_default();
        for (at, _) in text.match_indices("CKEEP_") {
            let name: String = text[at..]
                .chars()
                .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_')
                .collect();
            let name = name.trim_end_matches('_');
            if name.len() > "CKEEP_".len() && !reference.contains(&format!("`{name}`")) {
                missing.insert(format!("{name} ({})", source.display()));
            }
        }
    }
    assert!(missing.is_empty(), "read by the code, not in docs/reference/cli.md: {missing:?}");
}

#[test]
fn every_crate_is_in_the_source_layout() {
    let layout = std::fs::read_to_string(repo().join("docs/reference/layout.md")).unwrap();
    for entry in std::fs::read_dir(repo().join("crates")).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        assert!(layout.contains(&format!("crates/{name} ")), "crates/{name} is not in layout.md");
    }
}
