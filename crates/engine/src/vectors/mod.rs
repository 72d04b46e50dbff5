//! Dense retrieval: a query's vector against a representation's chunk vectors, by one entry
//! ([`VectorIndex::dense_hits`]) over four backends ([`Backend`]): an exact scan, the HNSW graph, the
//! compact codes of a quantised representation, or the store's own vector search.
//!
//! - `cache`: what is loaded (vectors, codes, graphs), shared by an engine and its readers, and
//!   the refresh policy;
//! - `dense`: loading float32 vectors and following the store's change log; the query's vector;
//! - `segmented`: rows of any precision in segments, each with its graph, with tombstones and
//!   a scanned tail, as a store under writes holds them;
//! - `live`: float32 vectors in segments;
//! - `codes`, `quantized`: int8 and binary codes in segments, and searching them;
//! - `segments`: a server's indexer freezing and merging segments;
//! - `blob`: the stored graph's format (stamp, chunk ids, graph);
//! - `maintain`: the writer's side, keeping each graph current and saving it;
//! - `saved`: segments as the store keeps them, so a save writes only what changed;
//! - `verify`: `ckeep check` of the stored graphs against the store's vectors.
//!
//! Nothing here imports the search pipeline (`search`, `expand`): vectors are below it.

mod blob;
pub(crate) mod cache;
mod codes;
mod dense;
pub(crate) mod live;
mod maintain;
mod quantized;
mod saved;
mod segmented;
mod segments;
mod verify;

use ckeep_core::{ChunkHit, DocKey};
use ckeep_index::{Quantization, dot_all, top_k};
use ckeep_store::{StoreRead, VectorMatrix, VectorSearch};

pub use blob::VectorIndexBuild;
pub(crate) use blob::save;
pub(crate) use dense::check_model;
pub(crate) use quantized::set_quantization;
pub use verify::GraphCheck;

use crate::error::{Error, Result};
use crate::filtered::{AllowedDocs, DenseFilter, FilteredBy};
use crate::represent::{Resolved, Source};
use crate::strategy::Strategy;

/// Collections with at least this many vectors are searched through the HNSW graph (unless the
/// strategy says `exact`); below it an exact scan is fast enough and always right.
pub const ANN_MIN_VECTORS: usize = 20_000;

/// Beam width of HNSW searches (at least the number of candidates asked for).
const ANN_EF: usize = 128;

/// Changes applied to loaded vectors rather than reading them all again: up to a quarter of
/// the rows plus this many (so a small collection still follows its writes by the log).
const MIN_CHANGES_READ_ALL: usize = 1_024;

/// Extra neighbours asked of a store that searches its own vectors (see
/// [`store_hits`]).
const NEAREST_MARGIN: usize = 16;

/// How a dense search treats quantised vectors (the strategy's `oversample` and `rescore`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Rescoring {
    /// Candidates rescored per result (`None`: the quantisation's default).
    pub oversample: Option<usize>,
    /// Whether candidates are rescored with their float32 vectors at all.
    pub rescore: bool,
}

/// What a strategy asks of a dense search, in one place: exactness, the quantisation to use
/// (`None`: the manifest's), and how candidates from codes are rescored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct VectorParams {
    pub exact: bool,
    pub quantize: Option<Quantization>,
    pub rescoring: Rescoring,
}

impl VectorParams {
    pub fn of(strategy: &Strategy) -> Self {
        Self {
            exact: strategy.exact,
            quantize: strategy.quantize,
            rescoring: Rescoring { oversample: strategy.oversample, rescore: strategy.rescore },
        }
    }
}

/// Where a dense search finds its candidates.
#[derive(Clone, Copy)]
pub(crate) enum Backend<'a> {
    /// Every loaded vector scored (asked for, or a collection too small for a graph).
    Exact,
    /// The loaded vectors' HNSW graph (a large collection; an exact scan while it has none);
    /// a filtered search walks it or scores the matching rows, by the filter plan.
    Graph,
    /// The compact codes of a quantised stored representation, scanned or walking the graph,
    /// candidates rescored with their float32 vectors.
    Codes(&'a str, Quantization),
    /// The store's own vector search (PostgreSQL + pgvector), its rows scored here.
    Store(&'a str, &'a dyn VectorSearch),
}

impl<'a> Backend<'a> {
    /// The backend for a search of `repr` with `params`, on a store with or without a vector
    /// search of its own.
    pub fn choose(
        repr: &'a Resolved,
        params: VectorParams,
        store_search: Option<&'a dyn VectorSearch>,
    ) -> Self {
        let exact = params.exact;
        if let Source::Stored(name) = &repr.source {
            // Quantised: our own scan of the codes, whatever the store (a PostgreSQL store
            // then serves the candidates' float32 vectors for rescoring).
            let kind = params.quantize.unwrap_or(repr.quantize);
            if kind != Quantization::None && !params.exact {
                return Self::Codes(name, kind);
            }
            if let Some(search) = store_search {
                return Self::Store(name, search);
            }
        }
        if exact { Self::Exact } else { Self::Graph }
    }
}

/// A store's vectors as one engine holds them: what it has loaded (shared with its readers),
/// read through one store connection, and the graphs kept current over them. Made by
/// [`crate::Engine::vectors`]; it reads only, so a server's indexer builds graphs with it
/// beside the writer, which saves what it returns ([`crate::Writer::save_vector_index`]).
///
/// Not for deciding what to search: the search pipeline asks it for hits
/// (`VectorIndex::dense_hits`) and never sees which backend answered.
#[derive(Debug, Clone, Copy)]
pub struct VectorIndex<'a, S> {
    store: &'a S,
    cache: &'a cache::VectorCache,
    /// Whether graphs are kept current by the caller (a server's background pass) rather than
    /// built at ingest or by a query that finds them stale.
    background: bool,
}

