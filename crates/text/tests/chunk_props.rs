//! Property tests: every chunker on arbitrary Unicode input.
//!
//! Properties checked for each spec:
//! 1. every span is inside the text, on char boundaries, non-empty and trimmed;
//! 2. ordinals are positions in pre-order; parents come first, contain their children, sit one
//!    level up, and `leaf` is true exactly for chunks without children;
//! 3. leaves are in text order (and disjoint unless the spec overlaps windows);
//! 4. leaves cover every non-whitespace character; each parent's children cover its own;
//! 5. sizes are within the spec's bounds (words for `words`, `markdown` and `hierarchy`).

use ckeep_core::{Chunk, Span};
use ckeep_text::chunk::{SizeUnit, WordsSize};
use ckeep_text::{ChunkerSpec, SizeCounter, WordCounter};
use proptest::prelude::*;

/// Text made of pieces that stress the chunkers: Markdown syntax, sentence ends, all sorts of
/// whitespace, multi-byte and combining characters, and unspaced Chinese, Japanese and Korean
/// with their full-width punctuation, quotes and brackets.
fn text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        4 => "[a-zA-Z]{1,8}",
        2 => Just(" ".to_string()),
        1 => Just("\n".to_string()),
        1 => Just("\n\n".to_string()),
        1 => Just("\r\n".to_string()),
        1 => prop::sample::select(vec!["# ", "## ", "### ", "```", "~~~\n", ". ", "! ", "? ", "\t", "\u{3000}", "\u{85}", "\u{2029}", "é", "日本語", "👩‍👩‍👧", "e\u{301}", "Mr. ", "1.5", "\u{a0}"]).prop_map(String::from),
        1 => any::<char>().prop_map(String::from),
        3 => "[今天气很好我们去公园散步相似度歷史與傳統東京のタワー한국어]{1,12}",
        2 => prop::sample::select(vec!["。", "，", "！", "？", "；", "：", "“", "”", "「", "」", "（", "）", "《", "》", "……", "、", "ＡＢＣ１２"]).prop_map(String::from),
    ];
    prop::collection::vec(piece, 0..120).prop_map(|v| v.concat())
}

fn spec() -> impl Strategy<Value = ChunkerSpec> {
    prop_oneof![
        Just(ChunkerSpec::Whole),
        (1usize..12, 0usize..12)
            .prop_map(|(n, m)| ChunkerSpec::Words { size: WordsSize::Fixed(n), overlap: m % n }),
        Just(ChunkerSpec::Words { size: WordsSize::Dynamic, overlap: 0 }),
        (1usize..4).prop_map(|n| ChunkerSpec::Sentences { per_chunk: n }),
        (1usize..4).prop_map(|n| ChunkerSpec::Paragraphs { per_chunk: n }),
        (1usize..30).prop_map(|n| ChunkerSpec::Markdown { max: n, unit: SizeUnit::Words }),
        (1usize..30, 1u8..99).prop_map(|(n, p)| ChunkerSpec::Semantic {
            max: n,
            percentile: p,
            unit: SizeUnit::Words
        }),
        (2usize..6, 1usize..5, 1usize..4).prop_map(|(a, b, c)| {
            let small = c;
            let mid = small + b;
            ChunkerSpec::Hierarchy { sizes: vec![mid + a * 4, mid, small], unit: SizeUnit::Words }
        }),
    ]
}

