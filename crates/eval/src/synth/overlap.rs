//! Which units of a corpus (sentences and titles) say nearly the same thing as a query: the
//! bleed and near-copy checks of a synthetic test set. Jaccard similarity of analyzer term
//! sets, found with prefix filtering (Chaudhuri, Ganti & Kaushik 2006): a unit whose Jaccard
//! with a query reaches `t` must share one of the query's `m − ⌈t·m⌉ + 1` rarest terms, so only
//! those terms' postings are read.

use std::collections::HashMap;

use ckeep_engine::Analyzer;

/// One unit of text: a sentence of a document's text, or its title.
#[derive(Debug, Clone)]
pub(crate) struct Unit {
    /// Index of the document in the corpus.
    pub doc: usize,
    /// Byte span in the text, or `None` for the title.
    pub span: Option<(usize, usize)>,
    /// Distinct term ids, sorted.
    terms: Vec<u32>,
}

/// Every unit of a corpus with an inverted index over their terms.
pub(crate) struct OverlapIndex {
    analyzer: Analyzer,
    vocabulary: HashMap<String, u32>,
    /// Units holding each term id.
    postings: Vec<Vec<u32>>,
    pub units: Vec<Unit>,
}

impl OverlapIndex {
    pub fn new(analyzer: Analyzer) -> Self {
        Self { analyzer, vocabulary: HashMap::new(), postings: Vec::new(), units: Vec::new() }
    }

    /// Adds a unit; returns its index.
    pub fn add(&mut self, doc: usize, span: Option<(usize, usize)>, text: &str) -> usize {
        let mut terms: Vec<u32> = self
            .analyzer
            .terms(text)
            .into_iter()
            .map(|t| {
                let next = self.vocabulary.len() as u32;
                *self.vocabulary.entry(t).or_insert(next)
            })
            .collect();
        terms.sort_unstable();
        terms.dedup();
        let id = self.units.len();
        for &t in &terms {
            if t as usize >= self.postings.len() {
                self.postings.resize_with(t as usize + 1, Vec::new);
            }
            self.postings[t as usize].push(id as u32);
        }
        self.units.push(Unit { doc, span, terms });
        id
    }

    /// How many distinct terms `text` has.
    fn distinct_terms(&self, text: &str) -> usize {
        let mut t = self.analyzer.terms(text);
        t.sort_unstable();
        t.dedup();
        t.len()
    }

    /// Distinct terms of `text` known to the corpus.
    fn known_terms(&self, text: &str) -> Vec<u32> {
        let mut terms: Vec<u32> = self
            .analyzer
            .terms(text)
            .iter()
            .filter_map(|t| self.vocabulary.get(t))
            .copied()
            .collect();
        terms.sort_unstable();
        terms.dedup();
        terms
    }

    /// Units whose term set has Jaccard ≥ `threshold` with `text`'s, in unit order.
    pub fn similar(&self, text: &str, threshold: f64) -> Vec<usize> {
        let all_terms = self.distinct_terms(text);
        let mut terms = self.known_terms(text);
        if all_terms == 0 {
            return Vec::new();
        }
        // Rarest first: the prefix whose postings must hold every unit that can reach the
        // threshold (terms unknown to the corpus count against every unit alike).
        terms.sort_by_key(|&t| self.postings[t as usize].len());
        let need = (threshold * all_terms as f64).ceil() as usize;
        let Some(prefix) = all_terms.checked_sub(need).map(|p| p + 1) else {
            return Vec::new();
        };
        let mut candidates: Vec<u32> = terms
            .iter()
            .take(prefix)
            .flat_map(|&t| self.postings[t as usize].iter().copied())
            .collect();
        candidates.sort_unstable();
        candidates.dedup();
        let mut sorted = terms;
        sorted.sort_unstable();
        candidates
            .into_iter()
            .map(|u| u as usize)
            .filter(|&u| {
                let shared = intersection(&sorted, &self.units[u].terms);
                let union = all_terms + self.units[u].terms.len() - shared;
                union > 0 && shared as f64 / union as f64 >= threshold
            })
            .collect()
    }
}

