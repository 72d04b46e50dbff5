//! The context an answer is written from: a search's results cut into passages (each span a
//! result returns, expansion included), taken best chunk first, merged where they touch in one
//! document, near copies of a passage already taken dropped, until the token budget is spent;
//! then numbered, as the prompt cites them.

use std::collections::{HashMap, HashSet};

use ckeep_core::Span;
use serde::Serialize;

use crate::request::SearchResult;

/// Fewest tokens worth a passage: with less of the budget left, assembly stops.
const MIN_PASSAGE_TOKENS: usize = 24;
/// Share of a passage's character 8-grams found in one already taken that makes it a near
/// copy (the same paragraph in two documents, a quoted abstract).
const NEAR_COPY: f64 = 0.8;

/// One numbered source of an answer: a byte span of a stored document.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Passage {
    /// Its number in the prompt and in citations (1-based).
    pub number: usize,
    /// The document.
    pub doc_id: String,
    /// The document's title (may be empty).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub title: String,
    /// Where it stands in the stored document.
    pub span: Span,
    /// Its text.
    pub text: String,
    /// The rank of the search result it came from (the best, when merged).
    pub rank: usize,
    /// The best chunk score inside it.
    pub score: f32,
    /// Its tokens in the prompt (heading included).
    pub tokens: usize,
}

impl Passage {
    /// How the prompt shows it: its number and title on one line, its text below.
    pub(crate) fn render(number: usize, doc_id: &str, title: &str, text: &str) -> String {
        let name = if title.trim().is_empty() { doc_id } else { title.trim() };
        format!("[{number}] {name}\n{}\n", text.trim())
    }
}

/// What assembly did besides taking passages.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Assembly {
    /// Context tokens used (of the budget).
    pub tokens: usize,
    /// The budget.
    pub budget: usize,
    /// Spans merged into a passage of the same document they touched.
    pub merged: usize,
    /// Spans left out as near copies of a passage taken.
    pub near_copies: usize,
    /// Spans left out or cut because the budget was spent.
    pub cut: usize,
}

/// A document's text and title, as assembly reads them.
pub(crate) struct Source {
    pub title: String,
    pub text: String,
}

/// A span a result offers, with the score of the best chunk in it.
struct Candidate<'r> {
    result: &'r SearchResult,
    span: Span,
    best: Span,
    score: f32,
}

/// Passages from `results` within `budget` tokens (counted by `count`), reading each document
/// from `sources`.
pub(crate) fn assemble(
    results: &[SearchResult],
    sources: &HashMap<String, Source>,
    budget: usize,
    count: &dyn Fn(&str) -> usize,
) -> (Vec<Passage>, Assembly) {
    let mut candidates: Vec<Candidate<'_>> = results
        .iter()
        .flat_map(|r| {
            r.spans.iter().map(move |&span| {
                let inside = r.chunks.iter().filter(|c| within(c.span, span));
                let best = inside.max_by(|a, b| a.score.total_cmp(&b.score));
                Candidate {
                    result: r,
                    span,
                    best: best.map_or(span, |c| c.span),
                    score: best.map_or(r.score, |c| c.score),
                }
            })
        })
        .collect();
    // Best chunk first across results (a second document's best chunk before the first's
    // fifth); ties keep the ranking.
    candidates.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.result.rank.cmp(&b.result.rank)));

    let mut taken: Vec<Taken> = Vec::new();
    let mut stats = Assembly { budget, ..Assembly::default() };
    for c in candidates {
        let Some(source) = sources.get(&c.result.doc_id) else { continue };
        let left = budget.saturating_sub(stats.tokens);
        if left < MIN_PASSAGE_TOKENS {
            stats.cut += 1;
            continue;
        }
        let cost = |span: Span, number: usize| {
            count(&Passage::render(
                number,
                &c.result.doc_id,
                &source.title,
                span.slice(&source.text),
            ))
        };
        // Touching a passage of the same document: the two become one.
        let same =
            |t: &&mut Taken| t.doc_id == c.result.doc_id && touches(&source.text, t.span, c.span);
        if let Some(t) = taken.iter_mut().find(same) {
            let union = Span::new(t.span.start.min(c.span.start), t.span.end.max(c.span.end));
            let tokens = cost(union, t.number);
            if tokens - t.tokens.min(tokens) <= left {
                stats.tokens = stats.tokens - t.tokens + tokens;
                (t.span, t.tokens) = (union, tokens);
                t.grams = grams(union.slice(&source.text));
                t.score = t.score.max(c.score);
                t.rank = t.rank.min(c.result.rank);
                stats.merged += 1;
            } else {
                stats.cut += 1;
            }
            continue;
        }
        let text = c.span.slice(&source.text);
        let g = grams(text);
        if taken.iter().any(|t| near_copy(&g, &t.grams)) {
            stats.near_copies += 1;
            continue;
        }
        let number = taken.len() + 1;
        let mut span = c.span;
        let mut tokens = cost(span, number);
        if tokens > left {
            // Too long: the part around its best chunk that fits, else nothing.
            stats.cut += 1;
            match fit(&source.text, c.span, c.best, left, &|s| cost(s, number)) {
                Some(part) => span = part,
                None => continue,
            }
            tokens = cost(span, number);
        }
        stats.tokens += tokens;
        taken.push(Taken {
            number,
            doc_id: c.result.doc_id.clone(),
            span,
            tokens,
            score: c.score,
            rank: c.result.rank,
            grams: grams(span.slice(&source.text)),
        });
    }
    let passages = taken
        .into_iter()
        .map(|t| {
            let source = &sources[&t.doc_id];
            Passage {
                number: t.number,
                title: source.title.clone(),
                text: t.span.slice(&source.text).to_string(),
                doc_id: t.doc_id,
                span: t.span,
                rank: t.rank,
                score: t.score,
                tokens: t.tokens,
            }
        })
        .collect();
    (passages, stats)
}

