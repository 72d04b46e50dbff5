//! The store against a model of itself: random sequences of adds, replacements, removals,
//! searches and restarts, each compared with a plain in-memory oracle that keeps the documents
//! in a map and scores BM25 from its own counts (tantivy's proptests test its index this way).
//! The oracle shares only the formula's two functions (`Bm25::idf`, `Bm25::term_score`) and
//! the analyzer with the engine: what it checks is the store's bookkeeping (postings, lengths,
//! document counts, deletions, what a restart reads back), which a bug would make drift from it.

use std::collections::BTreeMap;

use ckeep_core::Document;
use ckeep_engine::{Analyzer, AnalyzerChoice, Engine, SearchRequest};
use ckeep_index::Bm25;
use ckeep_store::{DynStore, StoreRead};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

/// Words the documents are made of: English and Chinese, so both halves of the analyzer count.
const WORDS: [&str; 16] = [
    "owl",
    "river",
    "bread",
    "night",
    "water",
    "stone",
    "light",
    "forest",
    "河流",
    "长江",
    "面包",
    "夜晚",
    "森林",
    "石头",
    "猫头鹰",
    "光线",
];

/// Document ids: few, so replacements and removals hit stored documents often.
const IDS: usize = 24;

#[derive(Debug, Clone)]
enum Op {
    /// Adds (or replaces) these documents and removes those ids, in one ingest.
    Write { add: Vec<(usize, Vec<usize>)>, remove: Vec<usize> },
    /// A BM25 search for these words.
    Search(Vec<usize>),
    /// Closes the engine and opens the store again.
    Restart,
}

fn text(words: &[usize]) -> String {
    words.iter().map(|&w| WORDS[w]).collect::<Vec<_>>().join(" ")
}

fn op() -> impl Strategy<Value = Op> {
    let words = prop::collection::vec(0..WORDS.len(), 1..24);
    let add = prop::collection::vec((0..IDS, words), 0..4);
    let remove = prop::collection::vec(0..IDS, 0..3);
    // One write per id in a batch: what a batch that adds and removes one id means is not
    // what is tested here.
    let write = (add, remove).prop_map(|(add, remove)| {
        let mut last: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        for (id, words) in add {
            last.insert(id, words);
        }
        let remove = remove.into_iter().filter(|id| !last.contains_key(id)).collect();
        Op::Write { add: last.into_iter().collect(), remove }
    });
    prop_oneof![
        5 => write,
        4 => prop::collection::vec(0..WORDS.len(), 1..4).prop_map(Op::Search),
        1 => Just(Op::Restart),
    ]
}

/// A text's distinct terms with their counts, sorted by term.
type Counts = Vec<(String, u32)>;

/// The model: the documents by id, scored by BM25 over whole documents.
#[derive(Default)]
struct Oracle {
    docs: BTreeMap<String, String>,
}

impl Oracle {
    fn write(&mut self, add: &[(usize, Vec<usize>)], remove: &[usize]) {
        // As the engine: removals of the batch, then its documents (a later one replaces).
        for id in remove {
            self.docs.remove(&format!("d{id}"));
        }
        for (id, words) in add {
            self.docs.insert(format!("d{id}"), text(words));
        }
    }

    /// Every document with a score above zero, best first, as `(id, score)`.
    fn search(&self, query: &str) -> Vec<(String, f32)> {
        let analyzer = Analyzer::Cjk;
        let bm25 = Bm25::default();
        let counted: Vec<(&String, Counts, u32)> = self
            .docs
            .iter()
            .map(|(id, t)| {
                let (counts, len) = analyzer.term_counts(t);
                (id, counts, len)
            })
            .filter(|(_, _, len)| *len > 0)
            .collect();
        let n = counted.len() as u64;
        let avg = counted.iter().map(|(_, _, l)| f64::from(*l)).sum::<f64>() / n.max(1) as f64;
        let (query_terms, _) = analyzer.term_counts(query);
        let mut scored: Vec<(String, f32)> = counted
            .iter()
            .filter_map(|(id, counts, len)| {
                let mut score = 0.0f32;
                for (term, qtf) in &query_terms {
                    let Ok(i) = counts.binary_search_by(|(t, _)| t.cmp(term)) else { continue };
                    let df = counted
                        .iter()
                        .filter(|(_, c, _)| c.binary_search_by(|(t, _)| t.cmp(term)).is_ok())
                        .count() as u64;
                    let idf = Bm25::idf(n, df) * *qtf as f32;
                    score += bm25.term_score(idf, counts[i].1, *len, avg as f32);
                }
                (score > 0.0).then(|| ((*id).clone(), score))
            })
            .collect();
        scored.sort_by(|a, b| b.1.total_cmp(&a.1));
        scored
    }
}

