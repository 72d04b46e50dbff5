//! The documentation's commands, checked against the code: every `ckeep` command shown in a shell
//! block of the README, the book (`docs/`) or the Python package's README parses with today's
//! flags, and every script they run exists. A renamed flag, subcommand or script fails here, not
//! in a reader's terminal.

use std::path::{Path, PathBuf};

use clap::Parser;

use crate::cli::Cli;

/// The repository's root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The documents whose examples are checked.
fn pages() -> Vec<PathBuf> {
    let mut pages = vec![root().join("README.md"), root().join("python/README.md")];
    let mut dirs = vec![root().join("docs")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                pages.push(path);
            }
        }
    }
    pages.sort();
    pages
}

/// The commands of a page's shell blocks, with their line numbers: continuation lines joined,
/// comments dropped, each cut at the first pipe, redirection or `&&`.
fn commands(text: &str) -> Vec<(usize, Vec<String>)> {
    let mut out = Vec::new();
    let (mut shell, mut console, mut pending, mut start) = (false, false, String::new(), 0);
    for (n, line) in text.lines().enumerate() {
        let fence = line.trim_start().strip_prefix("```");
        match fence {
            Some(lang) if !shell => {
                shell = matches!(lang.trim(), "sh" | "bash" | "console");
                console = lang.trim() == "console";
            }
            Some(_) => shell = false,
            // A console block's other lines are the output shown (scripts/check_outputs.py).
            None if console && pending.is_empty() && !line.starts_with("$ ") => {}
            None if shell => {
                if pending.is_empty() {
                    start = n + 1;
                }
                let line = line.trim().trim_start_matches("$ ");
                if let Some(part) = line.strip_suffix('\\') {
                    pending.push_str(part);
                } else {
                    pending.push_str(line);
                    if let Some(words) = shlex::split(&without_comment(&pending)) {
                        out.push((start, cut(words)));
                    }
                    pending.clear();
                }
            }
            None => {}
        }
    }
    out
}

/// `line` without a trailing `# comment` (a `#` after a space, outside quotes).
fn without_comment(line: &str) -> String {
    let (mut quote, mut prev) = (None, ' ');
    for (i, c) in line.char_indices() {
        match (quote, c) {
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), _) if c == q => quote = None,
            (None, '#') if prev.is_whitespace() => return line[..i].to_string(),
            _ => {}
        }
        prev = c;
    }
    line.to_string()
}

/// The words up to the first pipe, redirection, `&&` or `;`, without leading `VAR=value`s.
fn cut(words: Vec<String>) -> Vec<String> {
    let stop =
        |w: &String| matches!(w.as_str(), "|" | "||" | "&&" | ";" | "&") || w.starts_with('>');
    let words: Vec<String> = words.into_iter().take_while(|w| !stop(w)).collect();
    let skip = words.iter().take_while(|w| w.contains('=') && !w.starts_with('-')).count();
    words[skip..].to_vec()
}

#[test]
fn every_documented_command_parses_and_every_script_exists() {
    let (mut checked, mut failures) = (0, Vec::new());
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        let name = page.strip_prefix(root()).unwrap_or(&page).display().to_string();
        for (line, words) in commands(&text) {
            let Some(first) = words.first() else { continue };
            if first == "ckeep" || first.ends_with("/ckeep") {
                checked += 1;
                if let Err(e) = Cli::try_parse_from(&words)
                    && !matches!(
                        e.kind(),
                        clap::error::ErrorKind::DisplayHelp
                            | clap::error::ErrorKind::DisplayVersion
                    )
                {
                    let e = e.to_string();
                    let said: Vec<&str> =
                        e.lines().map(str::trim).filter(|l| !l.is_empty()).take(2).collect();
                    failures.push(format!(
                        "{name}:{line}: {}: {}",
                        words.join(" "),
                        said.join(" ")
                    ));
                }
            } else if (first.starts_with("scripts/") || first.starts_with("bench/"))
                && !root().join(first).is_file()
            {
                failures.push(format!("{name}:{line}: {first} does not exist"));
            }
        }
    }
    assert!(checked > 50, "only {checked} documented commands found: is the extraction broken?");
    assert!(
        failures.is_empty(),
        "{} of {checked} documented commands fail:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn commands_are_read_as_a_shell_reads_them() {
    let page = "text\n```sh\nckeep search \"a # b\" -k 3   # a comment\nckeep add x \\\n  --json | head\nX=1 ckeep stats > out\n```\n```python\nckeep nothing\n```\n";
    let got = commands(page);
    let words = |s: &[&str]| s.iter().map(|w| (*w).to_string()).collect::<Vec<_>>();
    assert_eq!(
        got,
        [
            (3, words(&["ckeep", "search", "a # b", "-k", "3"])),
            (4, words(&["ckeep", "add", "x", "--json"])),
            (6, words(&["ckeep", "stats"])),
        ]
    );
}

/// The reference's strategy and chunker tables are the help texts themselves.
#[test]
fn the_strategy_reference_is_the_help_text() {
    let page = std::fs::read_to_string(root().join("docs/reference/strategies.md")).unwrap();
    for (what, help) in [
        ("Strategy::HELP", ckeep_engine::Strategy::HELP),
        ("ChunkerSpec::HELP", ckeep_text::ChunkerSpec::HELP),
    ] {
        assert!(
            page.contains(help),
            "docs/reference/strategies.md no longer holds {what}; paste the new text in"
        );
    }
}

#[test]
fn the_error_table_is_the_engines() {
    use ckeep_engine::{ErrorCode, McpAnswer};
    let page = std::fs::read_to_string(root().join("docs/reference/cli.md")).unwrap();
    let section = page.split("\n## Errors\n").nth(1).expect("an Errors section");
    let section = section.split("\n## ").next().unwrap_or_default();
    let documented: Vec<&str> = section.lines().filter(|l| l.starts_with("| `")).collect();
    let expected: Vec<String> = ErrorCode::ALL
        .iter()
        .map(|c| {
            let r = c.rendering();
            let mcp = match r.mcp {
                McpAnswer::ToolError => "tool error".to_string(),
                McpAnswer::Protocol(n) => format!("JSON-RPC {n}"),
            };
            format!("| `{c}` | {} | {} | {mcp} | `{}` |", r.exit, r.http, r.python)
        })
        .collect();
    assert_eq!(documented, expected, "docs/reference/cli.md's error table");
}
