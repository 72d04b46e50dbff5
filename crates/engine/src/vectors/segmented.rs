//! A representation's rows as dense search holds them while the store changes, whatever their
//! precision (float32 vectors, int8 or binary codes): segments of rows, each with the HNSW
//! graph it walks, plus tombstones and a scanned tail. The first segment is the rows the store's
//! whole graph was built over, which walk it; a server's indexer freezes the rows written since
//! into further segments, each with its own graph, and merges them by size
//! ([`super::segments`]); the store keeps them too ([`super::saved`]).
//! Rows written after the last freeze are the tail, scanned; rows removed or replaced since
//! their segment was made are its tombstones. So a store under writes walks graphs, and a
//! change costs its own size — as Lucene, tantivy and Qdrant keep theirs.

use std::collections::{HashMap, HashSet};
use std::fmt::Debug;
use std::sync::{Arc, OnceLock};

use ckeep_core::{ChunkHit, ChunkId, DocKey};
use ckeep_index::{Hnsw, top_k};

/// Rows of one precision, each with its chunk and document: what a segment holds.
pub(crate) trait Rows: Debug + Clone + Default + Send + Sync {
    /// The chunk of each row.
    fn ids(&self) -> &[ChunkId];
    /// The document of each row.
    fn docs(&self) -> &[DocKey];
    /// Columns (0 before any row).
    fn dim(&self) -> usize;
    /// The rows `keep` accepts, in order.
    fn retain(&self, keep: impl Fn(usize) -> bool) -> Self;
    /// Appends `more`; false (nothing appended) when they differ in kind or dimension.
    fn append(&mut self, more: &Self) -> bool;
    /// At least the best `wanted` rows `live` accepts, by a scan, as `(row, score)` (the
    /// caller keeps the best); `sparse` when few rows may be accepted, so only those are scored.
    fn scan(
        &self,
        q: &[f32],
        wanted: usize,
        live: impl Fn(usize) -> bool + Sync,
        sparse: bool,
    ) -> Vec<(u32, f32)>;
    /// The best `k` rows found by walking `graph` (built over these rows), `None` when the
    /// graph does not fit them; the walk ends early past `floor` (see
    /// [`Hnsw::search_above`]).
    fn walk(
        &self,
        graph: &Hnsw,
        q: &[f32],
        k: usize,
        ef: usize,
        floor: f32,
    ) -> Option<Vec<(u32, f32)>>;
    /// [`Rows::walk`] among the rows `keep` accepts.
    fn walk_kept(
        &self,
        graph: &Hnsw,
        q: &[f32],
        k: usize,
        ef: usize,
        keep: impl Fn(u32) -> bool,
    ) -> Option<Vec<(u32, f32)>>;
    /// Bytes held, chunk ids included.
    fn memory(&self) -> usize;

    /// Rows.
    fn len(&self) -> usize {
        self.ids().len()
    }

    /// The hit of row `row`, scored `score`.
    fn hit(&self, (row, score): (u32, f32)) -> ChunkHit {
        ChunkHit { chunk: self.ids()[row as usize], doc: self.docs()[row as usize], score }
    }
}

/// Rows frozen together, in chunk order, with the graph they walk.
#[derive(Debug)]
pub(crate) struct Segment<R> {
    /// Unique among one representation's segments, so tombstones outlive merges of others.
    pub id: u64,
    pub rows: Arc<R>,
    /// The HNSW graph over these rows: set when a frozen segment is made; for the segment read
    /// whole, the store's graph, read when a search first needs it (`None` when the collection
    /// is small or the stored graph is not current).
    pub graph: OnceLock<Option<Arc<Hnsw>>>,
}

impl<R: Rows> Segment<R> {
    /// A segment of `rows` whose graph is read when first needed.
    pub fn new(id: u64, rows: R) -> Self {
        Self { id, rows: Arc::new(rows), graph: OnceLock::new() }
    }

    /// A segment of `rows` with `graph` (`None`: scanned).
    pub fn frozen(id: u64, rows: R, graph: Option<Arc<Hnsw>>) -> Self {
        Self { id, rows: Arc::new(rows), graph: OnceLock::from(graph) }
    }