fn open(location: &str) -> Engine<DynStore> {
    Engine::new(ckeep_store::open_or_create(location).unwrap())
        .with_analyzer(AnalyzerChoice::Fixed(Analyzer::Cjk))
}

/// Runs `ops` against a store at `location` and the oracle; the first divergence is an error.
fn run(location: &str, ops: &[Op]) -> Result<(), TestCaseError> {
    let mut engine = open(location);
    let mut oracle = Oracle::default();
    let chunker = "whole".parse().unwrap();
    for (step, op) in ops.iter().enumerate() {
        match op {
            Op::Write { add, remove } => {
                let mut ingest = engine.writer().ingest(&chunker).unwrap();
                ingest.remove(remove.iter().map(|id| format!("d{id}")));
                for (id, words) in add {
                    ingest.add(Document::new(format!("d{id}"), "", text(words))).unwrap();
                }
                ingest.finish().unwrap();
                oracle.write(add, remove);
            }
            Op::Search(words) => {
                let query = text(words);
                let want = oracle.search(&query);
                let k = 10;
                let req = SearchRequest::new(query.clone())
                    .with_strategy(format!("mode=bm25,k={k}").parse().unwrap());
                let got: Vec<(String, f32)> = match engine.search(&req) {
                    Ok(res) => res.results.into_iter().map(|r| (r.doc_id, r.score)).collect(),
                    Err(e) => return Err(TestCaseError::fail(format!("step {step}: {e}"))),
                };
                let close = |a: f32, b: f32| (a - b).abs() <= 1e-4 * a.abs().max(1.0);
                prop_assert_eq!(got.len(), want.len().min(k), "step {}: {} {:?}", step, query, got);
                for (i, (id, score)) in got.iter().enumerate() {
                    let Some((_, expected)) = want.iter().find(|(w, _)| w == id) else {
                        return Err(TestCaseError::fail(format!("step {step}: {id} not a match")));
                    };
                    prop_assert!(
                        close(*score, *expected),
                        "step {}: {} {} vs {}",
                        step,
                        id,
                        score,
                        expected
                    );
                    // The i-th score is the oracle's i-th, whatever order ties take.
                    prop_assert!(
                        close(*score, want[i].1),
                        "step {}: rank {} of {:?}",
                        step,
                        i,
                        want
                    );
                }
            }
            Op::Restart => {
                drop(engine);
                engine = open(location);
            }
        }
        let ids = engine.store().document_ids().unwrap();
        let want: Vec<&String> = oracle.docs.keys().collect();
        prop_assert_eq!(ids.iter().collect::<Vec<_>>(), want, "step {}: stored ids", step);
    }
    let report = engine.store().check().unwrap();
    prop_assert!(report.is_ok(), "the store checks clean: {:?}", report);
    Ok(())
}

/// `seeds` sequences of `ops` operations each, from fixed seeds (the same cases every run).
fn sequences(seeds: u64, ops: usize, each: impl Fn(u64, &[Op]) -> Result<(), TestCaseError>) {
    for seed in 0..seeds {
        let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &[seed as u8; 32]);
        // A failing sequence is shrunk a little (each try replays it on a fresh store).
        let config = Config {
            cases: 1,
            failure_persistence: None,
            max_shrink_iters: 64,
            ..Config::default()
        };
        let mut runner = TestRunner::new_with_rng(config, rng);
        let strategy = prop::collection::vec(op(), ops..=ops);
        runner
            .run(&strategy, |ops| each(seed, &ops))
            .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
    }
}

#[test]
fn sqlite_agrees_with_the_model_over_random_writes_searches_and_restarts() {
    sequences(3, 2_000, |seed, ops| {
        let dir = tempfile::tempdir().unwrap();
        let location = dir.path().join(format!("store-{seed}"));
        run(&location.display().to_string(), ops)
    });
}

#[cfg(feature = "postgres")]
#[test]
#[ignore = "real tier (scripts/test.sh): PostgreSQL from scripts/pg.sh"]
fn postgres_agrees_with_the_model_over_random_writes_searches_and_restarts() {
    sequences(1, 2_000, |seed, ops| {
        let url = ckeep_store::test_postgres::fresh_database(&format!("model_based_{seed}"));
        run(&url, ops)
    });
}
