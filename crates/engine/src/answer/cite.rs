//! Reading a model's answer: the citations it wrote (`[2: "exact words"]`, also `[2]`,
//! `[1, 3]`, `[Source 2: “…”]`, full-width brackets and CJK quotes 「…」) taken out of the text,
//! each remembered where it stood, and the text split into sentences that the citations are
//! attached to (a citation belongs to the sentence it ends, or stands in).

use ckeep_core::Span;

/// A citation as the model wrote it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Written {
    /// The source numbers (1-based, as the prompt numbered them).
    pub sources: Vec<usize>,
    /// The quote, if one was given.
    pub quote: Option<String>,
    /// Where it stood in the answer once the citations are taken out (a byte offset).
    pub at: usize,
}

/// An answer with its citations taken out: the text a reader sees, its sentences, and for each
/// sentence the citations written in or after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Parsed {
    /// The answer without citations.
    pub text: String,
    /// Its sentences (byte spans into `text`), each with its citations.
    pub sentences: Vec<(Span, Vec<Written>)>,
}

/// Reads an answer.
pub(crate) fn parse(answer: &str) -> Parsed {
    let mut text = String::with_capacity(answer.len());
    let mut written = Vec::new();
    let mut rest = answer;
    while let Some(open) = rest.find(['[', '【', '［']) {
        let (before, from) = rest.split_at(open);
        text.push_str(before);
        if let Some((sources, quote, len)) = citation(from) {
            rest = &from[len..];
            // "Paris [1]." reads "Paris."; "Paris. [1] It" reads "Paris. It".
            let next = rest.chars().next();
            if next.is_none_or(|c| c.is_whitespace() || is_closing_punctuation(c)) {
                text.truncate(text.trim_end_matches([' ', '\t']).len());
            }
            written.push(Written { sources, quote, at: text.len() });
        } else {
            let c = from.chars().next().expect("a bracket");
            text.push(c);
            rest = &from[c.len_utf8()..];
        }
    }
    text.push_str(rest);
    // "Answer: 1996" reads "1996"; an answer that is only a quoted citation reads as its quote.
    let mut trimmed_start = text.len() - text.trim_start().len();
    if let Some(label) =
        ["Answer:", "答案：", "答："].iter().find(|l| text.trim_start().starts_with(*l))
    {
        trimmed_start += label.len();
        trimmed_start += text[trimmed_start..].len() - text[trimmed_start..].trim_start().len();
    }
    if text[trimmed_start..].trim().is_empty()
        && let Some(quote) = written.iter().find_map(|w| w.quote.clone())
    {
        for w in &mut written {
            w.at = text.len() + quote.len();
        }
        text.push_str(&quote);
    }
    let text = text[trimmed_start..].trim().to_string();
    let spans = ckeep_text::chunk::sentence_spans(&text);
    let mut sentences: Vec<(Span, Vec<Written>)> =
        spans.into_iter().map(|s| (s, Vec::new())).collect();
    for mut w in written {
        w.at = w.at.saturating_sub(trimmed_start).min(text.len());
        // The last sentence starting before the citation (the first, for one at the start).
        let i = sentences.iter().filter(|(s, _)| s.start < w.at).count().saturating_sub(1);
        if let Some((_, cites)) = sentences.get_mut(i) {
            cites.push(w);
        }
    }
    Parsed { text, sentences }
}

fn is_closing_punctuation(c: char) -> bool {
    matches!(
        c,
        '.' | ',' | ';' | ':' | '!' | '?' | ')' | '。' | '，' | '；' | '：' | '！' | '？' | '、'
    )
}

/// A citation at the start of `s`: its sources, its quote, and its length in bytes.
fn citation(s: &str) -> Option<(Vec<usize>, Option<String>, usize)> {
    let mut p = Cursor { s, i: 0 };
    p.one_of(&['[', '【', '［'])?;
    p.spaces();
    for word in ["sources", "source", "来源", "資料", "资料", "出典"] {
        if p.keyword(word) {
            p.spaces();
            break;
        }
    }
    let mut sources = vec![p.number()?];
    loop {
        let save = p.i;
        p.spaces();
        if p.one_of(&[',', '，', ';', '、']).is_some() {
            p.spaces();
            if let Some(n) = p.number() {
                sources.push(n);
                continue;
            }
        }
        p.i = save;
        break;
    }
    p.spaces();
    let mut quote = None;
    if p.one_of(&[':', '：', ',', '，']).is_some() {
        p.spaces();
        let open = p.one_of(&['"', '“', '「', '『', '\'', '‘', '«'])?;
        let close = match open {
            '“' => &['”', '"'][..],
            '「' => &['」'][..],
            '『' => &['』'][..],
            '‘' => &['’', '\''][..],
            '«' => &['»'][..],
            '\'' => &['\''][..],
            _ => &['"', '”'][..],
        };
        let start = p.i;
        let len = p.rest().find(close)?;
        quote = Some(p.rest()[..len].to_string());
        p.i = start + len;
        p.one_of(close)?;
        p.spaces();
    }
    p.one_of(&[']', '】', '］'])?;
    Some((sources, quote, p.i))
}

