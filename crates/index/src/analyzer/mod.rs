//! Text to index terms. Chunks and queries go through the same analyzer, so a stored index and
//! a query always agree; its name is recorded in the store manifest.

use rust_stemmers::{Algorithm, Stemmer};

/// Lucene's English stop words (`EnglishAnalyzer.ENGLISH_STOP_WORDS_SET`), as BEIR's BM25
/// baselines use them.
const STOP_WORDS: [&str; 33] = [
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it",
    "no", "not", "of", "on", "or", "such", "that", "the", "their", "then", "there", "these",
    "they", "this", "to", "was", "will", "with",
];

/// Longest term kept, in bytes; longer tokens are usually encoded data, not words.
const MAX_TERM_BYTES: usize = 64;

/// Splits text at non-alphanumeric characters, lower-cases, drops English stop words and
/// applies the Snowball English (Porter2) stemmer.
pub struct Analyzer {
    stemmer: Stemmer,
}

impl std::fmt::Debug for Analyzer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(Self::NAME)
    }
}

impl Default for Analyzer {
    fn default() -> Self {
        Self { stemmer: Stemmer::create(Algorithm::English) }
    }
}

impl Analyzer {
    /// Name recorded in a store's manifest; changing the analysis must change the name.
    pub const NAME: &'static str = "unicode-lower-stop33-snowball-en/v1";

    /// The terms of `text`, in order, with repeats.
    pub fn terms(&self, text: &str) -> Vec<String> {
        let mut out = Vec::new();
        let mut lower = String::new();
        for token in text.split(|c: char| !c.is_alphanumeric()).filter(|t| !t.is_empty()) {
            lower.clear();
            lower.extend(token.chars().flat_map(char::to_lowercase));
            if lower.len() > MAX_TERM_BYTES || STOP_WORDS.binary_search(&lower.as_str()).is_ok() {
                continue;
            }
            out.push(self.stemmer.stem(&lower).into_owned());
        }
        out
    }

    /// Distinct terms of `text` with their counts (sorted by term), and the number of terms.
    pub fn term_counts(&self, text: &str) -> (Vec<(String, u32)>, u32) {
        let mut terms = self.terms(text);
        let len = terms.len() as u32;
        terms.sort_unstable();
        let mut counts: Vec<(String, u32)> = Vec::new();
        for t in terms {
            match counts.last_mut() {
                Some((last, n)) if *last == t => *n += 1,
                _ => counts.push((t, 1)),
            }
        }
        (counts, len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_words_are_sorted_for_binary_search() {
        assert!(STOP_WORDS.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn analysis() {
        let a = Analyzer::default();
        assert_eq!(
            a.terms("Cats, CATS and cat's jumping—in Zürich 2024!"),
            ["cat", "cat", "cat", "s", "jump", "zürich", "2024"]
        );
        assert!(a.terms("the of and").is_empty());
        let (counts, len) = a.term_counts("dog cat dog");
        assert_eq!(counts, [("cat".to_string(), 1), ("dog".to_string(), 2)]);
        assert_eq!(len, 3);
    }
}