    /// The row of `chunk`, found by bisection (rows are in chunk order).
    fn row_of(&self, chunk: ChunkId) -> Option<u32> {
        self.rows.ids().binary_search(&chunk).ok().map(|r| r as u32)
    }

    /// The graph, when set and set to one.
    pub fn graph(&self) -> Option<&Arc<Hnsw>> {
        self.graph.get().and_then(Option::as_ref)
    }
}

/// A representation's rows as of one store generation (see the module's account).
#[derive(Debug, Clone)]
pub(crate) struct Segmented<R> {
    pub segments: Vec<Arc<Segment<R>>>,
    /// Each segment's rows removed or replaced since it was made, by segment id.
    pub removed: HashMap<u64, HashSet<u32>>,
    /// Rows written since the last freeze, in the order they were read.
    pub tail: R,
    /// The store generation the first segment was read whole at: its graph's cache key.
    pub read_at: u64,
}

/// The score of the `k`-th best of `hits`: what a row must beat to enter their top `k`
/// (−∞ while there are fewer).
fn kth_best(hits: &[ChunkHit], k: usize) -> f32 {
    if k == 0 || hits.len() < k {
        return f32::NEG_INFINITY;
    }
    let mut scores: Vec<f32> = hits.iter().map(|h| h.score).collect();
    let (_, kth, _) = scores.select_nth_unstable_by(k - 1, |a, b| b.total_cmp(a));
    *kth
}

impl<R: Rows> Segmented<R> {
    /// Rows read whole at store generation `generation`, in chunk order: one segment.
    pub fn whole(rows: R, generation: u64) -> Self {
        let tail = rows.retain(|_| false);
        let segment = Segment::new(0, rows);
        Self {
            segments: vec![Arc::new(segment)],
            removed: HashMap::new(),
            tail,
            read_at: generation,
        }
    }

    /// The segment read whole (whose graph the store keeps).
    pub fn first(&self) -> &Segment<R> {
        &self.segments[0]
    }

    /// Live rows.
    pub fn len(&self) -> usize {
        let frozen: usize = self.segments.iter().map(|s| s.rows.len()).sum();
        frozen - self.tombstones() + self.tail.len()
    }

    /// Rows removed from segments since they were made.
    pub fn tombstones(&self) -> usize {
        self.removed.values().map(HashSet::len).sum()
    }

    /// Whether the first segment is all there is: nothing written or removed since the read.
    pub fn is_pure(&self) -> bool {
        self.segments.len() == 1 && self.removed.is_empty() && self.tail.len() == 0
    }

    /// Columns (0 when empty).
    pub fn dim(&self) -> usize {
        self.segments.iter().map(|s| s.rows.dim()).max().unwrap_or(0).max(self.tail.dim())
    }

    /// The rows of `segment` not removed since it was made, in its order.
    pub fn live_rows<'a>(&'a self, segment: &'a Segment<R>) -> impl Iterator<Item = usize> + 'a {
        let dead = self.removed.get(&segment.id);
        (0..segment.rows.len()).filter(move |&r| dead.is_none_or(|d| !d.contains(&(r as u32))))
    }