impl<'a, S> VectorIndex<'a, S> {
    /// The index over `store`, holding what `cache` has loaded.
    pub(crate) fn new(store: &'a S, cache: &'a cache::VectorCache, background: bool) -> Self {
        Self { store, cache, background }
    }
}

/// Vectors of another dimension than the query's cannot be compared with it.
fn same_dimension(dim: usize, q: &[f32]) -> Result<()> {
    if dim == q.len() {
        return Ok(());
    }
    Err(Error::Invalid(format!(
        "the store's vectors have {dim} dimensions, the query's {}",
        q.len()
    )))
}

/// Every row of `m` scored against `q`: how the rows a store found are scored.
fn scan(m: &VectorMatrix, q: &[f32]) -> Vec<ChunkHit> {
    dot_all(&m.data, m.dim, q)
        .into_iter()
        .enumerate()
        .map(|(i, score)| ChunkHit { chunk: m.ids[i], doc: m.docs[i], score })
        .collect()
}

impl<S: StoreRead> VectorIndex<'_, S> {
    /// Chunks scored by cosine similarity to the query vector `q` under a representation: every
    /// chunk (exact scan), or, unless `params` say `exact`, the best `candidates` found through
    /// the HNSW graph (large collections, no filter), the compact codes of a quantised
    /// representation (rescored) or the store's own search; only chunks of `allowed` documents
    /// when given, found as the filter plan says (returned with them).
    pub(crate) fn dense_hits(
        &self,
        q: &[f32],
        repr: &Resolved,
        candidates: usize,
        params: VectorParams,
        allowed: Option<&AllowedDocs>,
    ) -> Result<(Vec<ChunkHit>, Option<DenseFilter>)> {
        let backend = Backend::choose(repr, params, self.store.vector_search());
        match backend {
            Backend::Codes(name, kind) => {
                self.quantized_hits(q, name, kind, candidates, params.rescoring, allowed)
            }
            Backend::Store(name, search) => {
                let hits = store_hits(search, q, name, candidates, params, allowed)?;
                let plan = DenseFilter { matching: None, total: None, by: FilteredBy::Store };
                Ok((hits, allowed.map(|_| plan)))
            }
            Backend::Exact | Backend::Graph => {
                self.loaded_hits(q, repr, candidates, backend, allowed)
            }
        }
    }

    /// The best chunks among the loaded vectors of `repr`: through the graph when `backend` is
    /// [`Backend::Graph`] and the collection is large, else by an exact scan; checked against
    /// the store when the vectors are older than it.
    fn loaded_hits(
        &self,
        q: &[f32],
        repr: &Resolved,
        candidates: usize,
        backend: Backend<'_>,
        allowed: Option<&AllowedDocs>,
    ) -> Result<(Vec<ChunkHit>, Option<DenseFilter>)> {
        let (index, _, stale) = self.dense_index(repr)?;
        if index.len() == 0 {
            return Ok((Vec::new(), None));
        }
        same_dimension(index.dim(), q)?;
        let graphs = matches!(backend, Backend::Graph) && index.len() >= ANN_MIN_VECTORS;
        let first = index.first();
        if graphs && first.rows.len() >= ANN_MIN_VECTORS {
            first.graph.get_or_init(|| self.graph(&repr.key, &first.rows, index.read_at));
        }
        let graphs = graphs && index.has_graph();
        let plan = allowed.map(|a| {
            let matching = index.matching(|d| a.contains(d));
            let by = FilteredBy::choose(matching, index.len(), graphs);
            DenseFilter { matching: Some(matching), total: Some(index.len()), by }
        });
        let walk = graphs && plan.is_none_or(|p| p.by == FilteredBy::FilteredGraph);
        let keep = allowed.map(|a| move |d: DocKey| a.contains(d));
        let keep = keep.as_ref().map(|k| k as &(dyn Fn(DocKey) -> bool + Sync));
        let hits = index.nearest(q, candidates, ANN_EF, keep, walk);
        let hits = if stale { self.live_hits(hits, candidates)? } else { hits };
        Ok((hits, plan))
    }
}

/// Chunks found by the store's own vector search (PostgreSQL + pgvector), scored here
/// exactly as `VectorIndex::loaded_hits` scores its own scan: the store ranks, the engine
/// scores. A few more than `candidates` are asked for, so a near tie at the cut, ordered
/// differently by the database's arithmetic, cannot change which chunks are kept.
fn store_hits(
    search: &dyn VectorSearch,
    q: &[f32],
    repr: &str,
    candidates: usize,
    params: VectorParams,
    allowed: Option<&AllowedDocs>,
) -> Result<Vec<ChunkHit>> {
    let docs: Option<Vec<ckeep_core::DocKey>> = allowed.map(AllowedDocs::keys);
    let asked = candidates + NEAREST_MARGIN;
    let exact = params.exact || allowed.is_some();
    let mut m = search.nearest(repr, q, asked, exact, docs.as_deref())?;
    if m.is_empty() {
        return Ok(Vec::new());
    }
    same_dimension(m.dim, q)?;
    m.data.chunks_mut(m.dim).for_each(ckeep_embed::normalize);
    Ok(top_k(scan(&m, q), candidates))
}
