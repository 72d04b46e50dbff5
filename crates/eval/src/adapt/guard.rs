//! The guard's measure: how well queries held out from training find their source, with and
//! without the adapter. Each held-out query's source is its passage with the query's text
//! masked out (as `eval synth` scores a set); every other document is its best stored chunk, as
//! a document-level dense search ranks it. Both sides rank the same candidates, so their
//! difference is the adapter's alone.

use ckeep_engine::QueryAdapter;
use ckeep_index::dot;
use rayon::prelude::*;

/// The stored vectors of one representation, each row's document numbered.
#[derive(Debug, Clone)]
pub struct Corpus {
    /// Values per row.
    pub dim: usize,
    /// `rows × dim` values.
    pub rows: Vec<f32>,
    /// The document (index) of each row.
    pub doc_of_row: Vec<u32>,
    /// Documents.
    pub docs: usize,
}

/// A query held out from training.
#[derive(Debug, Clone)]
pub struct Heldout {
    /// Its vector (unit length).
    pub query: Vec<f32>,
    /// Its masked source passage's vector (unit length).
    pub positive: Vec<f32>,
    /// Documents (indexes) not ranked against it: its own, and those its text also stands in.
    pub excluded: Vec<u32>,
}

/// Results counted by nDCG.
pub const DEPTH: usize = 10;

/// nDCG@10 of each held-out query's source (one relevant document), with `adapter` applied to
/// the queries or without one.
pub fn ndcg(adapter: Option<&QueryAdapter>, held: &[Heldout], corpus: &Corpus) -> Vec<f64> {
    held.par_iter()
        .map(|h| {
            let q = adapter.map_or_else(|| h.query.clone(), |a| a.apply(&h.query));
            let own = dot(&q, &h.positive);
            let mut best = vec![f32::NEG_INFINITY; corpus.docs];
            for (row, &doc) in corpus.rows.chunks_exact(corpus.dim).zip(&corpus.doc_of_row) {
                let s = dot(&q, row);
                let b = &mut best[doc as usize];
                if s > *b {
                    *b = s;
                }
            }
            for &d in &h.excluded {
                best[d as usize] = f32::NEG_INFINITY;
            }
            let rank = 1 + best.iter().filter(|&&s| s > own).count();
            if rank <= DEPTH { 1.0 / ((rank + 1) as f64).log2() } else { 0.0 }
        })
        .collect()
}

/// The mean of `values` (0 for none).
pub fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len().max(1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_the_source_among_the_other_documents() {
        // Three documents of one row each; the query is nearest document 1, then its source.
        let corpus = Corpus {
            dim: 2,
            rows: vec![1.0, 0.0, 0.0, 1.0, 0.6, 0.8],
            doc_of_row: vec![0, 1, 2],
            docs: 3,
        };
        let held =
            vec![Heldout { query: vec![0.0, 1.0], positive: vec![0.6, 0.8], excluded: vec![2] }];
        let plain = ndcg(None, &held, &corpus);
        assert!((plain[0] - 1.0 / 3f64.log2()).abs() < 1e-9, "second of two: {plain:?}");
        // A map that turns queries towards the source puts it first.
        let turn = QueryAdapter::new(2, vec![1.0, 0.75, 0.0, 1.0]).unwrap();
        assert_eq!(ndcg(Some(&turn), &held, &corpus), vec![1.0]);
    }
}
