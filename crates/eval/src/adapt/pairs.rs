//! Training pairs from a store's own documents: `eval synth`'s queries, each with its source
//! passage (the stored chunk it came from, the query's text masked out, embedded as the
//! store embeds that chunk) and hard negatives mined by the store's own dense and BM25
//! searches. A candidate negative that both searches rank above the source is taken to answer
//! the query too and is not used; nor is a near copy of the source.

use std::collections::{HashMap, HashSet};

use ckeep_core::Document;
use ckeep_embed::InputKind;
use ckeep_engine::{AdaptableModel, Engine, SearchRequest, Strategy};
use ckeep_index::dot;
use ckeep_store::StoreRead;
use ckeep_text::{SizeCounter, WordCounter};
use rayon::prelude::*;

use super::guard::{Corpus, Heldout};
use crate::Error;
use crate::synth::SynthQuery;
use ckeep_engine::adapter_training::Example;

/// Candidates each search offers for a query's negatives.
const MINED: usize = 20;

/// Cosine from which a candidate is a near copy of the source passage.
const NEAR_COPY: f32 = 0.95;

/// BM25 ranks within which a candidate that the dense search also ranks above the source is
/// taken to answer the query.
const BOTH_AGREE: usize = 3;

/// Words a source passage needs, without the query's own; a shorter one is widened to the
/// leaves beside it.
const MIN_PASSAGE_WORDS: usize = 8;

/// Texts embedded per call, so progress moves.
const EMBED_BATCH: usize = 32;

/// The queries of one model, split into training examples and the guard's held-out set.
#[derive(Debug)]
pub struct Pairs {
    /// Training examples.
    pub train: Vec<Example>,
    /// Held-out queries.
    pub heldout: Vec<Heldout>,
    /// The stored vectors negatives and the guard rank against.
    pub corpus: Corpus,
}

/// Where each query came from in the store: its document, and its source passage's text.
#[derive(Debug, Clone)]
pub struct Source {
    /// The query.
    pub query: String,
    /// Index of its document in the store's order.
    pub doc: u32,
    /// Documents it must not be trained or judged against (its own, and bleed).
    pub excluded: Vec<u32>,
    /// Its source chunk's text without the query's own text.
    pub passage: String,
    /// Whether it is held out for the guard.
    pub heldout: bool,
}

/// The sources of `queries` made from `docs` (the store's documents, in its order): the leaf
/// chunk holding each query's masked span, without it (with its neighbours when little is
/// left). `heldout(doc)` says which documents'
/// queries the guard keeps.
pub fn sources<S: StoreRead>(
    store: &S,
    docs: &[Document],
    queries: &[SynthQuery],
    title_in_front: bool,
    heldout: &dyn Fn(&str) -> bool,
) -> Result<Vec<Source>, Error> {
    let index = numbered(docs);
    let mut out = Vec::with_capacity(queries.len());
    for q in queries {
        let Some(&doc) = index.get(q.doc_id.as_str()) else { continue };
        let document = &docs[doc as usize];
        let own: Vec<&crate::synth::Mask> =
            q.mask.iter().filter(|m| m.doc_id == q.doc_id).collect();
        let text_mask = own.iter().find(|m| m.field == "text");
        let title_masked = own.iter().any(|m| m.field == "title");
        let chunks = store.chunks_of(&q.doc_id).map_err(stored)?;
        let leaves: Vec<_> = chunks.iter().filter(|c| c.chunk.leaf).collect();
        let (start, end) = match text_mask {
            Some(m) => (byte_at(&document.text, m.start), byte_at(&document.text, m.end)),
            None => (0, 0),
        };
        // The leaf holding the masked span (a title query: the first leaf).
        let Some(at) = leaves
            .iter()
            .position(|c| c.chunk.span.start <= start && start < c.chunk.span.end)
            .or((!leaves.is_empty()).then_some(0))
        else {
            continue;
        };
        let masked_in = |from: usize, to: usize| {
            let (from, to) = (leaves[from].chunk.span.start, leaves[to].chunk.span.end);
            let text = &document.text[from..to];
            if text_mask.is_some() && from <= start && start < to {
                let (s, e) = (start - from, end.clamp(start, to) - from);
                format!("{}{}", &text[..s], &text[e..])
            } else {
                text.to_string()
            }
        };
        let mut masked = masked_in(at, at);
        // A leaf that was little more than the query (sentence chunks): its neighbours.
        if WordCounter.count(&masked) < MIN_PASSAGE_WORDS {
            masked = masked_in(at.saturating_sub(1), (at + 1).min(leaves.len() - 1));
        }
        let title = document.title.trim();
        let passage = if title_in_front && !title_masked && !title.is_empty() {
            format!("{title}\n\n{masked}")
        } else {
            masked
        };
        let mut excluded = vec![doc];
        excluded.extend(q.relevant.iter().filter_map(|r| index.get(r.as_str()).copied()));
        out.push(Source {
            query: q.question.clone(),
            doc,
            excluded,
            passage,
            heldout: heldout(&q.doc_id),
        });
    }
    Ok(out)
}