fn check(text: &str, spec: &ChunkerSpec, chunks: &[Chunk]) -> Result<(), TestCaseError> {
    // 1. spans
    for c in chunks {
        prop_assert!(c.span.is_valid_in(text), "invalid span {} in {:?}", c.span, text);
        let s = c.span.slice(text);
        prop_assert!(!s.is_empty() && s.trim() == s, "untrimmed or empty chunk {s:?}");
    }
    // 2. tree
    for (i, c) in chunks.iter().enumerate() {
        prop_assert_eq!(c.ordinal as usize, i);
        if let Some(p) = c.parent {
            let parent = &chunks[p as usize];
            prop_assert!((p as usize) < i);
            prop_assert!(
                parent.span.contains(c.span),
                "parent {} does not contain {}",
                parent.span,
                c.span
            );
            prop_assert_eq!(parent.depth + 1, c.depth);
        } else {
            prop_assert_eq!(c.depth, 0);
        }
        let has_children = chunks.iter().any(|x| x.parent == Some(c.ordinal));
        prop_assert_eq!(c.leaf, !has_children);
    }
    // 3. leaf order
    let leaves: Vec<Span> = chunks.iter().filter(|c| c.leaf).map(|c| c.span).collect();
    let overlapping = matches!(spec, ChunkerSpec::Words { overlap, .. } if *overlap > 0);
    for w in leaves.windows(2) {
        prop_assert!(
            w[0].start < w[1].start && w[0].end <= w[1].end,
            "leaves out of order: {} {}",
            w[0],
            w[1]
        );
        if !overlapping {
            prop_assert!(w[0].end <= w[1].start, "leaves overlap: {} {}", w[0], w[1]);
        }
    }
    // 4. coverage
    prop_assert_eq!(uncovered(text, Span::new(0, text.len()), &leaves), None);
    for c in chunks.iter().filter(|c| !c.leaf) {
        let kids: Vec<Span> =
            chunks.iter().filter(|x| x.parent == Some(c.ordinal)).map(|x| x.span).collect();
        prop_assert_eq!(uncovered(text, c.span, &kids), None);
    }
    // 5. sizes
    let words = |c: &Chunk| WordCounter.count(c.span.slice(text));
    let total_words = WordCounter.count(text);
    for c in chunks {
        let bound = match spec {
            ChunkerSpec::Words { size, .. } => size.for_words(total_words),
            ChunkerSpec::Markdown { max, .. } | ChunkerSpec::Semantic { max, .. } => *max,
            ChunkerSpec::Hierarchy { sizes, .. } => sizes[c.depth as usize],
            ChunkerSpec::Whole | ChunkerSpec::Sentences { .. } | ChunkerSpec::Paragraphs { .. } => {
                usize::MAX
            }
        };
        prop_assert!(
            words(c) <= bound,
            "chunk of {} words over {bound}: {:?}",
            words(c),
            c.span.slice(text)
        );
    }
    Ok(())
}

/// The first non-whitespace character of `within` that no span covers, if any.
fn uncovered(text: &str, within: Span, spans: &[Span]) -> Option<(usize, char)> {
    within
        .slice(text)
        .char_indices()
        .map(|(i, ch)| (within.start + i, ch))
        .find(|&(i, ch)| !ch.is_whitespace() && !spans.iter().any(|s| s.start <= i && i < s.end))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(600))]

    #[test]
    fn chunkers_keep_their_invariants(text in text(), spec in spec()) {
        let chunks = spec.chunk(&text, &WordCounter);
        check(&text, &spec, &chunks)?;
        if !text.trim().is_empty() {
            prop_assert!(!chunks.is_empty());
        }
    }

    #[test]
    fn chunking_is_deterministic(text in text(), spec in spec()) {
        prop_assert_eq!(spec.chunk(&text, &WordCounter), spec.chunk(&text, &WordCounter));
    }
}

/// A counter with multi-unit graphemes, as a tokenizer has: sizes stay within bounds whenever
/// no single grapheme is larger than the bound.
#[derive(Debug)]
struct CharCounter;

impl SizeCounter for CharCounter {
    fn count(&self, text: &str) -> usize {
        text.chars().filter(|c| !c.is_whitespace()).count()
    }
    fn unit(&self) -> &'static str {
        "chars"
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn semantic_keeps_every_property_with_any_vectors(
        text in text(), max in 1usize..30, p in 1u8..99, seed in 0u32..1000
    ) {
        let spec = ChunkerSpec::Semantic { max, percentile: p, unit: SizeUnit::Words };
        let n = ckeep_text::chunk::sentence_spans(&text).len();
        // Arbitrary directions: breakpoints anywhere, the maximum must still hold.
        let vectors: Vec<Vec<f32>> = (0..n)
            .map(|i| {
                let a = (seed as f32 + 1.0) * (i as f32 + 1.0) * 0.7;
                vec![a.sin(), a.cos(), (a * 0.3).sin()]
            })
            .collect();
        check(&text, &spec, &spec.chunk_with_vectors(&text, &WordCounter, &vectors))?;
    }

    #[test]
    fn markdown_respects_any_counter(text in text(), max in 4usize..40) {
        let chunks = ChunkerSpec::Markdown { max, unit: SizeUnit::Tokens }.chunk(&text, &CharCounter);
        for c in &chunks {
            let s = c.span.slice(&text);
            let one_grapheme = unicode_segmentation::UnicodeSegmentation::graphemes(s, true).count() == 1;
            prop_assert!(CharCounter.count(s) <= max || one_grapheme, "{s:?} over {max}");
        }
    }
}
