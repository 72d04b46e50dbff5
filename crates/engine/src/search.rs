//! Query: analyse → score chunks → rank chunks or aggregate to documents → fetch spans and text
//! from the store → explain.

use ckeep_core::{ChunkHit, ChunkId, DocKey, LexicalStats, Posting, SourceMap, Span};
use ckeep_store::StoredChunk;
use std::collections::HashMap;
use std::sync::Arc;

use ckeep_index::{Bm25, DocHit, FusedParts, TitleField, top_k};
use ckeep_store::StoreRead;

use crate::engine::Searcher;
use crate::error::{Error, Result};
use crate::expand::Context;
use crate::filtered::{AllowedDocs, DenseFilter, FilterPlan};
use crate::lexical::PLAIN_FIELD;
use crate::lines::LineSpan;
use crate::no_results::NoResults;
use crate::represent::Resolved;
use crate::request::{
    ChunkExplanation, Explanation, ListExplanation, ResultChunk, SearchRequest, SearchResponse,
    SearchResult, SearchTiming,
};
use crate::strategy::{Level, Mode, Strategy};
use crate::vectors::VectorParams;

/// Hybrid fusion and document aggregation see this many of each list's best chunks (or 10·k if
/// more): as many as an approximate search returns, so exact and HNSW search aggregate the same
/// kind of list, and `sum` adds up a document's strong matches rather than its length.
const CANDIDATE_DEPTH: usize = 1000;

/// How many chunks a strategy needs scored: the results it keeps (`k`, or the pool MMR picks
/// them from) for dense chunk results, else the deep list.
fn candidates(strategy: &Strategy) -> usize {
    let kept = strategy.diversify.pool(strategy.k);
    if strategy.mode == Mode::Dense && strategy.level == Level::Chunk {
        kept
    } else {
        CANDIDATE_DEPTH.max(10 * kept)
    }
}

/// A document result's text is made of at most this many of its best chunks (`sum` can rest
/// on hundreds).
const DOC_TEXT_CHUNKS: usize = 3;

/// Separator between the texts of several chunks of one document result.
const ELLIPSIS: &str = "\n…\n";

/// The text field's postings beside a flat title-and-text field's, and the title's weight.
struct TitlePostings {
    text: Vec<Vec<Posting>>,
    text_stats: LexicalStats,
    weight: f32,
}

impl TitlePostings {
    fn field(&self) -> TitleField<'_> {
        TitleField { text: &self.text, text_stats: self.text_stats, weight: self.weight }
    }
}

/// Chunk scores of one query, with what explanations need.
#[derive(Default)]
struct Scored {
    bm25: Bm25,
    terms: Vec<(String, u32)>,
    names: Vec<String>,
    stats: LexicalStats,
    postings: Vec<Vec<Posting>>,
    title: Option<TitlePostings>,
    hits: Vec<ChunkHit>,
    fused: Option<HashMap<ChunkId, FusedParts>>,
    dense_only: bool,
    /// How the dense search used the filter, if both ran.
    dense_filter: Option<DenseFilter>,
}

