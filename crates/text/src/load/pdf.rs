//! PDF to readable text with a page map, on pdf-extract (pure Rust, over lopdf).
//!
//! The rule, page by page:
//! 1. The page's text as pdf-extract lays it out; runs of spaces (justified lines) become one,
//!    and typographic ligatures (`ﬁ`, `ﬀ`, … U+FB00–U+FB06) become their letters, so `off`
//!    finds `oﬀ`.
//! 2. Running headers and footers are dropped: a line among the first two or last two of a
//!    page that recurs, numbers aside (so `Page 3 of 40` matches `Page 14 of 40`), at the same
//!    end of three pages within twelve consecutive ones (a chapter's running title on every
//!    other page counts, a line that happens to repeat across a book does not).
//! 3. Lines are joined into paragraphs (blank lines separate them): a hyphen that ends a line
//!    between two lower-case letters is a break and goes (`extrac-` + `tion`); a line break
//!    between two Chinese or Japanese characters disappears; any other becomes a space.
//! 4. Pages are separated by a blank line and mapped to their numbers, so every span knows its
//!    page(s).
//!
//! A PDF whose pages hold no text (a scan) is an error that says so, as is one that needs a
//! password, a truncated or malformed file, and one the parser fails on.

use std::collections::HashMap;

use super::blocks::{Blocks, collapse_whitespace, unspaced};

/// Reads a PDF's bytes into its pages' text.
pub(crate) fn document(bytes: &[u8]) -> Result<Blocks, String> {
    // pdf-extract panics on some constructs it does not support; that is the file's problem,
    // reported as such, never a crash.
    let pages = quietly(|| pages(bytes)).map_err(|why| {
        format!("the PDF parser failed on this file ({why}): an unsupported or damaged PDF")
    })??;
    if pages.iter().all(|p| p.trim().is_empty()) {
        return Err(format!(
            "no text layer on any of its {} page(s) (a scanned document?); run OCR on it first",
            pages.len()
        ));
    }
    let pages = drop_running_lines(pages.iter().map(|p| tidy_lines(p)).collect());
    let mut blocks = Blocks::default();
    for (i, lines) in pages.iter().enumerate() {
        let page = u32::try_from(i + 1).unwrap_or(u32::MAX);
        blocks.push_page(&paragraphs(lines), page);
    }
    Ok(blocks)
}

/// Each page's text as pdf-extract lays it out, once the drawing is known to be bounded
/// (`pdf_forms`): the file is parsed once, then read page by page.
fn pages(bytes: &[u8]) -> Result<Vec<String>, String> {
    let unreadable = |e: &dyn std::fmt::Display| {
        let message = e.to_string();
        if message.contains("ecrypt") || message.contains("assword") {
            "password-protected (encrypted) PDF".to_string()
        } else {
            format!("not a readable PDF: {message}")
        }
    };
    let mut doc = pdf_extract::Document::load_mem(bytes).map_err(|e| unreadable(&e))?;
    if doc.is_encrypted() {
        // As pdf-extract does: an empty user password opens many "protected" files.
        doc.decrypt("").map_err(|e| unreadable(&e))?;
    }
    super::pdf_forms::check(&doc)?;
    let mut pages = Vec::new();
    // As pdf-extract's own reader: pages up to the first it cannot read.
    for number in 1..=u32::try_from(doc.get_pages().len()).unwrap_or(u32::MAX) {
        let mut text = String::new();
        let read = {
            let mut output = pdf_extract::PlainTextOutput::new(&mut text);
            pdf_extract::output_doc_page(&doc, &mut output, number)
        };
        if read.is_err() {
            break;
        }
        pages.push(text);
    }
    Ok(pages)
}