/// A passage while assembly runs.
struct Taken {
    number: usize,
    doc_id: String,
    span: Span,
    tokens: usize,
    score: f32,
    rank: usize,
    grams: HashSet<u64>,
}

fn within(inner: Span, outer: Span) -> bool {
    outer.start <= inner.start && inner.end <= outer.end
}

/// Overlapping, adjacent, or apart by whitespace only.
fn touches(text: &str, a: Span, b: Span) -> bool {
    let (first, second) = if a.start <= b.start { (a, b) } else { (b, a) };
    second.start <= first.end || text[first.end..second.start].trim().is_empty()
}

/// The longest run of whole sentences of `span` that starts at the sentence holding `best`'s
/// start and fits in `left` tokens (`cost` counts a span as its passage); when not even that
/// sentence fits, its longest prefix that does, cut at a character boundary.
fn fit(
    text: &str,
    span: Span,
    best: Span,
    left: usize,
    cost: &dyn Fn(Span) -> usize,
) -> Option<Span> {
    let sentences = ckeep_text::chunk::sentence_spans(span.slice(text));
    let sentences: Vec<Span> =
        sentences.iter().map(|s| Span::new(span.start + s.start, span.start + s.end)).collect();
    let first = sentences.iter().position(|s| s.end > best.start).unwrap_or(0);
    let start = sentences.get(first).map_or(span.start, |s| s.start);
    let mut end = None;
    for s in &sentences[first.min(sentences.len())..] {
        if cost(Span::new(start, s.end)) > left {
            break;
        }
        end = Some(s.end);
    }
    if let Some(end) = end {
        return Some(Span::new(start, end));
    }
    // One long sentence: halve until a prefix fits, and end it at a space where there is one.
    let sentence_end = sentences.get(first).map_or(span.end, |s| s.end);
    let mut len = sentence_end - start;
    while len > 0 && cost(Span::new(start, floor_char(text, start + len))) > left {
        len /= 2;
    }
    let end = floor_char(text, start + len);
    let end =
        text[start..end].rfind(char::is_whitespace).filter(|&i| i > 0).map_or(end, |i| start + i);
    (end > start).then(|| Span::new(start, end))
}

