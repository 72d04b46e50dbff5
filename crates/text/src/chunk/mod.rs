//! Chunkers: a document's text in, a pre-ordered tree of byte spans out.
//!
//! Every chunker guarantees, for any input (checked by property tests):
//! - every span lies in the text and on character boundaries, and is trimmed of whitespace;
//! - leaves come in text order, and together they cover every non-whitespace character
//!   (overlapping word windows cover some twice);
//! - sizes stay within the spec's bounds (`words:N` ≤ N words, `markdown:N` ≤ N units, each
//!   `hierarchy` level ≤ its size), except a single grapheme larger than the bound;
//! - a parent's span contains its children's.
//!
//! Sizes for `markdown` and `hierarchy` are counted by a [`SizeCounter`]: words by default
//! ([`WordCounter`]), a model's tokenizer when one is configured.

mod layout;
mod paragraphs;
mod semantic;
mod spec;
mod structure;
mod words;

use ckeep_core::{Chunk, Span};
use unicode_segmentation::UnicodeSegmentation;

pub use spec::{ChunkerSpec, SizeUnit, WordsSize};
pub use words::first_words;

/// Counts the size of a piece of text in the unit chunk sizes are given in.
pub trait SizeCounter: Send + Sync {
    /// Size of `text`.
    fn count(&self, text: &str) -> usize;
    /// The unit's name for messages and `--help` (`words`, `tokens`).
    fn unit(&self) -> &str;
}

/// Counts words: Unicode (UAX #29) words, each CJK ideograph, kana or Hangul syllable counting
/// as one, so a size means about as much text in Chinese as in English. The size unit when no
/// model tokenizer is configured.
#[derive(Debug, Clone, Copy, Default)]
pub struct WordCounter;

impl SizeCounter for WordCounter {
    fn count(&self, text: &str) -> usize {
        words::word_starts(text).count()
    }

    fn unit(&self) -> &'static str {
        "words"
    }
}

impl ChunkerSpec {
    /// Whether chunking needs one embedding per sentence ([`sentence_spans`] then
    /// [`ChunkerSpec::chunk_with_vectors`]).
    pub fn needs_sentence_vectors(&self) -> bool {
        matches!(self, ChunkerSpec::Semantic { .. })
    }

    /// Cuts `text` into chunks as this spec says. Whitespace-only text gives no chunks. The
    /// `semantic` chunker, given no sentence vectors here, cuts at its maximum size only.
    pub fn chunk(&self, text: &str, counter: &dyn SizeCounter) -> Vec<Chunk> {
        self.chunk_with_vectors(text, counter, &[])
    }

    /// As [`ChunkerSpec::chunk`], with one vector per [`sentence_spans`] entry for `semantic`
    /// (ignored by the other chunkers).
    pub fn chunk_with_vectors(
        &self,
        text: &str,
        counter: &dyn SizeCounter,
        sentence_vectors: &[Vec<f32>],
    ) -> Vec<Chunk> {
        let layout = layout::Layout::scan(text);
        let spans: Vec<Span> = match self {
            ChunkerSpec::Whole => trim(text, Span::new(0, text.len())).into_iter().collect(),
            ChunkerSpec::Words { size, overlap } => words::windows(text, *size, *overlap),
            ChunkerSpec::Sentences { per_chunk } => {
                group(&sentences(text, Span::new(0, text.len())), *per_chunk)
            }
            ChunkerSpec::Paragraphs { per_chunk } => paragraphs::chunks(text, &layout, *per_chunk),
            ChunkerSpec::Markdown { max, .. } => structure::Splitter::new(text, &layout, counter)
                .split(Span::new(0, text.len()), *max),
            ChunkerSpec::Semantic { max, percentile, .. } => {
                let sents = sentence_spans(text);
                let vectors = if sentence_vectors.len() == sents.len() {
                    sentence_vectors.to_vec()
                } else {
                    vec![Vec::new(); sents.len()]
                };
                semantic::chunks(text, &layout, counter, &sents, &vectors, *max, *percentile)
            }
            ChunkerSpec::Hierarchy { sizes, .. } => {
                let mut chunks = Vec::new();
                let splitter = structure::Splitter::new(text, &layout, counter);
                hierarchy(&splitter, Span::new(0, text.len()), sizes, 0, None, &mut chunks);
                layout.assign_headings(text, &mut chunks);
                return chunks;
            }
        };
        let mut chunks: Vec<Chunk> = spans
            .into_iter()
            .enumerate()
            .map(|(i, span)| Chunk {
                span,
                ordinal: i as u32,
                depth: 0,
                parent: None,
                leaf: true,
                headings: Vec::new(),
            })
            .collect();
        layout.assign_headings(text, &mut chunks);
        chunks
    }
}