thread_local! {
    /// Whether this thread is inside [`quietly`].
    static QUIET: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f`, turning a panic into its message, without the panic report on stderr: a panic
/// hook installed once stays silent on a thread inside this call and hands every other panic
/// to the hook that was there before.
fn quietly<T>(f: impl FnOnce() -> T + std::panic::UnwindSafe) -> Result<T, String> {
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !QUIET.with(std::cell::Cell::get) {
                previous(info);
            }
        }));
    });
    QUIET.with(|q| q.set(true));
    let result = std::panic::catch_unwind(f);
    QUIET.with(|q| q.set(false));
    result.map_err(|payload| {
        payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic".to_string())
    })
}

/// A page's lines with runs of white space collapsed, ligatures spelled out, ends trimmed.
fn tidy_lines(page: &str) -> Vec<String> {
    page.lines()
        .map(|line| {
            let mut out = String::new();
            collapse_whitespace(&unligate(line), &mut out);
            out.trim().to_string()
        })
        .collect()
}

/// The Latin ligatures of the Alphabetic Presentation Forms block as letters.
fn unligate(line: &str) -> std::borrow::Cow<'_, str> {
    if !line.chars().any(|c| ('\u{FB00}'..='\u{FB06}').contains(&c)) {
        return line.into();
    }
    let mut out = String::with_capacity(line.len() + 8);
    for c in line.chars() {
        match c {
            '\u{FB00}' => out.push_str("ff"),
            '\u{FB01}' => out.push_str("fi"),
            '\u{FB02}' => out.push_str("fl"),
            '\u{FB03}' => out.push_str("ffi"),
            '\u{FB04}' => out.push_str("ffl"),
            '\u{FB05}' | '\u{FB06}' => out.push_str("st"),
            c => out.push(c),
        }
    }
    out.into()
}

/// How many lines at each end of a page may be a running header or footer.
const RUNNING_LINES: usize = 2;
/// A running line recurs on this many pages…
const RUNNING_PAGES: usize = 3;
/// …within this many consecutive pages.
const RUNNING_WINDOW: usize = 12;

/// Rule 2: lines that recur at the same end of most pages.
fn drop_running_lines(mut pages: Vec<Vec<String>>) -> Vec<Vec<String>> {
    if pages.len() < RUNNING_PAGES {
        return pages;
    }
    // Numbers aside: every run of digits reads as one `#`.
    let key = |line: &str| {
        let mut key = String::with_capacity(line.len());
        for c in line.chars() {
            let c = if c.is_ascii_digit() { '#' } else { c };
            if !(c == '#' && key.ends_with('#')) {
                key.push(c);
            }
        }
        key
    };
    let ends = |lines: &[String]| -> (Vec<usize>, Vec<usize>) {
        let filled: Vec<usize> = (0..lines.len()).filter(|&i| !lines[i].is_empty()).collect();
        let top = filled.iter().take(RUNNING_LINES).copied().collect();
        let bottom = filled.iter().rev().take(RUNNING_LINES).copied().collect();
        (top, bottom)
    };
    // Where each (end, line) occurs, in page order.
    let mut occurs: HashMap<(bool, String), Vec<usize>> = HashMap::new();
    for (page, lines) in pages.iter().enumerate() {
        let (top, bottom) = ends(lines);
        let mut seen: Vec<(bool, String)> = top.iter().map(|&i| (true, key(&lines[i]))).collect();
        seen.extend(bottom.iter().map(|&i| (false, key(&lines[i]))));
        seen.sort();
        seen.dedup();
        for k in seen {
            occurs.entry(k).or_default().push(page);
        }
    }
    let running_keys: std::collections::HashSet<(bool, String)> = occurs
        .into_iter()
        .filter(|(_, at)| {
            at.windows(RUNNING_PAGES).any(|w| w[RUNNING_PAGES - 1] - w[0] < RUNNING_WINDOW)
        })
        .map(|(k, _)| k)
        .collect();
    for lines in &mut pages {
        let (top, bottom) = ends(lines);
        let running: Vec<usize> = top
            .iter()
            .map(|&i| (i, true))
            .chain(bottom.iter().map(|&i| (i, false)))
            .filter(|&(i, at_top)| running_keys.contains(&(at_top, key(&lines[i]))))
            .map(|(i, _)| i)
            .collect();
        for i in running {
            lines[i].clear();
        }
    }
    pages
}

/// Rule 3: lines joined into paragraphs, paragraphs separated by a blank line.
fn paragraphs(lines: &[String]) -> String {
    let mut out = String::new();
    let mut in_paragraph = false;
    for line in lines {
        if line.is_empty() {
            in_paragraph = false;
            continue;
        }
        if !in_paragraph {
            if !out.is_empty() {
                out.push_str("\n\n");
            }
            out.push_str(line);
            in_paragraph = true;
            continue;
        }
        join_line(&mut out, line);
    }
    out
}

fn join_line(out: &mut String, line: &str) {
    let mut tail = out.chars().rev();
    let (last, before) = (tail.next(), tail.next());
    let next = line.chars().next();
    let lower = |c: Option<char>| c.is_some_and(char::is_lowercase);
    if last == Some('-') && lower(before) && lower(next) {
        out.pop();
    } else if !(last.is_some_and(unspaced) && next.is_some_and(unspaced)) {
        out.push(' ');
    }
    out.push_str(line);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<String> {
        tidy_lines(text)
    }

    #[test]
    fn paragraphs_join_lines_and_hyphenated_words() {
        let text =
            "The   extrac-\ntion of text\nis well-\nKnown. O\u{FB00}!\n\n中文句\n子。\n\nNext one.";
        assert_eq!(
            paragraphs(&lines(text)),
            "The extraction of text is well- Known. Off!\n\n中文句子。\n\nNext one."
        );
    }

    #[test]
    fn running_headers_and_footers_go() {
        let bodies = ["Owls hunt at\nnight.", "Larks sing.", "Bread rises\nslowly.", "Tea steeps."];
        let pages: Vec<Vec<String>> = bodies
            .iter()
            .enumerate()
            .map(|(n, body)| lines(&format!("User manual\n\n{body}\n\nPage {} of 4", n + 1)))
            .collect();
        let kept: Vec<String> = drop_running_lines(pages).iter().map(|p| paragraphs(p)).collect();
        assert_eq!(
            kept,
            ["Owls hunt at night.", "Larks sing.", "Bread rises slowly.", "Tea steeps."]
        );
        // Too few pages to tell a running line from a repeated one.
        let two: Vec<Vec<String>> = (0..2).map(|_| lines("Title\n\nText")).collect();
        assert_eq!(paragraphs(&drop_running_lines(two)[0]), "Title\n\nText");
    }

    #[test]
    fn panics_become_quiet_errors() {
        assert_eq!(quietly(|| 7), Ok(7));
        let failed = quietly(|| -> u8 { panic!("bad length of hexstring") });
        assert_eq!(failed, Err("bad length of hexstring".into()));
    }

    #[test]
    fn broken_files_are_named_errors() {
        let err = document(b"%PDF-1.4\n1 0 obj <<").unwrap_err();
        assert!(err.contains("PDF"), "{err}");
        assert!(document(b"not a pdf at all").is_err());
    }
}
