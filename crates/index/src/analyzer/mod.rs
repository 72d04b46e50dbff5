//! Text to index terms. Chunks and queries go through the same analyzer, so a stored index and
//! a query always agree; its id is recorded in the store manifest.
//!
//! - [`Analyzer::Standard`]: split at non-alphanumeric characters, lower-case, drop English stop
//!   words, Snowball English stemmer. An unspaced Chinese or Japanese run stays one term, so it
//!   suits spaced scripts only.
//! - [`Analyzer::Cjk`]: Unicode words (UAX #29); runs of Han, kana and Hangul become overlapping
//!   character bigrams (a lone character stays a unigram), the approach of Lucene's
//!   `CJKAnalyzer`; every other word goes through the English pipeline.
//! - [`Analyzer::Jieba`]: Han runs folded to Simplified characters and cut into words by jieba
//!   in search mode (long words also yield their dictionary sub-words); kana and Hangul as in
//!   `Cjk`; every other word through the English pipeline.

mod cjk;
mod fold;

use std::fmt;
use std::str::FromStr;
use std::sync::LazyLock;

use ckeep_core::script::{CjkScript, cjk_script};
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

static STEMMER: LazyLock<Stemmer> = LazyLock::new(|| Stemmer::create(Algorithm::English));

/// How text becomes terms; a store setting, chosen on the first `add`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Analyzer {
    /// The English pipeline (the default for spaced scripts).
    #[default]
    Standard,
    /// UAX #29 words, CJK runs as overlapping bigrams.
    Cjk,
    /// Chinese word segmentation (jieba, search mode) after Traditional → Simplified folding.
    Jieba,
}

impl Analyzer {
    /// Every analyzer, for `--help` and errors.
    pub const ALL: [Analyzer; 3] = [Analyzer::Standard, Analyzer::Cjk, Analyzer::Jieba];

    /// The name users type (`--analyzer`, `analyzer=`).
    pub fn name(self) -> &'static str {
        match self {
            Analyzer::Standard => "standard",
            Analyzer::Cjk => "cjk",
            Analyzer::Jieba => "jieba",
        }
    }

    /// The versioned id recorded in a store's manifest; changing an analysis must change it.
    pub fn id(self) -> &'static str {
        match self {
            Analyzer::Standard => "unicode-lower-stop33-snowball-en/v1",
            Analyzer::Cjk => "cjk-uax29-bigram+en/v1",
            Analyzer::Jieba => "jieba-search-t2s+en/v1",
        }
    }

    /// The analyzer a manifest id names (`None`: a store from another ckeep version).
    pub fn from_id(id: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|a| a.id() == id)
    }

    /// The analyzer `auto` picks for documents like `sample`: `jieba` when at least a tenth of
    /// the letters are Han and nearly all the unspaced ones are (Chinese), `cjk` when kana or
    /// Hangul are among them (Japanese, Korean, mixed), else `standard`.
    pub fn detect<'a>(sample: impl IntoIterator<Item = &'a str>) -> Self {
        /// Enough characters to tell the script of a collection.
        const SAMPLE_CHARS: usize = 200_000;
        let (mut letters, mut han, mut other_cjk) = (0usize, 0usize, 0usize);
        let chars = sample.into_iter().flat_map(str::chars).take(SAMPLE_CHARS);
        for c in chars.filter(|c| c.is_alphabetic()) {
            letters += 1;
            match cjk_script(c) {
                Some(CjkScript::Han) => han += 1,
                Some(_) => other_cjk += 1,
                None => {}
            }
        }
        let cjk = han + other_cjk;
        if cjk == 0 || cjk * 10 < letters {
            Analyzer::Standard
        } else if other_cjk * 20 >= cjk {
            Analyzer::Cjk
        } else {
            Analyzer::Jieba
        }
    }

    /// The terms of `text`, in order, with repeats.
    pub fn terms(self, text: &str) -> Vec<String> {
        let mut out = Vec::new();
        match self {
            Analyzer::Standard => {
                for token in text.split(|c: char| !c.is_alphanumeric()).filter(|t| !t.is_empty()) {
                    english(token, &mut out);
                }
            }
            Analyzer::Cjk => cjk::terms(&fold::fold_width(text), false, &mut out),
            Analyzer::Jieba => cjk::terms(&fold::fold_simplified(text), true, &mut out),
        }
        out
    }

    /// Distinct terms of `text` with their counts (sorted by term), and the number of terms.
    pub fn term_counts(self, text: &str) -> (Vec<(String, u32)>, u32) {
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

/// The English pipeline for one word: lower-cased, stop words and over-long tokens dropped,
/// Porter2-stemmed.
fn english(token: &str, out: &mut Vec<String>) {
    let lower: String = token.chars().flat_map(char::to_lowercase).collect();
    if lower.len() > MAX_TERM_BYTES || STOP_WORDS.binary_search(&lower.as_str()).is_ok() {
        return;
    }
    out.push(STEMMER.stem(&lower).into_owned());
}

impl fmt::Display for Analyzer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Analyzer {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        Self::ALL.into_iter().find(|a| a.name() == s).ok_or_else(|| {
            let names: Vec<&str> = Self::ALL.iter().map(|a| a.name()).collect();
            format!("unknown analyzer `{s}`: expected {}", names.join(", "))
        })
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
    fn standard_analysis_is_unchanged() {
        let a = Analyzer::default();
        assert_eq!(
            a.terms("Cats, CATS and cat's jumping—in Zürich 2024!"),
            ["cat", "cat", "cat", "s", "jump", "zürich", "2024"]
        );
        assert!(a.terms("the of and").is_empty());
        let (counts, len) = a.term_counts("dog cat dog");
        assert_eq!(counts, [("cat".to_string(), 1), ("dog".to_string(), 2)]);
        assert_eq!(len, 3);
        // The id existing stores carry.
        assert_eq!(Analyzer::from_id("unicode-lower-stop33-snowball-en/v1"), Some(a));
    }

    #[test]
    fn names_and_ids_round_trip() {
        for a in Analyzer::ALL {
            assert_eq!(a.name().parse::<Analyzer>(), Ok(a));
            assert_eq!(Analyzer::from_id(a.id()), Some(a));
        }
        assert!("klingon".parse::<Analyzer>().unwrap_err().contains("standard, cjk, jieba"));
    }

    #[test]
    fn detects_the_script_of_a_collection() {
        assert_eq!(Analyzer::detect(["Plain English text, with a 中 or two."]), Analyzer::Standard);
        assert_eq!(Analyzer::detect(["今天天气很好，我们去公园散步。"]), Analyzer::Jieba);
        assert_eq!(Analyzer::detect(["歷史與傳統"]), Analyzer::Jieba);
        assert_eq!(Analyzer::detect(["今日はいい天気ですね。"]), Analyzer::Cjk);
        assert_eq!(Analyzer::detect(["오늘은 날씨가 좋다"]), Analyzer::Cjk);
        assert_eq!(Analyzer::detect([""]), Analyzer::Standard);
    }
}
