//! The `cjk` and `jieba` analyzers: unspaced runs (Han, kana, Hangul) as bigrams or jieba
//! words, and every other word through the English pipeline.

use std::sync::LazyLock;

use ckeep_core::script::{CjkScript, cjk_script, is_cjk};
use jieba_rs::Jieba;
use unicode_segmentation::UnicodeSegmentation;

/// jieba with its compiled-in dictionary; built once (about half a second) and shared.
static JIEBA: LazyLock<Jieba> = LazyLock::new(Jieba::new);

/// Appends the terms of `text` to `out`: maximal runs of CJK characters as overlapping bigrams,
/// or, with `segment_han`, their Han stretches as jieba words (search mode); between the runs,
/// Unicode words (UAX #29) through the English pipeline.
pub(super) fn terms(text: &str, segment_han: bool, out: &mut Vec<String>) {
    for (run, cjk) in runs(text, is_cjk) {
        if !cjk {
            // UAX #29 keeps a combining mark with the character before it, even a space (a
            // Devanagari sign after a space is an alphabetic "word" " ं"): terms have no spaces.
            for word in run.unicode_words().flat_map(str::split_whitespace) {
                super::english(word, out);
            }
        } else if segment_han {
            for (part, han) in runs(run, |c| cjk_script(c) == Some(CjkScript::Han)) {
                if han {
                    out.extend(
                        JIEBA.cut_for_search(part, true).into_iter().map(|t| t.word.to_string()),
                    );
                } else {
                    bigrams(part, out);
                }
            }
        } else {
            bigrams(run, out);
        }
    }
}

/// Overlapping character bigrams of a run; a run of one character is its own term.
fn bigrams(run: &str, out: &mut Vec<String>) {
    let starts: Vec<usize> = run.char_indices().map(|(i, _)| i).chain([run.len()]).collect();
    match starts.len() {
        0 | 1 => {}
        2 => out.push(run.to_string()),
        _ => out.extend(starts.windows(3).map(|w| run[w[0]..w[2]].to_string())),
    }
}

/// `text` cut into maximal runs of characters on which `pred` agrees, with its value.
fn runs(text: &str, pred: impl Fn(char) -> bool) -> impl Iterator<Item = (&str, bool)> {
    let mut rest = text;
    std::iter::from_fn(move || {
        let first = rest.chars().next()?;
        let kind = pred(first);
        let end =
            rest.char_indices().find(|&(_, c)| pred(c) != kind).map_or(rest.len(), |(i, _)| i);
        let (run, tail) = rest.split_at(end);
        rest = tail;
        Some((run, kind))
    })
}

#[cfg(test)]
mod tests {
    use crate::Analyzer;

    #[test]
    fn a_combining_mark_after_a_space_makes_no_term_with_a_space() {
        // Found on a CMRC article with characters dropped: "वाराणसी ं" before the fix gave " ं".
        for a in [Analyzer::Cjk, Analyzer::Jieba] {
            let terms = a.terms("瓦拉纳西（वाराणसी ं）是印度的城市 \u{901}x");
            let spaced = terms.iter().any(|t| t.is_empty() || t.contains(char::is_whitespace));
            assert!(!spaced, "{terms:?}");
            assert!(terms.iter().any(|t| t == "城市"), "{terms:?}");
        }
    }

    #[test]
    fn cjk_bigrams_and_english_words() {
        let a = Analyzer::Cjk;
        assert_eq!(a.terms("相似度"), ["相似", "似度"]);
        assert_eq!(a.terms("天"), ["天"]);
        // Punctuation ends a run; Latin words go through the English pipeline.
        assert_eq!(
            a.terms("今天天气，很好。Running dogs!"),
            ["今天", "天天", "天气", "很好", "run", "dog"]
        );
        // Kana and Hangul too, and bigrams across scripts as Lucene's CJKBigramFilter does.
        assert_eq!(a.terms("東京タワー"), ["東京", "京タ", "タワ", "ワー"]);
        assert_eq!(a.terms("한국어 검색"), ["한국", "국어", "검색"]);
        // Full-width Latin is folded.
        assert_eq!(a.terms("ＢＭ２５算法"), ["bm25", "算法"]);
    }

    #[test]
    fn jieba_words_in_search_mode() {
        let a = Analyzer::Jieba;
        let terms = a.terms("我来到北京清华大学");
        for w in ["北京", "清华", "大学", "清华大学"] {
            assert!(terms.iter().any(|t| t == w), "{w} in {terms:?}");
        }
        // Traditional text meets Simplified words.
        let trad = a.terms("歷史與傳統");
        assert!(trad.iter().any(|t| t == "历史"), "{trad:?}");
        assert!(trad.iter().any(|t| t == "传统"), "{trad:?}");
        assert_eq!(a.terms("天气 weather"), ["天气", "weather"]);
        // Kana between Han stretches become bigrams.
        assert!(a.terms("東京のタワー").iter().any(|t| t == "タワ"));
    }

    #[test]
    fn nothing_is_lost_or_invented() {
        for a in [Analyzer::Cjk, Analyzer::Jieba] {
            assert!(a.terms("").is_empty());
            assert!(a.terms("。，！？ ……").is_empty());
            assert_eq!(a.terms("the of"), Vec::<String>::new());
        }
    }
}
