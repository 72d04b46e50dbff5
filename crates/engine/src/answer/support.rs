//! Backing for an answer sentence that carries no quote the sources hold. Small local models
//! answer well ("1996", "the Denver Broncos") but rarely copy a quote as asked, so the sentence
//! itself is looked for: first as words of a source (found as a quote would be), then as the
//! one source sentence, or two adjacent ones, holding every word of the answer that the
//! question does not already hold. Nothing looser: an answer word no source sentence holds
//! leaves the sentence unverified.

use ckeep_core::Span;

use super::locate::{Found, MatchKind, locate};

/// Answer words matched by their first characters, so "substitutes" finds "substitute" and
/// "Mongols" "Mongol" in any language written with spaces.
const PREFIX_CHARS: usize = 5;

/// Chinese and Japanese characters that join words rather than carry content.
const PARTICLES: &str = "的了是在和与及或也都就而被把之其这那个着过吗呢吧のはがをにでとも";

/// Where `sentence` is backed within `within` of `text`: the sentence found as words of the
/// source, else the source sentences holding its new words.
pub(crate) fn support(sentence: &str, question: &str, text: &str, within: Span) -> Option<Found> {
    let bare = sentence.trim().trim_end_matches(['.', '。', '!', '?', '！', '？']);
    if let Some(found) = locate(bare, text, within) {
        return Some(found);
    }
    let asked = words(question);
    let new: Vec<String> = words(sentence).into_iter().filter(|w| !holds(&asked, w)).collect();
    if new.is_empty() {
        return None; // the sentence only repeats the question
    }
    let passage = within.slice(text);
    let spans = ckeep_text::chunk::sentence_spans(passage);
    let found = |from: usize, to: usize| {
        let seen = words(&passage[spans[from].start..spans[to].end]);
        new.iter().all(|w| holds(&seen, w))
    };
    let (from, to) = (0..spans.len())
        .map(|i| (i, i))
        .chain((1..spans.len()).map(|i| (i - 1, i)))
        .find(|&(from, to)| found(from, to))?;
    let span = Span::new(within.start + spans[from].start, within.start + spans[to].end);
    Some(Found { span, kind: MatchKind::Supported, edits: 0 })
}

/// The words of `text` that carry its content, lower-cased: numbers, runs of four letters or
/// more (so "was", "the", "by" do not need a source), and each CJK character alone (Chinese
/// and Japanese are written without spaces) but their commonest particles.
fn words(text: &str) -> Vec<String> {
    fn flush(word: &mut String, out: &mut Vec<String>) {
        let number = !word.is_empty() && word.chars().all(|c| c.is_ascii_digit());
        if number || word.chars().count() > 3 {
            out.push(std::mem::take(word));
        }
        word.clear();
    }
    let mut out = Vec::new();
    let mut word = String::new();
    for c in text.chars() {
        if ckeep_core::script::is_cjk(c) {
            flush(&mut word, &mut out);
            if !PARTICLES.contains(c) {
                out.push(c.to_string());
            }
        } else if c.is_alphanumeric() {
            word.extend(c.to_lowercase());
        } else if !(matches!(c, ',' | '.') && word.chars().all(|d| d.is_ascii_digit())) {
            // "304,016" and "3.5" stay one word; other punctuation ends one.
            flush(&mut word, &mut out);
        }
    }
    flush(&mut word, &mut out);
    out
}

/// Whether `seen` holds `word`, or a word sharing its first [`PREFIX_CHARS`] characters.
fn holds(seen: &[String], word: &str) -> bool {
    let prefix = |w: &str| w.chars().take(PREFIX_CHARS).collect::<String>();
    let long = word.chars().count() >= PREFIX_CHARS;
    seen.iter().any(|s| s == word || long && prefix(s) == prefix(word))
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "The Mongols took Bukhara in 1220. Turkish defenders held the citadel for \
                        twelve more days. The city burned.";

    fn at(sentence: &str, question: &str) -> Option<(&'static str, MatchKind)> {
        support(sentence, question, TEXT, Span::new(0, TEXT.len()))
            .map(|f| (f.span.slice(TEXT), f.kind))
    }

    #[test]
    fn the_answer_in_the_sources_words_is_located_as_a_quote() {
        assert_eq!(
            at("Turkish defenders", "Who held the citadel?"),
            Some(("Turkish defenders", MatchKind::Exact))
        );
    }

    #[test]
    fn a_paraphrase_is_backed_by_the_sentence_holding_its_new_words() {
        let (span, kind) =
            at("The citadel was held by the Turkish defenders.", "Who held the citadel?").unwrap();
        assert_eq!(span, "Turkish defenders held the citadel for twelve more days.");
        assert_eq!(kind, MatchKind::Supported);
        // Inflected forms match by their first characters.
        assert!(at("The Mongol took it.", "Who took Bukhara?").is_some());
    }

    #[test]
    fn a_word_no_source_sentence_holds_leaves_it_unbacked() {
        assert_eq!(at("The Persian defenders held it.", "Who held the citadel?"), None);
        assert_eq!(at("It was held in 1221.", "When was the citadel held?"), None);
        // Repeating the question backs nothing.
        assert_eq!(at("Who held the citadel?", "Who held the citadel?"), None);
    }

    #[test]
    fn numbers_and_chinese() {
        assert_eq!(words("304,016 companies in 2006."), ["304016", "companies", "2006"]);
        let text = "巴黎是法国的首都。柏林是德国的首都。";
        let found = support("法国首都是巴黎", "法国的首都是哪里？", text, Span::new(0, text.len()))
            .unwrap();
        assert_eq!(found.span.slice(text), "巴黎是法国的首都。");
    }
}