impl OverlapIndex {
    /// Whether `text` holds nearly all the terms (a share ≥ `threshold`) of some unit of at
    /// least `min_terms` terms: a query that copies a whole sentence, which [`Self::similar`]
    /// misses when the query copies several.
    pub fn holds_a_unit(&self, text: &str, min_terms: usize, threshold: f64) -> bool {
        let terms = self.known_terms(text);
        let mut shared: HashMap<u32, usize> = HashMap::new();
        for &t in &terms {
            for &u in &self.postings[t as usize] {
                *shared.entry(u).or_default() += 1;
            }
        }
        shared.into_iter().any(|(u, n)| {
            let size = self.units[u as usize].terms.len();
            size >= min_terms && n as f64 >= threshold * size as f64
        })
    }
}

/// Size of the intersection of two sorted, distinct lists.
fn intersection(left: &[u32], right: &[u32]) -> usize {
    let (mut at_left, mut at_right, mut shared) = (0, 0, 0);
    while at_left < left.len() && at_right < right.len() {
        match left[at_left].cmp(&right[at_right]) {
            std::cmp::Ordering::Less => at_left += 1,
            std::cmp::Ordering::Greater => at_right += 1,
            std::cmp::Ordering::Equal => {
                shared += 1;
                at_left += 1;
                at_right += 1;
            }
        }
    }
    shared
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_near_copies_and_only_them() {
        let mut index = OverlapIndex::new(Analyzer::Standard);
        let a = index.add(0, Some((0, 1)), "The cat sat on the warm mat near the door.");
        index.add(1, Some((0, 1)), "A cat sat on the warm mat near the door!");
        index.add(2, Some((0, 1)), "Dogs bark at night in the city streets.");
        index.add(3, None, "Warm mats");
        let found = index.similar("The cat sat on the warm mat near the door.", 0.8);
        assert_eq!(found, [a, 1]);
        assert!(index.similar("Entirely different words here", 0.5).is_empty());
        // A brute-force check over every unit agrees with the prefix filter.
        let query = "cat sat on a mat under the sun";
        let q = index.known_terms(query);
        let n = index.distinct_terms(query);
        assert!(n > q.len(), "`sun` is not in the corpus and still counts");
        let brute: Vec<usize> = (0..index.units.len())
            .filter(|&u| {
                let shared = intersection(&q, &index.units[u].terms);
                let union = n + index.units[u].terms.len() - shared;
                shared as f64 / union as f64 >= 0.3
            })
            .collect();
        assert_eq!(index.similar(query, 0.3), brute);
    }

    #[test]
    fn a_query_holding_whole_sentences_is_found_and_short_titles_do_not_count() {
        let mut index = OverlapIndex::new(Analyzer::Standard);
        index.add(0, Some((0, 1)), "The cat sat on the warm mat near the door.");
        index.add(0, Some((1, 2)), "Dogs bark at night in the city streets.");
        index.add(1, None, "Warm mats");
        let copy = "The cat sat on the warm mat near the door. Dogs bark at night in the city.";
        assert!(index.similar(copy, 0.8).is_empty(), "no single sentence is like the whole");
        assert!(index.holds_a_unit(copy, 5, 0.8));
        assert!(!index.holds_a_unit("where do warm mats come from", 5, 0.8));
        assert!(index.holds_a_unit("where do warm mats come from", 2, 0.8));
        assert!(!index.holds_a_unit("why does the cat sit near a door", 5, 0.8));
    }

    #[test]
    fn chinese_units_compare_by_their_terms() {
        let mut index = OverlapIndex::new(Analyzer::Cjk);
        index.add(0, Some((0, 1)), "范廷颂是越南罗马天主教枢机。");
        index.add(1, Some((0, 1)), "范廷颂是越南罗马天主教的枢机。");
        index.add(2, Some((0, 1)), "今天天气很好，我们去公园散步。");
        assert_eq!(index.similar("范廷颂是越南罗马天主教枢机。", 0.6), [0, 1]);
    }
}
