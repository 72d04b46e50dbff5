//! Where a result sits in its document's lines: editors and pipes jump to `path:line`, and a
//! byte span alone does not say it. Lines are counted at `\n`, from 1; the column is the
//! span's first byte in its line, from 1, as editors and `grep --column` count them.

use serde::Serialize;

use ckeep_core::{DocKey, Span};
use ckeep_store::StoreRead;

use crate::Result;

/// A span's lines in its document.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct LineSpan {
    /// The line the span starts on (from 1).
    pub start: u32,
    /// The line its last byte is on.
    pub end: u32,
    /// The byte column it starts at (from 1).
    pub column: u32,
}

impl LineSpan {
    /// The lines of `span` given the document's text up to the span's end.
    fn of(prefix: &str, span: Span) -> Self {
        let before = &prefix.as_bytes()[..span.start.min(prefix.len())];
        let start = memchr::memchr_iter(b'\n', before).count();
        let line_start = memchr::memrchr(b'\n', before).map_or(0, |i| i + 1);
        let last = span.end.saturating_sub(1).max(span.start).min(prefix.len());
        let inside = &prefix.as_bytes()[before.len()..last];
        let end = start + memchr::memchr_iter(b'\n', inside).count();
        let number = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        Self {
            start: number(start + 1),
            end: number(end + 1),
            column: number(before.len() - line_start + 1),
        }
    }

    /// The text and the lines of each of `spans`, in the order given: one look-up of each
    /// document's text up to the span's end, which holds both (a search reads its results'
    /// texts this way, not twice).
    pub(crate) fn with_texts<S: StoreRead + ?Sized>(
        store: &S,
        spans: &[(DocKey, Span)],
    ) -> Result<Vec<(String, Self)>> {
        let prefixes: Vec<(DocKey, Span)> =
            spans.iter().map(|(doc, s)| (*doc, Span::new(0, s.end))).collect();
        let prefixes = store.span_texts(&prefixes)?;
        Ok(prefixes
            .iter()
            .zip(spans)
            .map(|(prefix, (_, span))| {
                let text = prefix.get(span.start..).unwrap_or_default().to_string();
                (text, Self::of(prefix, *span))
            })
            .collect())
    }
}

impl std::fmt::Display for LineSpan {
    /// `L3` or `L3-5`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.start == self.end {
            write!(f, "L{}", self.start)
        } else {
            write!(f, "L{}-{}", self.start, self.end)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_and_columns_count_from_one() {
        let text = "first line\nsecond line\n第三行 third\nlast";
        let at = |s: &str| {
            let start = text.find(s).unwrap();
            LineSpan::of(&text[..start + s.len()], Span::new(start, start + s.len()))
        };
        assert_eq!(at("first"), LineSpan { start: 1, end: 1, column: 1 });
        assert_eq!(at("line\nsecond"), LineSpan { start: 1, end: 2, column: 7 });
        // A span that ends with its line's newline ends on that line.
        assert_eq!(at("second line\n"), LineSpan { start: 2, end: 2, column: 1 });
        // Columns are bytes, as editors count them: 第三行 is nine.
        assert_eq!(at("third"), LineSpan { start: 3, end: 3, column: 11 });
        assert_eq!(at("last"), LineSpan { start: 4, end: 4, column: 1 });
        assert_eq!(at("line\nsecond line\n第三行 third\nlast").to_string(), "L1-4");
    }
}
