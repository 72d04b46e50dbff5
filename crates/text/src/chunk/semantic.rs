//! The `semantic` chunker: consecutive sentences stay together until the embedding distance
//! between two neighbours is unusually large (above a percentile of the document's distances),
//! as LangChain's and LlamaIndex's semantic splitters do — but with a **hard maximum**: a group
//! over the limit is cut again at its largest interior distance, and a single sentence over the
//! limit is split by structure (lines, words), so no chunk ever exceeds it.

use ckeep_core::Span;

use super::SizeCounter;
use super::layout::Layout;
use super::structure::Splitter;

/// Chunk spans of `text` given its sentences and one vector per sentence.
pub(super) fn chunks(
    text: &str,
    layout: &Layout,
    counter: &dyn SizeCounter,
    sentences: &[Span],
    vectors: &[Vec<f32>],
    max: usize,
    percentile: u8,
) -> Vec<Span> {
    if sentences.is_empty() {
        return Vec::new();
    }
    let distances: Vec<f32> =
        (1..sentences.len()).map(|i| 1.0 - cosine(&vectors[i - 1], &vectors[i])).collect();
    let threshold = percentile_of(&distances, percentile);
    let mut groups: Vec<(usize, usize)> = Vec::new(); // sentence ranges [a, b)
    let mut start = 0;
    for (i, d) in distances.iter().enumerate() {
        if *d > threshold {
            groups.push((start, i + 1));
            start = i + 1;
        }
    }
    groups.push((start, sentences.len()));
    let splitter = Splitter::new(text, layout, counter);
    let mut out = Vec::new();
    for (a, b) in groups {
        fit(text, &splitter, counter, sentences, &distances, a, b, max, &mut out);
    }
    out
}

/// Appends sentences `[a, b)` as one chunk if it fits, else cuts at the largest distance inside
/// and recurses; one sentence that does not fit goes to the structure splitter.
#[allow(clippy::too_many_arguments)]
fn fit(
    text: &str,
    splitter: &Splitter<'_>,
    counter: &dyn SizeCounter,
    sentences: &[Span],
    distances: &[f32],
    a: usize,
    b: usize,
    max: usize,
    out: &mut Vec<Span>,
) {
    let span = Span::new(sentences[a].start, sentences[b - 1].end);
    if counter.count(span.slice(text)) <= max {
        out.push(span);
    } else if b - a == 1 {
        out.extend(splitter.split(span, max));
    } else {
        // distances[i] lies between sentences i and i + 1.
        let cut = (a..b - 1)
            .max_by(|&i, &j| distances[i].total_cmp(&distances[j]).then(j.cmp(&i)))
            .map_or(a, |i| i + 1);
        fit(text, splitter, counter, sentences, distances, a, cut, max, out);
        fit(text, splitter, counter, sentences, distances, cut, b, max, out);
    }
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na = a.iter().map(|x| x * x).sum::<f32>().sqrt();
    let nb = b.iter().map(|x| x * x).sum::<f32>().sqrt();
    if na == 0.0 || nb == 0.0 { 0.0 } else { dot / (na * nb) }
}

/// The `p`-th percentile with linear interpolation (numpy's default), `+∞` for no values.
fn percentile_of(values: &[f32], p: u8) -> f32 {
    if values.is_empty() {
        return f32::INFINITY;
    }
    let mut v = values.to_vec();
    v.sort_by(f32::total_cmp);
    let rank = f32::from(p) / 100.0 * (v.len() - 1) as f32;
    let (lo, hi) = (rank.floor() as usize, rank.ceil() as usize);
    v[lo] + (v[hi] - v[lo]) * (rank - lo as f32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chunk::{WordCounter, sentences as split_sentences};

    fn run<'t>(text: &'t str, vectors: &[Vec<f32>], max: usize, p: u8) -> Vec<&'t str> {
        let layout = Layout::scan(text);
        let sents = split_sentences(text, Span::new(0, text.len()));
        assert_eq!(sents.len(), vectors.len());
        chunks(text, &layout, &WordCounter, &sents, vectors, max, p)
            .into_iter()
            .map(|s| s.slice(text))
            .collect()
    }

    #[test]
    fn breaks_where_the_topic_changes() {
        let text = "Cats purr. Cats nap. Stocks fell. Bonds rose.";
        let v = vec![vec![1.0, 0.0], vec![0.9, 0.1], vec![0.0, 1.0], vec![0.1, 0.9]];
        assert_eq!(run(text, &v, 100, 50), ["Cats purr. Cats nap.", "Stocks fell. Bonds rose."]);
    }

    #[test]
    fn never_exceeds_the_maximum() {
        // Identical vectors: no semantic break at all, so only the maximum cuts.
        let text = "One two three. Four five six. Seven eight nine ten eleven twelve thirteen.";
        let v = vec![vec![1.0, 0.0]; 3];
        let got = run(text, &v, 4, 95);
        assert!(got.iter().all(|c| c.split_whitespace().count() <= 4), "{got:?}");
        assert_eq!(got.join(" ").split_whitespace().count(), 13, "nothing lost");
    }

    #[test]
    fn percentile_interpolates() {
        assert!((percentile_of(&[1.0, 2.0, 3.0, 4.0], 50) - 2.5).abs() < 1e-6);
        assert!(percentile_of(&[], 90).is_infinite());
    }
}