/// Builds one level of the hierarchy under `parent`, then each chunk's children, in pre-order.
fn hierarchy(
    splitter: &structure::Splitter<'_>,
    span: Span,
    sizes: &[usize],
    depth: usize,
    parent: Option<u32>,
    out: &mut Vec<Chunk>,
) {
    let last = depth + 1 == sizes.len();
    for piece in splitter.split(span, sizes[depth]) {
        let ordinal = out.len() as u32;
        out.push(Chunk {
            span: piece,
            ordinal,
            depth: depth as u16,
            parent,
            leaf: last,
            headings: Vec::new(),
        });
        if !last {
            hierarchy(splitter, piece, sizes, depth + 1, Some(ordinal), out);
        }
    }
}

/// The sentences the `semantic` chunker groups: Unicode (UAX #29) sentences, trimmed.
pub fn sentence_spans(text: &str) -> Vec<Span> {
    sentences(text, Span::new(0, text.len()))
}

/// Sentences inside `span`, trimmed, empty ones dropped (see [`sentence_starts`]).
pub(crate) fn sentences(text: &str, span: Span) -> Vec<Span> {
    let sub = span.slice(text);
    let starts = sentence_starts(sub);
    let ends = starts.iter().skip(1).copied().chain([sub.len()]);
    starts
        .iter()
        .zip(ends)
        .filter_map(|(&s, e)| trim(text, Span::new(span.start + s, span.start + e)))
        .collect()
}

/// Where the sentences of `text` start: Unicode (UAX #29) sentence boundaries, which end a
/// sentence at 。！？ and keep closing quotes and brackets with it, plus
/// - the full-width semicolon ；, which ends a clause as a sentence in Chinese (as 。 does);
/// - a full stop, question or exclamation mark standing between spaces (`slipstream . an`):
///   tokenised text, as old test collections are written, where UAX #29 sees no sentence end
///   before a lower-case word, and a whole abstract would be one sentence.
pub(crate) fn sentence_starts(text: &str) -> Vec<usize> {
    let mut starts: Vec<usize> = text.split_sentence_bound_indices().map(|(i, _)| i).collect();
    let mut more = false;
    for mut end in text.match_indices('；').map(|(i, s)| i + s.len()) {
        // Closing quotes and brackets stay with the clause they close.
        while let Some(c) = text[end..].chars().next().filter(|&c| closes(c)) {
            end += c.len_utf8();
        }
        if end < text.len() {
            starts.push(end);
            more = true;
        }
    }
    let bytes = text.as_bytes();
    for (i, _) in text.match_indices(['.', '?', '!']) {
        let spaced = |at: Option<&u8>| at.is_some_and(u8::is_ascii_whitespace);
        if i > 0 && spaced(bytes.get(i - 1)) && spaced(bytes.get(i + 1)) {
            starts.push(i + 1);
            more = true;
        }
    }
    if more {
        starts.sort_unstable();
        starts.dedup();
    }
    starts
}

/// Closing quotes and brackets.
fn closes(c: char) -> bool {
    matches!(
        c,
        ')' | ']'
            | '}'
            | '”'
            | '’'
            | '»'
            | '」'
            | '』'
            | '）'
            | '》'
            | '〉'
            | '】'
            | '〕'
            | '］'
            | '｝'
    )
}

/// Consecutive spans joined `n` at a time.
fn group(spans: &[Span], n: usize) -> Vec<Span> {
    spans.chunks(n).map(|g| Span::new(g[0].start, g[g.len() - 1].end)).collect()
}

/// `span` without leading and trailing whitespace, or `None` if nothing else is left.
pub(crate) fn trim(text: &str, span: Span) -> Option<Span> {
    let s = span.slice(text);
    let start = span.start + (s.len() - s.trim_start().len());
    let end = span.end - (s.len() - s.trim_end().len());
    (start < end).then(|| Span::new(start, end))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chinese_sentences_end_at_full_stops_and_semicolons() {
        let t = "今天天气很好。我们去公园吧！你来吗？他说：“好的；走吧。”然后走了；没回头";
        let got: Vec<&str> = sentence_spans(t).iter().map(|s| s.slice(t)).collect();
        assert_eq!(
            got,
            [
                "今天天气很好。",
                "我们去公园吧！",
                "你来吗？",
                "他说：“好的；",
                "走吧。”",
                "然后走了；",
                "没回头"
            ]
        );
        // A closing bracket after a semicolon stays with its clause.
        let t = "（甲；）乙";
        let got: Vec<&str> = sentence_spans(t).iter().map(|s| s.slice(t)).collect();
        assert_eq!(got, ["（甲；）", "乙"]);
    }

    #[test]
    fn spaced_full_stops_end_sentences_in_tokenised_text() {
        let t = "flow in a slipstream . an experimental study was made ? yes ! e.g. a 3.5 mm gap";
        let got: Vec<&str> = sentence_spans(t).iter().map(|s| s.slice(t)).collect();
        assert_eq!(
            got,
            [
                "flow in a slipstream .",
                "an experimental study was made ?",
                "yes !",
                "e.g. a 3.5 mm gap"
            ]
        );
        // Ordinary prose is split as UAX #29 splits it.
        let t = "It works. See Fig. 2 for more. Done.";
        let got: Vec<&str> = sentence_spans(t).iter().map(|s| s.slice(t)).collect();
        assert_eq!(got, ["It works.", "See Fig. 2 for more.", "Done."]);
    }
}
