//! Word windows: `words:N[,overlap=M]` and `words:dynamic`.

use ckeep_core::Span;
use ckeep_core::script::is_cjk;
use unicode_segmentation::UnicodeSegmentation;

use super::WordsSize;

/// Spans of words ([`word_spans`]), `size` words per window, consecutive windows sharing
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

/// Where each word of `text` starts, in order: a Unicode (UAX #29) word counts once, except
/// that each CJK ideograph, kana or Hangul syllable in it is a word of its own (those scripts
/// put no spaces between words, so a "word" there is a character).
pub(crate) fn word_starts(text: &str) -> impl Iterator<Item = usize> + '_ {
    text.unicode_word_indices().flat_map(|(at, word)| {
        let mut last_cjk = true;
        word.char_indices().filter_map(move |(i, c)| {
            let cjk = is_cjk(c);
            let starts = cjk || (last_cjk && c.is_alphanumeric());
            last_cjk = cjk;
            starts.then_some(at + i)
        })
    })
}

/// The start of `text` up to and including its `n`-th word (with that word's punctuation),
/// trimmed; all of it when it has fewer words.
pub fn first_words(text: &str, n: usize) -> &str {
    match word_spans(text).get(n.saturating_sub(1)) {
        Some(last) if n > 0 => text[..last.end].trim_start(),
        _ if n == 0 => "",
        _ => text.trim(),
    }
}

/// Opening brackets and quotes: they belong to the word after them, not the one before.
fn opens(c: char) -> bool {
    matches!(
        c,
        '(' | '['
            | '{'
            | '“'
            | '‘'
            | '«'
            | '「'
            | '『'
            | '（'
            | '《'
            | '〈'
            | '【'
            | '〔'
            | '［'
            | '｛'
    )
}

/// The text cut into one span per word ([`word_starts`]), each running up to the next word so
/// that punctuation stays with its word (opening brackets and quotes with the next one), and
/// trimmed of whitespace; every non-whitespace character is in exactly one span. Text without
/// words is one span.
pub(crate) fn word_spans(text: &str) -> Vec<Span> {
    let mut starts: Vec<usize> = word_starts(text).collect();
    for s in &mut starts {
        // Move a word's start back over the opening punctuation right before it.
        while let Some(c) = text[..*s].chars().next_back().filter(|&c| opens(c)) {
            *s -= c.len_utf8();
        }
    }
    let Some(first) = super::trim(text, Span::new(0, text.len())) else {
        return Vec::new();
    };
    match starts.first_mut() {
        Some(s) => *s = first.start,
        None => return vec![first],
    }
    starts.dedup();
    let ends = starts.iter().skip(1).copied().chain([text.len()]);
    starts.iter().zip(ends).filter_map(|(&s, e)| super::trim(text, Span::new(s, e))).collect()
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
    fn words_in_every_script() {
        let t = "Hello, world. 今天天气很好。(Well-known) «quotes»";
        let words: Vec<&str> = word_spans(t).iter().map(|s| s.slice(t)).collect();
        assert_eq!(
            words,
            [
                "Hello,",
                "world.",
                "今",
                "天",
                "天",
                "气",
                "很",
                "好。",
                "(Well-",
                "known)",
                "«quotes»"
            ]
        );
        assert_eq!(word_starts(t).count(), words.len());
        assert_eq!(texts("…… ！", WordsSize::Fixed(2), 0), ["…… ！"]);
        assert!(word_spans(" \n ").is_empty());
        // Hangul words join; a Latin run inside a CJK word counts once.
        assert_eq!(word_starts("한국abc").count(), 3);
        assert_eq!(
            texts("他说：“好。”然后走了", WordsSize::Fixed(3), 0),
            ["他说：“好。”", "然后走", "了"]
        );
    }

    #[test]
    fn first_words_of_any_script() {
        assert_eq!(first_words("  One, two\nthree.  Four five", 3), "One, two\nthree.");
        assert_eq!(first_words("今天天气很好。", 2), "今天");
        assert_eq!(first_words("short", 10), "short");
        assert_eq!(first_words("a b", 0), "");
    }

    #[test]
    fn dynamic_uses_at_least_18_words() {
        let t = (0..40).map(|i| format!("w{i}")).collect::<Vec<_>>().join(" ");
        let w = windows(&t, WordsSize::Dynamic, 0);
        assert_eq!(w.len(), 3, "40 words in windows of 18");
        assert_eq!(w[2].slice(&t), "w36 w37 w38 w39");
    }
}