fn floor_char(text: &str, mut i: usize) -> usize {
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// Hashed character 8-grams of `text`'s letters and digits, lower-cased (spacing and
/// punctuation ignored, so a copy re-wrapped or re-punctuated still matches).
fn grams(text: &str) -> HashSet<u64> {
    use std::hash::{Hash, Hasher};
    let chars: Vec<char> =
        text.chars().filter(|c| c.is_alphanumeric()).flat_map(char::to_lowercase).collect();
    chars
        .windows(8)
        .map(|w| {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            w.hash(&mut h);
            h.finish()
        })
        .collect()
}

/// Whether most of `candidate` is already in `taken`.
fn near_copy(candidate: &HashSet<u64>, taken: &HashSet<u64>) -> bool {
    !candidate.is_empty()
        && candidate.intersection(taken).count() as f64 >= NEAR_COPY * candidate.len() as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::ResultChunk;
    use ckeep_core::ChunkId;

    fn result(rank: usize, doc: &str, spans: &[(usize, usize, f32)]) -> SearchResult {
        SearchResult {
            rank,
            doc_id: doc.into(),
            score: spans.iter().map(|s| s.2).fold(0.0, f32::max),
            text: String::new(),
            spans: spans.iter().map(|&(a, b, _)| Span::new(a, b)).collect(),
            locations: Vec::new(),
            lines: Vec::new(),
            headings: String::new(),
            chunks: spans
                .iter()
                .map(|&(a, b, score)| ResultChunk {
                    chunk_id: ChunkId(0),
                    span: Span::new(a, b),
                    score,
                })
                .collect(),
            explain: None,
        }
    }

    fn words(text: &str) -> usize {
        text.split_whitespace().count()
    }

    fn sources() -> HashMap<String, Source> {
        let a = "Alpha one two three. Beta four five six. Gamma seven eight nine.";
        let b = "Delta ten eleven. Alpha one two three. Epsilon twelve.";
        let c = "Zeta thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty.";
        [("a", a), ("b", b), ("c", c)]
            .into_iter()
            .map(|(id, text)| (id.to_string(), Source { title: String::new(), text: text.into() }))
            .collect()
    }

    #[test]
    fn best_chunk_first_touching_spans_merged_copies_dropped() {
        let results = vec![
            result(1, "a", &[(0, 20, 3.0), (21, 40, 1.0)]),
            result(2, "b", &[(18, 38, 2.5), (0, 17, 2.0)]),
        ];
        let (passages, stats) = assemble(&results, &sources(), 1000, &words);
        let got: Vec<(usize, &str, &str)> =
            passages.iter().map(|p| (p.number, p.doc_id.as_str(), p.text.as_str())).collect();
        // a's two sentences touch: one passage. b's copy of "Alpha one two three." is dropped;
        // its "Delta" sentence is new.
        assert_eq!(
            got,
            vec![
                (1, "a", "Alpha one two three. Beta four five six."),
                (2, "b", "Delta ten eleven.")
            ]
        );
        assert_eq!((stats.merged, stats.near_copies, stats.cut), (1, 1, 0));
        assert_eq!(stats.tokens, passages.iter().map(|p| p.tokens).sum::<usize>());
    }

    #[test]
    fn the_budget_is_kept_and_a_long_passage_cut_to_its_best_part() {
        let results = vec![result(1, "a", &[(0, 64, 1.0)]), result(2, "c", &[(0, 74, 0.5)])];
        let four_per_word = |t: &str| 4 * words(t);
        // "[1] a" and three sentences are 56 tokens; with 44, two sentences fit, and the 4
        // tokens left take nothing more.
        let (passages, stats) = assemble(&results, &sources(), 44, &four_per_word);
        let got: Vec<&str> = passages.iter().map(|p| p.text.as_str()).collect();
        assert_eq!(got, vec!["Alpha one two three. Beta four five six."]);
        assert_eq!((stats.tokens, stats.cut), (40, 2));
        // One long sentence: cut at a space.
        let (passages, _) = assemble(&results[1..], &sources(), 30, &four_per_word);
        assert_eq!(passages[0].text, "Zeta thirteen fourteen fifteen");
        assert!(passages[0].tokens <= 30);
        // Less than a passage's worth: nothing.
        let (passages, stats) =
            assemble(&results, &sources(), MIN_PASSAGE_TOKENS - 1, &four_per_word);
        assert!(passages.is_empty() && stats.cut == 2, "{passages:?}");
    }
}
