//! Word windows: `words:N[,overlap=M]` and `words:dynamic`.

use ckeep_core::Span;

use super::WordsSize;

/// Spans of whitespace-separated words, `size` words per window, consecutive windows sharing
/// `overlap` words. The last window ends at the last word.
pub(super) fn windows(text: &str, size: WordsSize, overlap: usize) -> Vec<Span> {
    let words = word_spans(text);
    let size = size.for_words(words.len());
    let step = size - overlap;
    let mut out = Vec::with_capacity(words.len() / step + 1);
    let mut i = 0;
    while i < words.len() {
        let end = (i + size).min(words.len());
        out.push(Span::new(words[i].start, words[end - 1].end));
        if end == words.len() {
            break;
        }
        i += step;
    }
    out
}

/// Maximal runs of non-whitespace characters.
pub(crate) fn word_spans(text: &str) -> Vec<Span> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in text.char_indices() {
        match (c.is_whitespace(), start) {
            (true, Some(s)) => {
                out.push(Span::new(s, i));
                start = None;
            }
            (false, None) => start = Some(i),
            _ => {}
        }
    }
    if let Some(s) = start {
        out.push(Span::new(s, text.len()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(text: &str, size: WordsSize, overlap: usize) -> Vec<&str> {
        windows(text, size, overlap).iter().map(|s| s.slice(text)).collect()
    }

    #[test]
    fn fixed_windows_with_overlap() {
        let t = " a b  c\nd e ";
        assert_eq!(texts(t, WordsSize::Fixed(2), 0), ["a b", "c\nd", "e"]);
        assert_eq!(texts(t, WordsSize::Fixed(3), 1), ["a b  c", "c\nd e"]);
    }

    #[test]
    fn dynamic_uses_at_least_18_words() {
        let t = (0..40).map(|i| format!("w{i}")).collect::<Vec<_>>().join(" ");
        let w = windows(&t, WordsSize::Dynamic, 0);
        assert_eq!(w.len(), 3, "40 words in windows of 18");
        assert_eq!(w[2].slice(&t), "w36 w37 w38 w39");
    }
}