/// Each document's number: its place in `docs`.
fn numbered(docs: &[Document]) -> HashMap<&str, u32> {
    docs.iter().enumerate().map(|(i, d)| (d.id.as_str(), i as u32)).collect()
}

/// A store's failure, as the engine reports it.
fn stored(e: ckeep_store::Error) -> Error {
    ckeep_engine::Error::from(e).into()
}

/// The byte offset of character `chars` of `text` (its end when past it).
fn byte_at(text: &str, chars: usize) -> usize {
    text.char_indices().nth(chars).map_or(text.len(), |(b, _)| b)
}

/// Embeds `sources` with `model`, reads the model's stored vectors and mines each training
/// query's negatives. `progress(stage, done, total)`.
pub fn pairs<S: StoreRead>(
    engine: &Engine<S>,
    model: &AdaptableModel,
    docs: &[Document],
    sources: &[Source],
    negatives: usize,
    progress: &mut dyn FnMut(&str, u64, u64),
) -> Result<Pairs, Error> {
    let corpus = corpus(engine.store(), &model.repr, docs)?;
    let queries: Vec<&str> = sources.iter().map(|s| s.query.as_str()).collect();
    let passages: Vec<&str> = sources.iter().map(|s| s.passage.as_str()).collect();
    let queries = embed(model, &queries, InputKind::Query, "embedding queries", progress)?;
    let passages = embed(model, &passages, InputKind::Document, "embedding passages", progress)?;
    if queries.first().is_some_and(|q| q.len() != corpus.dim) {
        return Err(Error::Invalid(format!(
            "the store's `{}` vectors have {} values and {} gives {}",
            model.repr,
            corpus.dim,
            model.name,
            queries[0].len()
        )));
    }
    let lexical = lexical_neighbours(engine, docs, sources, progress)?;
    let rows_of = rows_by_doc(&corpus);
    let mut train = Vec::new();
    let mut heldout = Vec::new();
    for (i, ((s, q), p)) in sources.iter().zip(queries).zip(passages).enumerate() {
        if s.heldout {
            heldout.push(Heldout { query: q, positive: p, excluded: s.excluded.clone() });
            continue;
        }
        let negatives = mine(&corpus, &rows_of, s, &q, &p, &lexical[i], negatives);
        train.push(Example { query: q, positive: p, negatives });
    }
    Ok(Pairs { train, heldout, corpus })
}

/// The stored vectors of `repr`, each row's document numbered as in `docs`.
fn corpus<S: StoreRead>(store: &S, repr: &str, docs: &[Document]) -> Result<Corpus, Error> {
    let matrix = store.vectors(repr).map_err(stored)?;
    let index = numbered(docs);
    let mut keys: Vec<_> = matrix.docs.clone();
    keys.sort_unstable();
    keys.dedup();
    let ids = store.doc_ids_by_key(&keys).map_err(stored)?;
    let by_key: HashMap<_, u32> = keys
        .iter()
        .zip(&ids)
        .filter_map(|(k, id)| index.get(id.as_str()).map(|&i| (*k, i)))
        .collect();
    let mut rows = Vec::with_capacity(matrix.data.len());
    let mut doc_of_row = Vec::with_capacity(matrix.len());
    for (r, key) in matrix.docs.iter().enumerate() {
        let Some(&doc) = by_key.get(key) else { continue };
        rows.extend_from_slice(&matrix.data[r * matrix.dim..(r + 1) * matrix.dim]);
        doc_of_row.push(doc);
    }
    Ok(Corpus { dim: matrix.dim, rows, doc_of_row, docs: docs.len() })
}

/// Each document's rows.
fn rows_by_doc(corpus: &Corpus) -> HashMap<u32, Vec<usize>> {
    let mut map: HashMap<u32, Vec<usize>> = HashMap::new();
    for (r, &d) in corpus.doc_of_row.iter().enumerate() {
        map.entry(d).or_default().push(r);
    }
    map
}

