//! One pass over a text's lines that finds what structure-aware chunkers need: ATX headings and
//! blank-line blocks, with fenced code (```` ``` ```` or `~~~`) kept whole so a `# comment` inside code is
//! not a heading and a blank line inside code does not end the block.

use ckeep_core::{Chunk, Span};

/// A Markdown ATX heading line.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Heading {
    /// The heading line, trimmed.
    pub span: Span,
    /// 1 for `#`, up to 6.
    pub level: u8,
}

/// A block: a paragraph, a fenced code block or a heading line, trimmed.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Block {
    pub span: Span,
    pub is_heading: bool,
}

#[derive(Debug)]
pub(crate) struct Layout {
    pub headings: Vec<Heading>,
    pub blocks: Vec<Block>,
    /// Byte offsets where a line starts (after a `\n`), excluding 0.
    pub line_starts: Vec<usize>,
}

struct Fence {
    marker: u8,
    len: usize,
}

impl Layout {
    pub fn scan(text: &str) -> Layout {
        let mut layout =
            Layout { headings: Vec::new(), blocks: Vec::new(), line_starts: Vec::new() };
        let mut fence: Option<Fence> = None;
        // Start of the block being built and end of its last non-blank line.
        let mut open: Option<(usize, usize)> = None;
        let mut pos = 0;
        while pos < text.len() {
            let end =
                memchr::memchr(b'\n', &text.as_bytes()[pos..]).map_or(text.len(), |i| pos + i);
            let line = &text[pos..end];
            let content = line.trim();
            let content_start = pos + (line.len() - line.trim_start().len());
            let content_end = content_start + content.len();
            if let Some(f) = &fence {
                if is_fence_close(content, f) {
                    fence = None;
                }
                if let (Some((_, e)), false) = (&mut open, content.is_empty()) {
                    *e = content_end;
                }
            } else if content.is_empty() {
                layout.close(&mut open);
            } else if let Some(level) = heading_level(line) {
                layout.close(&mut open);
                let span = Span::new(content_start, content_end);
                layout.headings.push(Heading { span, level });
                layout.blocks.push(Block { span, is_heading: true });
            } else {
                if let Some(f) = fence_open(line) {
                    layout.close(&mut open);
                    fence = Some(f);
                }
                match &mut open {
                    Some((_, e)) => *e = content_end,
                    None => open = Some((content_start, content_end)),
                }
            }
            if end < text.len() {
                layout.line_starts.push(end + 1);
            }
            pos = end + 1;
        }
        layout.close(&mut open);
        layout
    }

    fn close(&mut self, open: &mut Option<(usize, usize)>) {
        if let Some((s, e)) = open.take() {
            self.blocks.push(Block { span: Span::new(s, e), is_heading: false });
        }
    }

    /// Sets each chunk's heading path: the headings in force where the chunk's body starts, so
    /// headings that open the chunk are part of its own path.
    pub fn assign_headings(&self, text: &str, chunks: &mut [Chunk]) {
        if self.headings.is_empty() {
            return;
        }
        // paths[i]: the heading stack right after heading i.
        let mut stack: Vec<Heading> = Vec::new();
        let paths: Vec<Vec<String>> = self
            .headings
            .iter()
            .map(|h| {
                while stack.last().is_some_and(|top| top.level >= h.level) {
                    stack.pop();
                }
                stack.push(*h);
                stack.iter().map(|h| h.span.slice(text).to_string()).collect()
            })
            .collect();
        for chunk in chunks {
            let mut after = self.headings.partition_point(|h| h.span.start <= chunk.span.start);
            // Take in the headings that lead the chunk, separated only by whitespace.
            while let Some(next) = self.headings.get(after) {
                let prev_end =
                    if after > 0 { self.headings[after - 1].span.end } else { chunk.span.start };
                let leads = next.span.end <= chunk.span.end
                    && text[prev_end.max(chunk.span.start)..next.span.start].trim().is_empty();
                if !leads {
                    break;
                }
                after += 1;
            }
            if after > 0 {
                chunk.headings.clone_from(&paths[after - 1]);
            }
        }
    }
}

/// The level of an ATX heading (`#` to `######` then a space or the end of the line), if the
/// line is one; up to three spaces of indentation are allowed, as in `CommonMark`.
fn heading_level(line: &str) -> Option<u8> {
    let indent = line.len() - line.trim_start_matches(' ').len();
    if indent > 3 {
        return None;
    }
    let rest = &line[indent..];
    let hashes = rest.len() - rest.trim_start_matches('#').len();
    let after = &rest[hashes..];
    ((1..=6).contains(&hashes) && (after.is_empty() || after.starts_with([' ', '\t', '\r'])))
        .then_some(hashes as u8)
}

fn fence_open(line: &str) -> Option<Fence> {
    let indent = line.len() - line.trim_start_matches(' ').len();
    if indent > 3 {
        return None;
    }
    let rest = &line.as_bytes()[indent..];
    let marker = *rest.first()?;
    if marker != b'`' && marker != b'~' {
        return None;
    }
    let len = rest.iter().take_while(|&&b| b == marker).count();
    (len >= 3).then_some(Fence { marker, len })
}

fn is_fence_close(content: &str, fence: &Fence) -> bool {
    let bytes = content.as_bytes();
    bytes.len() >= fence.len && bytes.iter().all(|&b| b == fence.marker)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blocks(text: &str) -> Vec<&str> {
        Layout::scan(text).blocks.iter().map(|b| b.span.slice(text)).collect()
    }

    #[test]
    fn blocks_split_at_blank_lines_and_headings() {
        let text = "# Title\nintro line\nmore\n\n\n  second para  \n## Sub\r\ntext\r\n";
        assert_eq!(blocks(text), ["# Title", "intro line\nmore", "second para", "## Sub", "text"]);
    }

    #[test]
    fn fenced_code_is_one_block_and_hides_headings() {
        let text = "Para\n```python\n# a comment\n\nx = 1\n```\n# Real";
        let layout = Layout::scan(text);
        let got: Vec<&str> = layout.blocks.iter().map(|b| b.span.slice(text)).collect();
        assert_eq!(got, ["Para", "```python\n# a comment\n\nx = 1\n```", "# Real"]);
        assert_eq!(layout.headings.len(), 1);
    }

    #[test]
    fn heading_levels() {
        assert_eq!(heading_level("## x"), Some(2));
        assert_eq!(heading_level("#"), Some(1));
        assert_eq!(heading_level("#hashtag"), None);
        assert_eq!(heading_level("####### seven"), None);
        assert_eq!(heading_level("    # indented code"), None);
    }

    #[test]
    fn heading_paths_pop_to_the_right_level() {
        let text = "# A\n\n## B\n\nb\n\n### C\n\nc\n\n## D\n\nd";
        let layout = Layout::scan(text);
        let mut chunks: Vec<Chunk> = layout
            .blocks
            .iter()
            .filter(|b| !b.is_heading)
            .map(|b| Chunk {
                span: b.span,
                ordinal: 0,
                depth: 0,
                parent: None,
                leaf: true,
                headings: vec![],
            })
            .collect();
        layout.assign_headings(text, &mut chunks);
        let paths: Vec<String> = chunks.iter().map(Chunk::heading_path).collect();
        assert_eq!(paths, ["# A > ## B", "# A > ## B > ### C", "# A > ## D"]);
    }
}
