//! Text assembled block by block by the extracting loaders (HTML, EPUB, DOCX, PDF), each
//! block's start remembered with where it came from, so the stored text and its source map
//! are made together and always agree.

use ckeep_core::script::{CjkScript, cjk_script};
use ckeep_core::{SOURCE_MAP_KEY, SourceMap};

/// Chinese and Japanese characters and their full-width punctuation: written without spaces,
/// so a line break between two of them is no word break.
pub(crate) fn unspaced(c: char) -> bool {
    matches!(cjk_script(c), Some(CjkScript::Han | CjkScript::Hiragana | CjkScript::Katakana))
        || matches!(u32::from(c), 0x3000..=0x303F | 0xFF00..=0xFF65)
}

/// Extracted text and its source map, built in order.
#[derive(Debug, Default)]
pub(crate) struct Blocks {
    text: String,
    map: SourceMap,
}

impl Blocks {
    /// Appends a block of text (a paragraph, list item or table row) that came from `path`:
    /// after a blank line, or after a single line break when `joined` (the next item of a
    /// list, the next row of a table). Blank blocks are dropped. A line of it that starts with
    /// `#` gets a backslash before it, as in Markdown, so that the chunkers do not take a
    /// shell prompt or a C `#include` for a heading.
    pub(crate) fn push(&mut self, block: &str, path: &str, joined: bool) {
        self.push_verbatim(&escape_headings(block), path, joined);
    }

    /// Appends the text of page `page` (1-based) after a blank line, `#` lines escaped.
    pub(crate) fn push_page(&mut self, text: &str, page: u32) {
        let text = text.trim();
        if text.is_empty() {
            return;
        }
        self.separate(false);
        self.map.starts.push(self.text.len());
        self.map.pages.push(page);
        self.text.push_str(&escape_headings(text));
    }

    /// Appends a block as it is: a Markdown heading line or a fenced code block.
    pub(crate) fn push_verbatim(&mut self, block: &str, path: &str, joined: bool) {
        // Leading spaces stay: they indent a nested list item.
        let block = block.trim_start_matches('\n').trim_end();
        if block.trim().is_empty() {
            return;
        }
        self.separate(joined);
        self.mark(path);
        self.text.push_str(block);
    }

    /// What goes before a new block: nothing at the start, else a line break when `joined`
    /// (list items, table rows), else a blank line.
    fn separate(&mut self, joined: bool) {
        if !self.text.is_empty() {
            self.text.push_str(if joined { "\n" } else { "\n\n" });
        }
    }

    fn mark(&mut self, path: &str) {
        // A block from the same element as the last one needs no entry of its own.
        if self.map.paths.last().is_some_and(|p| p == path) {
            return;
        }
        self.map.starts.push(self.text.len());
        self.map.paths.push(path.to_string());
    }

    /// The text and the metadata that carries its source map.
    pub(crate) fn finish(self) -> (String, serde_json::Value) {
        let mut metadata = serde_json::Map::new();
        metadata.insert(
            SOURCE_MAP_KEY.to_string(),
            serde_json::to_value(&self.map).expect("a source map serializes"),
        );
        (self.text, serde_json::Value::Object(metadata))
    }
}

/// `block` with a backslash before every line that starts with `#` (after indentation).
fn escape_headings(block: &str) -> std::borrow::Cow<'_, str> {
    if !block.lines().any(|l| l.trim_start().starts_with('#')) {
        return block.into();
    }
    let escaped: Vec<String> = block
        .lines()
        .map(|l| {
            let indent = l.len() - l.trim_start().len();
            if l[indent..].starts_with('#') {
                format!("{}\\{}", &l[..indent], &l[indent..])
            } else {
                l.to_string()
            }
        })
        .collect();
    escaped.join("\n").into()
}

/// Inline text as a reader sees it: runs of white space become one space, except that a line
/// break between two Chinese or Japanese characters disappears (those scripts put no space
/// between words, and a browser joins such lines too).
pub(crate) fn collapse_whitespace(raw: &str, out: &mut String) {
    let mut pending: Option<bool> = None; // a run of white space: whether it held a line break
    for c in raw.chars() {
        if c.is_whitespace() && c != '\u{a0}' {
            let newline = c == '\n' || c == '\r';
            pending = Some(pending.unwrap_or(false) || newline);
            continue;
        }
        if let Some(had_newline) = pending.take() {
            let joins = had_newline && out.chars().next_back().is_some_and(unspaced) && unspaced(c);
            if !joins && !out.is_empty() && !out.ends_with([' ', '\n']) {
                out.push(' ');
            }
        }
        out.push(c);
    }
    if pending.is_some() && !out.is_empty() && !out.ends_with([' ', '\n']) {
        out.push(' ');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whitespace_collapses_but_unspaced_scripts_join() {
        let cases = [
            ("  a \n\t b  ", "a b "),
            ("中文\n句子", "中文句子"),
            ("中文 句子", "中文 句子"),
            ("日本語の\n文章", "日本語の文章"),
            ("한국어\n문장", "한국어 문장"),
            ("end.\nNext", "end. Next"),
            ("句子。\n下一句", "句子。下一句"),
        ];
        for (raw, want) in cases {
            let mut out = String::new();
            collapse_whitespace(raw, &mut out);
            assert_eq!(out, want, "{raw:?}");
        }
    }

    #[test]
    fn blocks_record_where_each_starts() {
        let mut b = Blocks::default();
        b.push_verbatim("# Title", "/html/body/h1", false);
        b.push("  ", "/html/body/p[1]", false);
        b.push("- one", "/html/body/ul/li[1]", false);
        b.push("- two", "/html/body/ul/li[2]", true);
        b.push("# umount /mnt\n  #include <a.h>", "/html/body/p[2]", false);
        let (text, metadata) = b.finish();
        assert_eq!(text, "# Title\n\n- one\n- two\n\n\\# umount /mnt\n  \\#include <a.h>");
        let map = SourceMap::of(&metadata).unwrap();
        assert_eq!(map.starts, [0, 9, 15, 22]);
        assert_eq!(map.paths[2], "/html/body/ul/li[2]");
    }
}
