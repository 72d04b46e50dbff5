//! The answer without a language model: the sentences of the context that best answer the
//! question, ranked by the store's own retrieval models — BM25 over the context's sentences
//! with the store's analyzer, and the store's embedding model where it has one, fused by
//! reciprocal rank as hybrid search is. Each sentence is its own citation, located by
//! construction. The baseline a generated answer has to beat, and an answer that works offline
//! on any store.

use std::collections::HashMap;
use std::sync::Arc;

use ckeep_core::Span;
use ckeep_embed::{Embedder, InputKind};
use ckeep_index::{Analyzer, Bm25, RRF_K};

use super::context::Passage;
use crate::error::Result;

/// Sentences an extractive answer gives.
pub(crate) const SENTENCES: usize = 2;

/// A sentence of the context.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Extract {
    /// The passage's number.
    pub source: usize,
    /// Its bytes in the stored document.
    pub span: Span,
    /// Its text.
    pub text: String,
}

/// The best `SENTENCES` sentences of `passages` for `question`, best first; none when nothing in
/// them matches (no query term, and no model to judge by meaning).
pub(crate) fn answer(
    question: &str,
    passages: &[Passage],
    analyzer: Analyzer,
    model: Option<&Arc<dyn Embedder>>,
) -> Result<Vec<Extract>> {
    let sentences: Vec<Extract> = passages
        .iter()
        .flat_map(|p| {
            sentence_spans(&p.text).into_iter().map(move |s| Extract {
                source: p.number,
                span: Span::new(p.span.start + s.start, p.span.start + s.end),
                text: s.slice(&p.text).to_string(),
            })
        })
        .filter(|s| !s.text.starts_with('#'))
        .filter(|s| s.text.chars().filter(|c| c.is_alphanumeric()).count() >= 3)
        .collect();
    if sentences.is_empty() {
        return Ok(Vec::new());
    }
    let lexical = bm25(question, &sentences, analyzer);
    let mut lists = vec![rank(&lexical)];
    if let Some(model) = model {
        let texts: Vec<&str> = sentences.iter().map(|s| s.text.as_str()).collect();
        let (q, _) = model.embed(&[question], InputKind::Query)?;
        let (vectors, _) = model.embed(&texts, InputKind::Document)?;
        let dense: Vec<f32> = vectors.iter().map(|v| ckeep_index::dot(&q[0], v)).collect();
        lists.push(rank(&dense));
    } else if lexical.iter().all(|&s| s <= 0.0) {
        return Ok(Vec::new());
    }
    let fused: Vec<f32> = (0..sentences.len())
        .map(|i| lists.iter().map(|ranks| 1.0 / (RRF_K as f32 + ranks[i] as f32 + 1.0)).sum())
        .collect();
    let mut order: Vec<usize> = (0..sentences.len()).collect();
    order.sort_by(|&a, &b| fused[b].total_cmp(&fused[a]).then(a.cmp(&b)));
    Ok(order.into_iter().take(SENTENCES).map(|i| sentences[i].clone()).collect())
}

/// The sentences of `text` with hard-wrapped lines read as one: a line break alone is a space
/// to the sentence splitter (Unicode ends a sentence at every line break), a blank line still
/// ends a paragraph. The offsets are `text`'s, as the copy keeps every byte's place.
fn sentence_spans(text: &str) -> Vec<Span> {
    let bytes = text.as_bytes();
    let unwrapped: String = text
        .char_indices()
        .map(|(i, c)| {
            let lone = c == '\n'
                && (i == 0 || bytes[i - 1] != b'\n')
                && bytes.get(i + 1).is_some_and(|&b| b != b'\n');
            if lone { ' ' } else { c }
        })
        .collect();
    ckeep_text::chunk::sentence_spans(&unwrapped)
}

/// BM25 of each sentence for the question's terms, the sentences taken as the collection.
fn bm25(question: &str, sentences: &[Extract], analyzer: Analyzer) -> Vec<f32> {
    let mut query = analyzer.terms(question);
    query.sort_unstable();
    query.dedup();
    let terms: Vec<Vec<String>> = sentences.iter().map(|s| analyzer.terms(&s.text)).collect();
    let avg_len = terms.iter().map(Vec::len).sum::<usize>() as f32 / terms.len() as f32;
    let mut df: HashMap<&str, u64> = HashMap::new();
    for t in &terms {
        let mut seen: Vec<&str> = t.iter().map(String::as_str).collect();
        seen.sort_unstable();
        seen.dedup();
        for term in seen {
            *df.entry(term).or_default() += 1;
        }
    }
    let bm25 = Bm25::default();
    let n = terms.len() as u64;
    terms
        .iter()
        .map(|t| {
            query
                .iter()
                .filter_map(|q| {
                    let tf = t.iter().filter(|x| *x == q).count() as u32;
                    (tf > 0).then(|| {
                        let idf = Bm25::idf(n, df.get(q.as_str()).copied().unwrap_or(0));
                        bm25.term_score(idf, tf, t.len() as u32, avg_len.max(1.0))
                    })
                })
                .sum()
        })
        .collect()
}

/// Each score's 0-based rank, best first (ties by position).
fn rank(scores: &[f32]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..scores.len()).collect();
    order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(a.cmp(&b)));
    let mut ranks = vec![0; scores.len()];
    for (r, i) in order.into_iter().enumerate() {
        ranks[i] = r;
    }
    ranks
}

#[cfg(test)]
mod tests {
    use super::*;

    fn passage(number: usize, start: usize, text: &str) -> Passage {
        Passage {
            number,
            doc_id: format!("d{number}"),
            title: String::new(),
            span: Span::new(start, start + text.len()),
            text: text.into(),
            rank: number,
            score: 1.0,
            tokens: 0,
        }
    }

    #[test]
    fn the_sentences_that_match_the_question_with_their_spans() {
        let passages = [
            passage(1, 100, "The tower was painted in 1889. Its height is 330 metres."),
            passage(
                2,
                0,
                "Gustave Eiffel's company built the tower. It opened to visitors in May.",
            ),
        ];
        let got =
            answer("Which company built the tower?", &passages, Analyzer::Standard, None).unwrap();
        assert_eq!(got[0].text, "Gustave Eiffel's company built the tower.");
        assert_eq!((got[0].source, got[0].span), (2, Span::new(0, 41)));
        assert_eq!(got.len(), SENTENCES);
        // Nothing matches and there is no model: no answer.
        assert!(
            answer("quantum chromodynamics", &passages, Analyzer::Standard, None)
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn wrapped_lines_are_one_sentence_and_headings_are_not_answers() {
        let text = "# How long documents\n\nBM25 divides by the length\nof the document, scaled by b.\nShort ones win.";
        let got = answer(
            "How is document length used?",
            &[passage(1, 0, text)],
            Analyzer::Standard,
            None,
        )
        .unwrap();
        assert_eq!(got[0].text, "BM25 divides by the length\nof the document, scaled by b.");
        assert!(got.iter().all(|s| !s.text.starts_with('#')), "{got:?}");
    }

    #[test]
    fn chinese_sentences() {
        let passages = [passage(1, 30, "巴黎是法国的首都。东京是日本的首都。北京是中国的首都。")];
        let got = answer("日本的首都是哪里？", &passages, Analyzer::Cjk, None).unwrap();
        assert_eq!(got[0].text, "东京是日本的首都。");
        assert_eq!(got[0].span, Span::new(30 + 27, 30 + 54));
    }
}