    /// The live chunks of `segment`, in its order.
    pub fn live_chunks<'a>(
        &'a self,
        segment: &'a Segment<R>,
    ) -> impl Iterator<Item = ChunkId> + 'a {
        self.live_rows(segment).map(|r| segment.rows.ids()[r])
    }

    /// The index after the writes that changed the vectors of `changed`, whose rows now are
    /// `fresh` (chunks without one were removed): their rows in segments tombstoned, in the
    /// tail replaced. `None` when `fresh` is of another kind or dimension: then the caller
    /// reads every row again.
    pub fn with_changes(&self, changed: &[ChunkId], fresh: &R) -> Option<Self> {
        if fresh.len() > 0 && self.dim() != 0 && fresh.dim() != self.dim() {
            return None;
        }
        let gone: HashSet<ChunkId> = changed.iter().copied().collect();
        let mut removed = self.removed.clone();
        for segment in &self.segments {
            for row in changed.iter().filter_map(|&c| segment.row_of(c)) {
                removed.entry(segment.id).or_default().insert(row);
            }
        }
        let mut tail = self.tail.retain(|i| !gone.contains(&self.tail.ids()[i]));
        if tail.len() == 0 {
            tail = fresh.clone();
        } else if fresh.len() > 0 && !tail.append(fresh) {
            return None;
        }
        let segments = self.segments.clone();
        Some(Self { segments, removed, tail, read_at: self.read_at })
    }

    /// `self` with `graph` as its first segment's, when that segment is still the one of
    /// `planned` (the index the graph was built for); `None` when the rows were read again.
    pub fn with_first_graph(&self, planned: &Self, graph: Arc<Hnsw>) -> Option<Self> {
        if !Arc::ptr_eq(&self.segments[0], &planned.segments[0]) {
            return None;
        }
        let first = self.first();
        let cell = OnceLock::from(Some(graph));
        let segment = Segment { id: first.id, rows: Arc::clone(&first.rows), graph: cell };
        let mut next = self.clone();
        next.segments[0] = Arc::new(segment);
        Some(next)
    }

    /// Live rows of `allowed` documents (all live rows without a filter).
    pub fn matching(&self, allowed: impl Fn(DocKey) -> bool) -> usize {
        let mut n = 0;
        for s in &self.segments {
            let dead = self.removed.get(&s.id);
            let live = |&(r, d): &(usize, &DocKey)| {
                allowed(*d) && dead.is_none_or(|dead| !dead.contains(&(r as u32)))
            };
            n += s.rows.docs().iter().enumerate().filter(live).count();
        }
        n + self.tail.docs().iter().filter(|&&d| allowed(d)).count()
    }

    /// Whether any segment has a graph to walk.
    pub fn has_graph(&self) -> bool {
        self.segments.iter().any(|s| s.graph().is_some())
    }

    /// The best `wanted` live rows for `q`, best first, among the documents `keep` accepts:
    /// each segment's graph walked when it has one and `walk` says so (with tombstones and
    /// rejected rows skipped), else its rows scanned; the tail scanned. Scores of every
    /// segment are on one scale, so the merge ranks them as one collection would. Larger
    /// segments go first, and a later walk stops once it cannot beat the `wanted` rows found
    /// before it: a small segment beside a large one costs a short walk.
    pub fn nearest(
        &self,
        q: &[f32],
        wanted: usize,
        ef: usize,
        keep: Option<&(dyn Fn(DocKey) -> bool + Sync)>,
        walk: bool,
    ) -> Vec<ChunkHit> {
        let mut hits: Vec<ChunkHit> = Vec::new();
        let mut order: Vec<&Arc<Segment<R>>> = self.segments.iter().collect();
        order.sort_by_key(|s| std::cmp::Reverse(s.rows.len()));
        for s in order {
            let rows = &*s.rows;
            let dead = self.removed.get(&s.id);
            let live = |r: usize| {
                keep.is_none_or(|k| k(rows.docs()[r]))
                    && dead.is_none_or(|d| !d.contains(&(r as u32)))
            };
            let graph = s.graph().filter(|_| walk);
            let walked = graph.and_then(|g| match keep {
                // A few more when tombstones may take places.
                None => {
                    let asked = wanted + dead.map_or(0, HashSet::len).min(wanted);
                    let floor = kth_best(&hits, wanted);
                    let found = rows.walk(g, q, asked, ef.max(asked), floor)?;
                    Some(found.into_iter().filter(|&(r, _)| live(r as usize)).collect())
                }
                Some(_) => rows.walk_kept(g, q, wanted, ef.max(wanted), |r| live(r as usize)),
            });
            let found = walked.unwrap_or_else(|| rows.scan(q, wanted, live, keep.is_some()));
            hits.extend(found.into_iter().map(|f| rows.hit(f)));
        }
        if self.tail.len() > 0 {
            let tail = &self.tail;
            let live = |r: usize| keep.is_none_or(|k| k(tail.docs()[r]));
            hits.extend(
                tail.scan(q, wanted, live, keep.is_some()).into_iter().map(|f| tail.hit(f)),
            );
        }
        top_k(hits, wanted)
    }

    /// Bytes of rows (chunk ids included), and of the graphs read or built.
    pub fn memory(&self) -> (usize, usize) {
        let rows = self.segments.iter().map(|s| s.rows.memory()).sum::<usize>();
        let graphs = self.segments.iter().filter_map(|s| s.graph()).map(|g| g.memory());
        (rows + self.tail.memory(), graphs.sum())
    }
}
