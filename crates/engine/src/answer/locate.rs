//! Finding a quote in the stored text, so that a citation comes back as a byte span a reader can
//! check: exactly as written, then with whitespace, case, character width, quotes and dashes
//! folded (a model copies "naïve  café" as "Naïve café", a full-width "ＡＩ" as "AI"), then with a
//! few slips (a dropped or changed letter, one edit in eight characters) by approximate
//! substring matching (Sellers' algorithm) on the folded text. Nothing looser: a quote that
//! needs more is not the source's words, and is shown as unverified.

use ckeep_core::Span;
use serde::Serialize;

/// How a quote was found in its source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum MatchKind {
    /// Byte for byte.
    Exact,
    /// After folding whitespace, case, width, quotes and dashes.
    Folded,
    /// After folding, with a few edits (see [`Found::edits`]).
    Fuzzy,
    /// Not a quote: the source sentence holding every word of the answer sentence that the
    /// question does not (see `support`).
    Supported,
}

impl MatchKind {
    /// Its name, as in JSON.
    pub fn name(self) -> &'static str {
        match self {
            Self::Exact => "exact",
            Self::Folded => "folded",
            Self::Fuzzy => "fuzzy",
            Self::Supported => "supported",
        }
    }
}

/// Where a quote stands in a text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Found {
    /// The bytes of the text that the quote stands for.
    pub span: Span,
    /// How it was found.
    pub kind: MatchKind,
    /// Characters inserted, dropped or changed between the quote and the text (fuzzy only).
    pub edits: usize,
}

/// Shortest quote looked for, in folded characters: shorter ones ("a", "it") match anywhere.
const MIN_QUOTE_CHARS: usize = 3;
/// Shortest quote matched with slips: on short quotes one edit changes the meaning.
const MIN_FUZZY_CHARS: usize = 12;
/// Longest quote matched with slips (the matching costs its length times the text's).
const MAX_FUZZY_CHARS: usize = 400;
/// One edit allowed per this many characters of a fuzzy match.
const CHARS_PER_EDIT: usize = 8;

/// Where `quote` stands in `text` within `within`: exact, else folded, else fuzzy; `None` when
/// it is not there (or too short to tell).
pub fn locate(quote: &str, text: &str, within: Span) -> Option<Found> {
    let quote = quote.trim();
    let hay = within.slice(text);
    let (needle, _) = fold(quote, 0);
    let needle = trim_spaces(&needle);
    if needle.len() < MIN_QUOTE_CHARS {
        return None;
    }
    if let Some(i) = hay.find(quote) {
        let span = Span::new(within.start + i, within.start + i + quote.len());
        return Some(Found { span, kind: MatchKind::Exact, edits: 0 });
    }
    let (folded, origin) = fold(hay, within.start);
    let span_of = |from: usize, to: usize| Span::new(origin[from].start, origin[to - 1].end);
    if let Some(i) = find(&folded, needle) {
        return Some(Found {
            span: span_of(i, i + needle.len()),
            kind: MatchKind::Folded,
            edits: 0,
        });
    }
    if needle.len() < MIN_FUZZY_CHARS || needle.len() > MAX_FUZZY_CHARS {
        return None;
    }
    let (from, to, edits) = fuzzy(needle, &folded, needle.len() / CHARS_PER_EDIT)?;
    Some(Found { span: span_of(from, to), kind: MatchKind::Fuzzy, edits })
}

/// `text` folded for matching, one entry per folded character with the bytes it came from
/// (offset by `base`): runs of whitespace become one space, full-width forms their ASCII
/// letters, curly quotes straight ones, dashes a hyphen, letters lower case; soft hyphens and
/// zero-width characters go.
fn fold(text: &str, base: usize) -> (Vec<char>, Vec<Span>) {
    let mut chars = Vec::with_capacity(text.len());
    let mut origin: Vec<Span> = Vec::with_capacity(text.len());
    for (i, c) in text.char_indices() {
        let span = Span::new(base + i, base + i + c.len_utf8());
        let c = match c {
            '\u{00AD}' | '\u{200B}' | '\u{200C}' | '\u{200D}' | '\u{FEFF}' => continue,
            c if c.is_whitespace() => ' ',
            '\u{FF01}'..='\u{FF5E}' => char::from_u32(c as u32 - 0xFEE0).unwrap_or(c),
            '‘' | '’' | '‚' | '‛' | '′' => '\'',
            '“' | '”' | '„' | '‟' | '″' => '"',
            '‐' | '‑' | '‒' | '–' | '—' | '―' | '−' => '-',
            c => c,
        };
        if c == ' ' && chars.last() == Some(&' ') {
            if let Some(last) = origin.last_mut() {
                last.end = span.end;
            }
            continue;
        }
        for lower in c.to_lowercase() {
            chars.push(lower);
            origin.push(span);
        }
    }
    (chars, origin)
}

fn trim_spaces(chars: &[char]) -> &[char] {
    let start = chars.iter().position(|&c| c != ' ').unwrap_or(chars.len());
    let end = chars.iter().rposition(|&c| c != ' ').map_or(start, |e| e + 1);
    &chars[start..end]
}