impl<S: StoreRead> Searcher<'_, S> {
    /// The search of `req` by `strategy` (resolved: [`Searcher::resolve`]) without its rerank
    /// stage.
    pub(crate) fn ranked(
        &self,
        req: &SearchRequest,
        strategy: &Strategy,
    ) -> Result<SearchResponse> {
        let asked = strategy.to_string();
        let strategy = self.with_default_repr(strategy.clone())?;
        let manifest = self.manifest();
        let allowed = req.filter.as_ref().map(|f| self.allowed_docs(f)).transpose()?;
        let models = crate::more_models::dense_models(&strategy, manifest)?;
        // The models first: one named that is not there is the model's error, whatever the
        // store holds.
        // Only a model's call is timed: a BM25 search reports no embedding at all, not the
        // microsecond a busy machine takes to skip it.
        let (queries, own, embed) = if strategy.mode.needs_model() {
            let embedding = std::time::Instant::now();
            let (queries, own) = self.query_vectors(&strategy, &models, &req.query)?;
            (queries, own, embedding.elapsed())
        } else {
            (Vec::new(), None, std::time::Duration::ZERO)
        };
        let summarizer = strategy.summarizer.as_ref().map(ToString::to_string);
        let reprs = strategy
            .repr
            .iter()
            .map(|r| r.resolve(summarizer.as_deref(), manifest, strategy.mode.needs_model()))
            .collect::<Result<Vec<_>>>()?;
        let dense = Dense { models: &models, queries: &queries, own: own.unwrap_or_default() };
        let allowed = allowed.as_deref();
        let analyzer = crate::analysis::of_store(manifest)?;
        let score =
            |repr: &Resolved| self.score(&req.query, &dense, &strategy, repr, analyzer, allowed);
        let mut scored = score(&reprs[0])?;
        let filter_plan = allowed.map(|a| FilterPlan {
            documents: a.len(),
            chunks: scored.dense_filter.and_then(|d| d.matching),
            share: scored
                .dense_filter
                .and_then(|d| Some(d.matching? as f64 / d.total?.max(1) as f64)),
            dense: scored.dense_filter.map(|d| d.by),
        });
        // The hits are ranked once; explanations need only the other parts of `scored`.
        let hits = std::mem::take(&mut scored.hits);
        // The results kept: `k`, or the deeper pool diversification chooses them from.
        let kept = strategy.diversify.pool(strategy.k);
        let groups: Vec<DocHit> = match strategy.level {
            Level::Chunk => top_k(hits, kept)
                .into_iter()
                .map(|h| DocHit { doc: h.doc, score: h.score, chunks: vec![h] })
                .collect(),
            Level::Doc if reprs.len() == 1 => {
                strategy.agg.rank(top_k(hits, candidates(&strategy)), kept)
            }
            Level::Doc => {
                let depth = candidates(&strategy);
                let mut lists = vec![strategy.agg.rank(top_k(hits, depth), depth)];
                for repr in &reprs[1..] {
                    let hits = score(repr)?.hits;
                    lists.push(strategy.agg.rank(top_k(hits, depth), depth));
                }
                fuse_documents(lists, kept)
            }
        };
        let store = self.store();
        let (groups, diversity) =
            crate::diversify::diversified(store, groups, strategy.diversify, strategy.k, analyzer)?;
        let contexts = crate::expand::expand(store, self.contexts_of(groups)?, strategy.expand)?;
        // Every text (with its lines) and document id in one look-up each.
        let wanted: Vec<(DocKey, Span)> =
            contexts.iter().flat_map(|c| c.spans.iter().map(|s| (c.doc, *s))).collect();
        let mut texts = LineSpan::with_texts(store, &wanted)?.into_iter();
        let (ids, maps) = self.documents_of(&contexts)?;
        let mut results = Vec::with_capacity(contexts.len());
        for (i, c) in contexts.into_iter().enumerate() {
            let (texts, lines): (Vec<String>, Vec<LineSpan>) =
                texts.by_ref().take(c.spans.len()).unzip();
            let doc_id = ids.get(&c.doc).cloned().unwrap_or_default();
            let locations = maps
                .get(&c.doc)
                .map(|m| c.spans.iter().map(|s| m.locate(*s)).collect())
                .unwrap_or_default();
            results.push(SearchResult {
                rank: i + 1,
                doc_id,
                score: c.score,
                text: texts.join(ELLIPSIS),
                lines,
                spans: c.spans,
                locations,
                headings: c.headings,
                chunks: c
                    .chunks
                    .iter()
                    .map(|(h, span)| ResultChunk { chunk_id: h.chunk, span: *span, score: h.score })
                    .collect(),
                explain: req
                    .explain
                    .then(|| Self::explain(&scored, &strategy, &dense, &c.chunks, &diversity)),
            });
        }
        Ok(SearchResponse {
            no_results: self.no_results(&results, req, allowed)?,
            query: req.query.clone(),
            strategy: asked,
            results,
            default_strategy: req
                .explain
                .then(|| crate::strategy::DefaultStrategy::of(&self.manifest)),
            filter: filter_plan.filter(|_| req.explain),
            timing: SearchTiming { embed, total: std::time::Duration::ZERO },
        })
    }

    /// Why there are no `results`, when the query's words are not why (see [`NoResults`]).
    fn no_results(
        &self,
        results: &[SearchResult],
        req: &SearchRequest,
        allowed: Option<&AllowedDocs>,
    ) -> Result<Option<NoResults>> {
        if !results.is_empty() {
            return Ok(None);
        }
        let passing = allowed.map(AllowedDocs::len);
        NoResults::find(self.store(), req.filter.as_ref(), passing)
    }

    /// The documents `filter` lets through, as of this snapshot (cached by the engine until
    /// the store's next write).
    fn allowed_docs(&self, filter: &ckeep_store::MetadataFilter) -> Result<Arc<AllowedDocs>> {
        let store = &self.engine.store;
        self.engine.filters.get_or(
            serde_json::to_string(filter).unwrap_or_default(),
            store.generation()?,
            || Ok::<_, Error>(AllowedDocs::new(store.doc_keys_where(filter)?)),
        )
    }

    /// The query's normalised embedding by each of `models`, through the store's query adapter
    /// of that model if it has one (`ckeep adapt`), and the name of the store's own
    /// model when it is one of them ([`Searcher::own_model`]).
    fn query_vectors(
        &self,
        strategy: &Strategy,
        models: &[crate::more_models::DenseModel],
        query: &str,
    ) -> Result<(Vec<Vec<f32>>, Option<String>)> {
        let own = models.iter().any(|m| m.0.is_none()).then(|| self.own_model(strategy));
        let own = own.transpose()?;
        let name = own.as_ref().map(|e| e.info().name.clone());
        let more = &self.engine.more_models;
        let mut vectors = more.query_vectors(own.as_ref(), &self.manifest, models, query)?;
        self.engine.adapters.map_queries(
            &self.engine.store,
            &self.manifest,
            models,
            &mut vectors,
        )?;
        Ok((vectors, name))
    }

    /// Ranked groups as contexts: each result's chunks with their spans, in one look-up (one
    /// round trip on a database server).
    fn contexts_of(&self, groups: Vec<DocHit>) -> Result<Vec<Context>> {
        let ids: Vec<ChunkId> =
            groups.iter().flat_map(|g| g.chunks.iter().map(|h| h.chunk)).collect();
        let records: HashMap<ChunkId, StoredChunk> =
            self.engine.store.chunks_by_id(&ids)?.into_iter().map(|r| (r.id, r)).collect();
        let mut contexts = Vec::with_capacity(groups.len());
        for group in groups {
            let chunks: Vec<(ChunkHit, Span)> = group
                .chunks
                .iter()
                .filter_map(|h| records.get(&h.chunk).map(|r| (*h, r.chunk.span)))
                .collect();
            // A document result shows its best chunks' text; all its chunks are listed.
            let mut spans: Vec<Span> =
                chunks.iter().take(DOC_TEXT_CHUNKS).map(|(_, s)| *s).collect();
            spans.sort_unstable();
            contexts.push(Context {
                doc: group.doc,
                score: group.score,
                spans,
                chunks,
                headings: group
                    .chunks
                    .iter()
                    .find_map(|h| records.get(&h.chunk))
                    .map(|r| r.chunk.heading_path())
                    .unwrap_or_default(),
                node: None,
            });
        }
        Ok(contexts)
    }

    /// The ids and source maps of the documents behind `contexts`, one look-up each.
    fn documents_of(
        &self,
        contexts: &[Context],
    ) -> Result<(HashMap<DocKey, String>, HashMap<DocKey, SourceMap>)> {
        let mut keys: Vec<DocKey> = contexts.iter().map(|c| c.doc).collect();
        keys.sort_unstable();
        keys.dedup();
        let ids = keys.iter().copied().zip(self.engine.store.doc_ids_by_key(&keys)?).collect();
        let maps = keys
            .iter()
            .copied()
            .zip(self.engine.store.source_maps(&keys)?)
            .filter_map(|(k, m)| Some((k, m?)))
            .collect();
        Ok((ids, maps))
    }

    /// Scores chunks under one representation as the strategy's mode says; `dense` holds the
    /// query's vector by each model when the mode needs them; `allowed` keeps only those
    /// documents' chunks.
    fn score(
        &self,
        query: &str,
        dense: &Dense<'_>,
        strategy: &Strategy,
        repr: &Resolved,
        analyzer: ckeep_index::Analyzer,
        allowed: Option<&AllowedDocs>,
    ) -> Result<Scored> {
        let candidates = candidates(strategy);
        let params = VectorParams::of(strategy);
        if strategy.mode == Mode::Dense {
            // The one model's vectors: the store's own, or a further model's.
            let repr = match dense.models.first() {
                Some(model) => model.resolve(repr, &self.manifest)?,
                None => repr.clone(),
            };
            let (hits, dense_filter) = self.engine.vectors().dense_hits(
                dense.query(0),
                &repr,
                candidates,
                params,
                allowed,
            )?;
            return Ok(Scored { hits, dense_only: true, dense_filter, ..Scored::default() });
        }
        let (terms, _) = analyzer.term_counts(query);
        let names: Vec<String> = terms.iter().map(|(t, _)| t.clone()).collect();
        let field = repr.field.as_deref().unwrap_or(PLAIN_FIELD);
        let (stats, postings) = self.engine.store.postings(field, &names)?;
        let bm25 = strategy.lexical.bm25(self.engine.bm25)?;
        let title = match strategy.lexical.title_weight {
            Some(_) if field == PLAIN_FIELD => {
                return Err(Error::Invalid(format!(
                    "title_weight needs the title indexed beside the text, and `{}` has none: add the documents with --fields title,text, or search repr=contextual:title",
                    repr.key
                )));
            }
            Some(w) => {
                let (text_stats, text) = self.engine.store.postings(PLAIN_FIELD, &names)?;
                Some(TitlePostings { text, text_stats, weight: w.get() })
            }
            None => None,
        };
        let title_field = title.as_ref().map(TitlePostings::field);
        let mut hits = bm25.score_fields(&terms, &postings, stats, title_field);
        if let Some(allowed) = allowed {
            hits.retain(|h| allowed.contains(h.doc));
        }
        let mut fused = None;
        let mut dense_filter = None;
        if let Mode::Hybrid(fusion) = strategy.mode {
            let mut lists = Vec::with_capacity(dense.models.len());
            for (i, model) in dense.models.iter().enumerate() {
                let repr = model.resolve(repr, &self.manifest)?;
                let (list, plan) = self.engine.vectors().dense_hits(
                    dense.query(i),
                    &repr,
                    candidates,
                    params,
                    allowed,
                )?;
                lists.push(list);
                // The first model's plan stands for all: the same filter, the same rows.
                dense_filter = dense_filter.or(plan);
            }
            let (f, parts) =
                fusion.fuse(hits, lists, candidates).map_err(|e| Error::Invalid(e.to_string()))?;
            hits = f;
            fused = Some(parts);
        }
        Ok(Scored {
            bm25,
            terms,
            names,
            stats,
            postings,
            title,
            hits,
            fused,
            dense_only: false,
            dense_filter,
        })
    }

    /// Every score component of the chunks behind one result, and what diversification charged
    /// it (`diversity`, by the result's chunks).
    fn explain(
        scored: &Scored,
        strategy: &Strategy,
        dense: &Dense<'_>,
        chunks: &[(ChunkHit, Span)],
        diversity: &HashMap<ChunkId, crate::diversify::Redundancy>,
    ) -> Explanation {
        let list_names: Vec<String> = std::iter::once("bm25".to_string())
            .chain(
                dense
                    .models
                    .iter()
                    .map(|m| m.0.as_ref().map_or_else(|| dense.own.clone(), |r| r.name.clone())),
            )
            .collect();
        let chunk = |(h, span): &(ChunkHit, Span)| {
            let parts = scored.fused.as_ref().and_then(|p| p.get(&h.chunk));
            let (bm25, dense) = match parts {
                Some(p) => (p.bm25().map(|b| b.0), p.dense().map(|d| d.0)),
                None if scored.dense_only => (None, Some(h.score)),
                None => (Some(h.score), None),
            };
            ChunkExplanation {
                chunk_id: h.chunk,
                span: *span,
                bm25,
                dense,
                bm25_rank: parts.and_then(|p| p.bm25().map(|b| b.1)),
                dense_rank: parts.and_then(|p| p.dense().map(|d| d.1)),
                fused: parts.map(|p| p.fused),
                lists: parts
                    .map(|p| {
                        p.lists
                            .iter()
                            .zip(&list_names)
                            .filter_map(|(part, list)| {
                                part.map(|l| ListExplanation {
                                    list: list.clone(),
                                    score: l.score,
                                    rank: l.rank,
                                    contribution: l.contribution,
                                })
                            })
                            .collect()
                    })
                    .unwrap_or_default(),
                terms: if bm25.is_some() {
                    scored.bm25.explain(
                        &scored.terms,
                        &scored.postings,
                        scored.stats,
                        scored.title.as_ref().map(TitlePostings::field),
                        h.chunk,
                    )
                } else {
                    Vec::new()
                },
            }
        };
        Explanation {
            mode: strategy.mode.to_string(),
            query_terms: scored.names.clone(),
            model: strategy
                .mode
                .needs_model()
                .then(|| list_names[1..].join("+"))
                .filter(|m| !m.is_empty()),
            aggregation: (strategy.level == Level::Doc).then(|| strategy.agg.to_string()),
            expansion: (strategy.expand != crate::expand::Expansion::None)
                .then(|| strategy.expand.to_string()),
            representation: (strategy.repr != [crate::represent::Representation::Plain])
                .then(|| strategy.repr_spec()),
            diversity: chunks.iter().find_map(|(h, _)| diversity.get(&h.chunk)).copied(),
            chunks: chunks.iter().map(chunk).collect(),
        }
    }
}