/// Unit vectors of `texts` by `model`, in batches.
fn embed(
    model: &AdaptableModel,
    texts: &[&str],
    kind: InputKind,
    stage: &str,
    progress: &mut dyn FnMut(&str, u64, u64),
) -> Result<Vec<Vec<f32>>, Error> {
    let mut out = Vec::with_capacity(texts.len());
    for batch in texts.chunks(EMBED_BATCH) {
        let (vectors, _) = model.embedder.embed(batch, kind).map_err(ckeep_engine::Error::from)?;
        for mut v in vectors {
            ckeep_embed::normalize(&mut v);
            out.push(v);
        }
        progress(stage, out.len() as u64, texts.len() as u64);
    }
    Ok(out)
}

/// Each training query's best BM25 documents (indexes, best first, its excluded ones left
/// out), from the store's own lexical search; none for held-out queries.
fn lexical_neighbours<S: StoreRead>(
    engine: &Engine<S>,
    docs: &[Document],
    sources: &[Source],
    progress: &mut dyn FnMut(&str, u64, u64),
) -> Result<Vec<Vec<u32>>, Error> {
    let index = numbered(docs);
    let strategy: Strategy = format!("mode=bm25,level=doc,k={}", MINED + 4)
        .parse()
        .map_err(|e: ckeep_engine::Error| Error::Invalid(e.to_string()))?;
    let total = sources.len() as u64;
    let mut out = Vec::with_capacity(sources.len());
    for (i, s) in sources.iter().enumerate() {
        if s.heldout {
            out.push(Vec::new());
            continue;
        }
        let req = SearchRequest::new(s.query.clone()).with_strategy(strategy.clone());
        let found = match engine.search(&req) {
            Ok(res) => res.results,
            // A query without indexable terms has no lexical neighbours.
            Err(ckeep_engine::Error::Invalid(_)) => Vec::new(),
            Err(e) => return Err(e.into()),
        };
        out.push(
            found
                .iter()
                .filter_map(|r| index.get(r.doc_id.as_str()).copied())
                .filter(|d| !s.excluded.contains(d))
                .take(MINED)
                .collect(),
        );
        progress("mining BM25 negatives", i as u64 + 1, total);
    }
    Ok(out)
}

/// Up to `wanted` negatives of one query, alternating the dense and the BM25 lists from their
/// tops: the best row of each candidate document, none excluded, no near copy of the source,
/// and none that both searches rank above the source.
fn mine(
    corpus: &Corpus,
    rows_of: &HashMap<u32, Vec<usize>>,
    source: &Source,
    query: &[f32],
    positive: &[f32],
    lexical: &[u32],
    wanted: usize,
) -> Vec<usize> {
    let dim = corpus.dim;
    let row = |r: usize| &corpus.rows[r * dim..(r + 1) * dim];
    let scores: Vec<f32> = corpus.rows.par_chunks_exact(dim).map(|r| dot(query, r)).collect();
    let mut best: HashMap<u32, (usize, f32)> = HashMap::new();
    for (r, (&doc, &s)) in corpus.doc_of_row.iter().zip(&scores).enumerate() {
        let e = best.entry(doc).or_insert((r, f32::NEG_INFINITY));
        if s > e.1 {
            *e = (r, s);
        }
    }
    let own = dot(query, positive);
    let mut dense: Vec<(u32, usize, f32)> = best
        .iter()
        .filter(|(d, _)| !source.excluded.contains(d))
        .map(|(&d, &(r, s))| (d, r, s))
        .collect();
    dense.sort_by(|a, b| b.2.total_cmp(&a.2).then(a.0.cmp(&b.0)));
    dense.truncate(MINED);
    let lexical_top: HashSet<u32> = lexical.iter().take(BOTH_AGREE).copied().collect();
    let usable = |doc: u32, r: usize, s: f32| {
        let answers = s > own && lexical_top.contains(&doc);
        !answers && dot(row(r), positive) < NEAR_COPY
    };
    let from_lexical = lexical.iter().filter_map(|d| {
        let rows = rows_of.get(d)?;
        let &r = rows.iter().max_by(|&&a, &&b| scores[a].total_cmp(&scores[b]))?;
        Some((*d, r, scores[r]))
    });
    let mut taken: Vec<usize> = Vec::new();
    let mut seen: HashSet<u32> = HashSet::new();
    let lists: [Vec<(u32, usize, f32)>; 2] = [dense, from_lexical.collect()];
    let mut at = [0usize, 0usize];
    while taken.len() < wanted && (at[0] < lists[0].len() || at[1] < lists[1].len()) {
        for l in 0..2 {
            if let Some(&(d, r, s)) = lists[l].get(at[l]) {
                at[l] += 1;
                if taken.len() < wanted && seen.insert(d) && usable(d, r, s) {
                    taken.push(r);
                }
            }
        }
    }
    taken
}