/// A reading position in a string.
struct Cursor<'a> {
    s: &'a str,
    i: usize,
}

impl Cursor<'_> {
    fn rest(&self) -> &str {
        &self.s[self.i..]
    }

    fn one_of(&mut self, chars: &[char]) -> Option<char> {
        let c = self.rest().chars().next().filter(|c| chars.contains(c))?;
        self.i += c.len_utf8();
        Some(c)
    }

    fn spaces(&mut self) {
        let rest = self.rest();
        self.i += rest.len() - rest.trim_start_matches([' ', '\u{3000}']).len();
    }

    fn keyword(&mut self, word: &str) -> bool {
        let rest = self.rest();
        let found = rest.get(..word.len()).is_some_and(|w| w.eq_ignore_ascii_case(word));
        if found {
            self.i += word.len();
        }
        found
    }

    /// A source number (1 to 999).
    fn number(&mut self) -> Option<usize> {
        let rest = self.rest();
        let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        if digits == 0 || digits > 3 {
            return None;
        }
        let n = rest[..digits].parse().ok().filter(|&n| n > 0)?;
        self.i += digits;
        Some(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sentence's text and its citations' sources and quotes.
    type Cited<'a> = (&'a str, Vec<(Vec<usize>, Option<&'a str>)>);

    fn cited(p: &Parsed) -> Vec<Cited<'_>> {
        p.sentences
            .iter()
            .map(|(s, w)| {
                let cites = w.iter().map(|w| (w.sources.clone(), w.quote.as_deref())).collect();
                (s.slice(&p.text), cites)
            })
            .collect()
    }

    #[test]
    fn citations_are_taken_out_and_attached_to_their_sentences() {
        let p = parse(
            "The tower is 330 m tall [2: \"330 metres (1,083 ft) tall\"]. It was built in 1889 \
             [1][3: “completed in 1889”]. Nothing else [x] is cited [Source 4]",
        );
        assert_eq!(
            p.text,
            "The tower is 330 m tall. It was built in 1889. Nothing else [x] is cited"
        );
        assert_eq!(
            cited(&p),
            vec![
                ("The tower is 330 m tall.", vec![(vec![2], Some("330 metres (1,083 ft) tall"))]),
                (
                    "It was built in 1889.",
                    vec![(vec![1], None), (vec![3], Some("completed in 1889"))]
                ),
                ("Nothing else [x] is cited", vec![(vec![4], None)]),
            ]
        );
    }

    #[test]
    fn a_citation_after_the_full_stop_belongs_to_the_sentence_before() {
        let p = parse("Paris. [1, 2] Then Lyon.\n[3: 'Lyon is second']");
        assert_eq!(p.text, "Paris. Then Lyon.");
        assert_eq!(
            cited(&p),
            vec![
                ("Paris.", vec![(vec![1, 2], None)]),
                ("Then Lyon.", vec![(vec![3], Some("Lyon is second"))])
            ]
        );
    }

    #[test]
    fn chinese_brackets_and_quotes() {
        let p = parse("法国的首都是巴黎【1：「巴黎是法国的首都」】。它很大［2］。");
        assert_eq!(p.text, "法国的首都是巴黎。它很大。");
        assert_eq!(
            cited(&p),
            vec![
                ("法国的首都是巴黎。", vec![(vec![1], Some("巴黎是法国的首都"))]),
                ("它很大。", vec![(vec![2], None)]),
            ]
        );
    }

    #[test]
    fn a_label_is_dropped_and_a_bare_quote_is_the_answer() {
        let p = parse("Answer: 1996 [2]");
        assert_eq!(p.text, "1996");
        assert_eq!(cited(&p), [("1996", vec![(vec![2], None)])]);
        let p = parse("[2: \"20th Century fundamentally\"]");
        assert_eq!(p.text, "20th Century fundamentally");
        let quote = Some("20th Century fundamentally");
        assert_eq!(cited(&p), [("20th Century fundamentally", vec![(vec![2], quote)])]);
    }

    #[test]
    fn broken_citations_stay_text() {
        for answer in ["See [1: \"no end", "[0] zero", "[1234] big", "a [ 1 : ] b", "[]"] {
            let p = parse(answer);
            assert_eq!(p.text, answer.trim(), "{answer}");
            assert!(p.sentences.iter().all(|(_, w)| w.is_empty()), "{answer}");
        }
    }
}