/// The query's vectors for dense lists: one per model, in the strategy's order, and the name of
/// the store's own model (for explanations).
struct Dense<'a> {
    models: &'a [crate::more_models::DenseModel],
    queries: &'a [Vec<f32>],
    own: String,
}

impl Dense<'_> {
    /// The query's vector by model `i` (empty when the mode embeds none).
    fn query(&self, i: usize) -> &[f32] {
        self.queries.get(i).map_or(&[], Vec::as_slice)
    }
}

/// Reciprocal-rank fusion (k = 60) of document rankings from several representations; each
/// document keeps the chunks of the first ranking that has it.
fn fuse_documents(lists: Vec<Vec<DocHit>>, k: usize) -> Vec<DocHit> {
    let mut fused: HashMap<DocKey, DocHit> = HashMap::new();
    for list in lists {
        for (rank, hit) in list.into_iter().enumerate() {
            let add = 1.0 / (ckeep_index::RRF_K as f32 + rank as f32 + 1.0);
            fused
                .entry(hit.doc)
                .and_modify(|d| d.score += add)
                .or_insert(DocHit { score: add, ..hit });
        }
    }
    let mut out: Vec<DocHit> = fused.into_values().collect();
    out.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.doc.cmp(&b.doc)));
    out.truncate(k);
    out
}