/// The first place `needle` stands in `hay`.
fn find(hay: &[char], needle: &[char]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// The stretch of `hay` closest to `needle` by edit distance, if within `max_edits` (at least
/// one): `(start, end, edits)`. Sellers' algorithm finds where the best match ends (a match may
/// start anywhere); the same recurrence run backwards from that end finds where it starts.
fn fuzzy(needle: &[char], hay: &[char], max_edits: usize) -> Option<(usize, usize, usize)> {
    let max_edits = max_edits.max(1);
    let (edits, end) = best_end(needle, hay)?;
    if edits > max_edits {
        return None;
    }
    // Backwards from `end`: the needle reversed against the text before `end` reversed,
    // anchored at `end`; the match is at most needle + edits long.
    let reach = (needle.len() + edits).min(end);
    let back: Vec<char> = hay[end - reach..end].iter().rev().copied().collect();
    let reversed: Vec<char> = needle.iter().rev().copied().collect();
    let mut column: Vec<usize> = (0..=reversed.len()).collect();
    let mut best = (column[reversed.len()], 0);
    for (j, &h) in back.iter().enumerate() {
        let mut diagonal = column[0];
        column[0] = j + 1;
        for (i, &n) in reversed.iter().enumerate() {
            let next = (diagonal + usize::from(n != h)).min(column[i + 1] + 1).min(column[i] + 1);
            diagonal = column[i + 1];
            column[i + 1] = next;
        }
        let start = end - (j + 1);
        let edits = column[reversed.len()];
        if edits < best.0
            || (edits == best.0 && word_start(hay, start) && !word_start(hay, end - best.1))
        {
            best = (edits, j + 1);
        }
    }
    Some((end - best.1, end, edits))
}

/// Sellers' algorithm: the fewest edits turning `needle` into some stretch of `hay`, and where
/// the first such stretch ends.
fn best_end(needle: &[char], hay: &[char]) -> Option<(usize, usize)> {
    let mut column: Vec<usize> = (0..=needle.len()).collect();
    let mut best: Option<(usize, usize)> = None;
    for (j, &h) in hay.iter().enumerate() {
        let mut diagonal = column[0];
        column[0] = 0;
        for (i, &n) in needle.iter().enumerate() {
            let next = (diagonal + usize::from(n != h)).min(column[i + 1] + 1).min(column[i] + 1);
            diagonal = column[i + 1];
            column[i + 1] = next;
        }
        let edits = column[needle.len()];
        // Fewest edits; of equals, one that ends a word rather than cuts it.
        let better = best.is_none_or(|(b, e)| {
            edits < b || (edits == b && word_end(hay, j + 1) && !word_end(hay, e))
        });
        if better {
            best = Some((edits, j + 1));
        }
    }
    best
}

/// Whether a match starting at `at` starts a word.
fn word_start(hay: &[char], at: usize) -> bool {
    at == 0 || !hay[at - 1].is_alphanumeric()
}

/// Whether a match ending at `at` ends a word.
fn word_end(hay: &[char], at: usize) -> bool {
    at == hay.len() || !hay[at].is_alphanumeric()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(quote: &str, text: &str) -> Option<(String, MatchKind, usize)> {
        locate(quote, text, Span::new(0, text.len()))
            .map(|f| (f.span.slice(text).to_string(), f.kind, f.edits))
    }

    #[test]
    fn exact_then_folded_then_a_few_slips() {
        let text = "The  Eiffel Tower is 330 metres\n(1,083 ft) tall — about the height of an 81-storey building.";
        assert_eq!(at("330 metres", text), Some(("330 metres".into(), MatchKind::Exact, 0)));
        // Whitespace, case and the dash folded; the span is the text's own bytes.
        assert_eq!(
            at("the eiffel tower is 330 metres (1,083 ft) tall - about", text),
            Some((
                "The  Eiffel Tower is 330 metres\n(1,083 ft) tall — about".into(),
                MatchKind::Folded,
                0
            ))
        );
        // Three slips in 25 characters: found, and the span ends where the text's word does
        // ("metr" would be as close).
        let found = at("Eifel Tower is 330 meters", text).unwrap();
        assert_eq!(found, ("Eiffel Tower is 330 metres".into(), MatchKind::Fuzzy, 3));
        // Too many slips, too short, or not there.
        assert_eq!(at("the Eiffel Tower is 500 feet wide", text), None);
        assert_eq!(at("Eifel", text), None);
        assert_eq!(at("a", text), None);
        assert_eq!(at("a bridge over the river Seine", text), None);
    }

    #[test]
    fn full_width_and_chinese_text() {
        let text = "埃菲尔铁塔高３３０米，是巴黎的地标。ＡＩ  研究";
        assert_eq!(at("巴黎的地标", text), Some(("巴黎的地标".into(), MatchKind::Exact, 0)));
        assert_eq!(at("高330米", text), Some(("高３３０米".into(), MatchKind::Folded, 0)));
        assert_eq!(at("ai 研究", text), Some(("ＡＩ  研究".into(), MatchKind::Folded, 0)));
        // One character changed in a long quote.
        let found = at("埃菲尔铁塔高330米，是巴黎的地方。", text).unwrap();
        assert_eq!(found.0, "埃菲尔铁塔高３３０米，是巴黎的地标。");
        assert_eq!((found.1, found.2), (MatchKind::Fuzzy, 1));
    }

    #[test]
    fn only_within_the_span_given() {
        let text = "Alpha beta gamma. Delta epsilon zeta.";
        let second = Span::new(18, text.len());
        assert_eq!(locate("beta gamma", text, second), None);
        let found = locate("epsilon", text, second).unwrap();
        assert_eq!(found.span, Span::new(24, 31));
    }
}
