//! The structure-aware splitter behind `markdown:N` and every level of `hierarchy`.
//!
//! As `text-splitter` does, a span that is too large is cut at the highest semantic level that
//! has a boundary inside it (sections under `#`, then `##`, …, then blocks, lines, sentences,
//! words, graphemes); the pieces are merged greedily back into chunks that fit, and a piece that
//! does not fit alone is split again one level down. So chunks never exceed the maximum, unless
//! one grapheme alone does (possible only with a tokenizer as the counter).

use ckeep_core::Span;
use unicode_segmentation::UnicodeSegmentation;

use super::layout::Layout;
use super::{SizeCounter, trim};

/// Semantic levels, most preferred boundary first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Level {
    Section(u8),
    Block,
    Line,
    Sentence,
    Word,
    Grapheme,
}

const LEVELS: [Level; 11] = [
    Level::Section(1),
    Level::Section(2),
    Level::Section(3),
    Level::Section(4),
    Level::Section(5),
    Level::Section(6),
    Level::Block,
    Level::Line,
    Level::Sentence,
    Level::Word,
    Level::Grapheme,
];

pub(super) struct Splitter<'a> {
    text: &'a str,
    layout: &'a Layout,
    counter: &'a dyn SizeCounter,
}

impl<'a> Splitter<'a> {
    pub fn new(text: &'a str, layout: &'a Layout, counter: &'a dyn SizeCounter) -> Self {
        Self { text, layout, counter }
    }

    /// Chunks of at most `max` units covering `span`'s non-whitespace text, in order.
    pub fn split(&self, span: Span, max: usize) -> Vec<Span> {
        let mut out = Vec::new();
        self.split_into(span, max, &mut out);
        out
    }

    fn fits(&self, span: Span, max: usize) -> bool {
        self.counter.count(span.slice(self.text)) <= max
    }

    fn split_into(&self, span: Span, max: usize, out: &mut Vec<Span>) {
        let Some(span) = trim(self.text, span) else { return };
        if self.fits(span, max) {
            out.push(span);
            return;
        }
        for level in LEVELS {
            let bounds = self.boundaries(level, span);
            if bounds.is_empty() {
                continue;
            }
            let mut cuts = Vec::with_capacity(bounds.len() + 2);
            cuts.push(span.start);
            cuts.extend(bounds);
            cuts.push(span.end);
            self.merge(cuts.windows(2).map(|w| Span::new(w[0], w[1])), max, out);
            return;
        }
        out.push(span);
    }

    /// Greedily joins consecutive pieces while they fit; splits further what never fits.
    fn merge(&self, pieces: impl Iterator<Item = Span>, max: usize, out: &mut Vec<Span>) {
        let mut current: Option<Span> = None;
        for piece in pieces.filter_map(|p| trim(self.text, p)) {
            if let Some(c) = current {
                let joined = Span::new(c.start, piece.end);
                if self.fits(joined, max) {
                    current = Some(joined);
                    continue;
                }
                out.push(c);
                current = None;
            }
            if self.fits(piece, max) {
                current = Some(piece);
            } else {
                self.split_into(piece, max, out);
            }
        }
        out.extend(current);
    }

    /// Cut positions of `level` strictly inside `span`, ascending.
    fn boundaries(&self, level: Level, span: Span) -> Vec<usize> {
        let inside = |p: &usize| span.start < *p && *p < span.end;
        let sub = span.slice(self.text);
        match level {
            Level::Section(h) => self
                .layout
                .headings
                .iter()
                .filter(|x| x.level <= h)
                .map(|x| x.span.start)
                .filter(inside)
                .collect(),
            Level::Block => {
                self.layout.blocks.iter().map(|b| b.span.start).filter(inside).collect()
            }
            Level::Line => self.layout.line_starts.iter().copied().filter(inside).collect(),
            Level::Sentence => super::sentence_starts(sub)
                .into_iter()
                .map(|i| span.start + i)
                .filter(inside)
                .collect(),
            Level::Word => super::words::word_spans(sub)
                .iter()
                .map(|w| span.start + w.start)
                .filter(inside)
                .collect(),
            Level::Grapheme => {
                sub.grapheme_indices(true).map(|(i, _)| span.start + i).filter(inside).collect()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::{ChunkerSpec, WordCounter};

    fn chunk<'t>(text: &'t str, spec: &str) -> Vec<&'t str> {
        let spec: ChunkerSpec = spec.parse().unwrap();
        spec.chunk(text, &WordCounter).iter().map(|c| c.span.slice(text)).collect()
    }

    #[test]
    fn prefers_sections_over_paragraphs() {
        let text = "# A\n\none two\n\nthree\n\n# B\n\nfour five six";
        assert_eq!(chunk(text, "markdown:5"), ["# A\n\none two\n\nthree", "# B\n\nfour five six"]);
    }

    #[test]
    fn falls_back_to_sentences_then_words() {
        let text = "One two three. Four five six seven eight nine.";
        assert_eq!(
            chunk(text, "markdown:4"),
            ["One two three.", "Four five six seven", "eight nine."]
        );
    }

    #[test]
    fn whole_text_when_it_fits() {
        assert_eq!(chunk("  small text \n", "markdown:10"), ["small text"]);
    }

    #[test]
    fn hierarchy_links_children_to_parents() {
        let text = "# A\n\none two three\n\nfour five\n\n# B\n\nsix seven eight nine ten";
        let spec: ChunkerSpec = "hierarchy:8,3".parse().unwrap();
        let chunks = spec.chunk(text, &WordCounter);
        for c in &chunks {
            if let Some(p) = c.parent {
                let parent = &chunks[p as usize];
                assert!(parent.span.contains(c.span));
                assert_eq!(parent.depth + 1, c.depth);
            }
        }
        let tops: Vec<&str> =
            chunks.iter().filter(|c| c.depth == 0).map(|c| c.span.slice(text)).collect();
        assert_eq!(tops, ["# A\n\none two three\n\nfour five", "# B\n\nsix seven eight nine ten"]);
        assert!(chunks.iter().filter(|c| c.leaf).all(|c| c.depth == 1));
        assert!(
            chunks
                .iter()
                .all(|c| c.ordinal as usize == chunks.iter().position(|x| x == c).unwrap())
        );
    }
}
