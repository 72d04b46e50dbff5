//! Approximate nearest neighbours by HNSW (Malkov & Yashunin, 2018) over L2-normalised vectors
//! (cosine = dot product), for collections where an exact scan is too slow.
//!
//! Layers are assigned with a seeded generator; nodes are inserted in parallel, each neighbour
//! list behind its own lock (as hnswlib does), so the graph may differ slightly between builds
//! but its recall does not. The graph serialises to bytes ([`Hnsw::to_bytes`]) so a store can
//! keep it beside its vectors. Neighbours are chosen by the paper's heuristic (keep a candidate
//! only if it is closer to the new point than to every neighbour kept so far), which is what
//! makes recall hold up on clustered real data.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::sync::{Mutex, PoisonError, RwLock};

use rayon::prelude::*;

use crate::vector::{dot, dot_rows_at};

mod lists;
mod update;

use lists::Lists;

/// Build and search parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HnswParams {
    /// Neighbours per node on upper layers (twice as many on layer 0).
    pub m: usize,
    /// Beam width while building.
    pub ef_construction: usize,
    /// Seed of the layer generator.
    pub seed: u64,
}

impl Default for HnswParams {
    fn default() -> Self {
        Self { m: 16, ef_construction: 200, seed: 0x5eed }
    }
}

/// An HNSW graph over the rows of a row-major matrix (the matrix itself is not stored).
#[derive(Debug, Clone, PartialEq)]
pub struct Hnsw {
    dim: usize,
    params: HnswParams,
    /// Every node's neighbour lists, from layer 0 up to its level.
    links: Lists,
    entry: Option<u32>,
    max_level: usize,
    /// Nodes deleted since the build ([`Hnsw::delete`]): still walked through, never returned.
    deleted: Vec<bool>,
}

#[derive(Clone, Copy, PartialEq)]
struct Near(f32, u32);

impl Eq for Near {}
impl PartialOrd for Near {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Near {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.total_cmp(&other.0).then(self.1.cmp(&other.1))
    }
}

/// Visited marks reset in O(1) by bumping a generation.
struct Visited {
    marks: Vec<u32>,
    generation: u32,
}

impl Visited {
    fn new(n: usize) -> Self {
        Self { marks: vec![0; n], generation: 0 }
    }
    /// Room for `n` nodes; new slots read as unvisited (generations start at 1).
    fn grow(&mut self, n: usize) {
        if self.marks.len() < n {
            self.marks.resize(n, 0);
        }
    }
    fn clear(&mut self) {
        self.generation = self.generation.wrapping_add(1);
        if self.generation == 0 {
            self.marks.fill(0);
            self.generation = 1;
        }
    }
    /// Marks `i`; true if it was not marked yet.
    fn insert(&mut self, i: u32) -> bool {
        let slot = &mut self.marks[i as usize];
        let new = *slot != self.generation;
        *slot = self.generation;
        new
    }
}

/// Read access to neighbour lists: the finished graph's plain lists, or, while building, lists
/// behind one lock per node.
trait Links: Sync {
    fn each(&self, node: u32, layer: usize, f: impl FnMut(u32));
}

impl Links for [Mutex<Vec<Vec<u32>>>] {
    fn each(&self, node: u32, layer: usize, f: impl FnMut(u32)) {
        let lists = self[node as usize].lock().unwrap_or_else(PoisonError::into_inner);
        lists[layer].iter().copied().for_each(f);
    }
}

/// Rows of a row-major matrix, with distances (`1 − cosine`) between them.
#[derive(Clone, Copy)]
struct Rows<'a> {
    data: &'a [f32],
    dim: usize,
}

impl Rows<'_> {
    fn row(&self, i: u32) -> &[f32] {
        &self.data[i as usize * self.dim..(i as usize + 1) * self.dim]
    }

    fn distance(&self, q: &[f32], i: u32) -> f32 {
        1.0 - dot(q, self.row(i))
    }

    /// Distances from `q` to the rows `ids`, into `out`: scored four rows at a time, so their
    /// scattered loads overlap.
    fn distances(&self, q: &[f32], ids: &[u32], out: &mut Vec<f32>) {
        dot_rows_at(self.data, self.dim, q, ids, out);
        for d in out.iter_mut() {
            *d = 1.0 - *d;
        }
    }

    /// `q` as a walk's query over these rows.
    fn query<'q>(&self, q: &'q [f32]) -> RowQuery<'q>
    where
        Self: 'q,
    {
        RowQuery { rows: *self, q }
    }

    /// The neighbour-selection heuristic over candidates sorted by distance.
    fn select(&self, sorted: &[Near], m: usize) -> Vec<Near> {
        let mut kept: Vec<Near> = Vec::with_capacity(m);
        for &c in sorted {
            if kept.len() == m {
                break;
            }
            let row = self.row(c.1);
            if kept.iter().all(|k| self.distance(row, k.1) > c.0) {
                kept.push(c);
            }
        }
        // Fill up with the nearest rejected ones so sparse regions stay connected.
        for &c in sorted {
            if kept.len() == m {
                break;
            }
            if !kept.iter().any(|k| k.1 == c.1) {
                kept.push(c);
            }
        }
        kept
    }

    /// Cuts `node`'s list down to the best `max` neighbours by the heuristic.
    fn prune(&self, node: u32, list: &mut Vec<u32>, max: usize) {
        let p = self.row(node);
        let mut cands: Vec<Near> = list.iter().map(|&nb| Near(self.distance(p, nb), nb)).collect();
        cands.sort();
        *list = self.select(&cands, max).into_iter().map(|n| n.1).collect();
    }
}

/// Distances from one query to rows of the matrix a graph is over: float32 rows, or int8
/// codes of them ([`Hnsw::search_codes`]).
trait Distances {
    /// Distances to the rows `ids`, into `out` (cleared first).
    fn distances(&self, ids: &[u32], out: &mut Vec<f32>);
}

/// A float32 query against float32 rows.
struct RowQuery<'a> {
    rows: Rows<'a>,
    q: &'a [f32],
}

impl Distances for RowQuery<'_> {
    fn distances(&self, ids: &[u32], out: &mut Vec<f32>) {
        self.rows.distances(self.q, ids, out);
    }
}

impl Distances for crate::quant::Int8Query<'_> {
    fn distances(&self, ids: &[u32], out: &mut Vec<f32>) {
        self.scores_at(ids, out);
        for d in out.iter_mut() {
            *d = 1.0 - *d;
        }
    }
}

/// Walks to ever closer neighbours on one layer until none is closer.
fn greedy(d: &impl Distances, links: &(impl Links + ?Sized), mut at: u32, layer: usize) -> u32 {
    let (mut ids, mut dists) = (vec![at], Vec::new());
    d.distances(&ids, &mut dists);
    let mut best = dists[0];
    loop {
        ids.clear();
        links.each(at, layer, |nb| ids.push(nb));
        d.distances(&ids, &mut dists);
        let mut next = at;
        for (&nb, &dist) in ids.iter().zip(&dists) {
            if dist < best {
                (best, next) = (dist, nb);
            }
        }
        if next == at {
            return at;
        }
        at = next;
    }
}

/// Beam search on one layer; returns up to `ef` nearest, sorted by distance.
fn search_layer(
    d: &impl Distances,
    links: &(impl Links + ?Sized),
    entries: &[u32],
    ef: usize,
    layer: usize,
    visited: &mut Visited,
) -> Vec<Near> {
    search_layer_kept(d, links, entries, (ef, Enough::NEVER), layer, visited, |_| true)
}

/// When a walk may stop before its beam is exhausted: once the nearest unexplored node is
/// farther than `distance` — nearer nodes found elsewhere (other segments of one collection)
/// already fill the caller's top `k` — and farther than the `k` nearest the walk has found
/// itself (so it has closed in on the query first: the entry point's neighbourhood is
/// usually farther than `distance`). Lucene's segments share their minimum competitive
/// similarity the same way.
#[derive(Debug, Clone, Copy)]
struct Enough {
    k: usize,
    distance: f32,
}

/// A walk given a floor stops early only once its own nearest `EARLY_STOP_DEPTH × k` are
/// farther than the next candidate too. Chosen on the tuning queries of
/// `cargo bench -p ckeep-index --bench segment_walks` (`BENCH_QUERIES=tune`): 1 cut a
/// segmented search's time in half but lost 1.1 points of recall@10, 2 cut it by 37% for
/// 0.3 points, 4 by 18% for none.
const EARLY_STOP_DEPTH: usize = 2;

impl Enough {
    /// Only the beam ends the walk.
    const NEVER: Self = Self { k: usize::MAX, distance: f32::INFINITY };
}

/// Beam search on one layer that returns only nodes `keep` accepts (up to `ef`, sorted by
/// distance) but walks through every node: a filter must not cut the paths to the nodes it
/// keeps (hnswlib's filtered search). With `keep` always true this is the plain search.
fn search_layer_kept(
    d: &impl Distances,
    links: &(impl Links + ?Sized),
    entries: &[u32],
    (ef, enough): (usize, Enough),
    layer: usize,
    visited: &mut Visited,
    keep: impl Fn(u32) -> bool,
) -> Vec<Near> {
    visited.clear();
    let mut frontier: BinaryHeap<std::cmp::Reverse<Near>> = BinaryHeap::new();
    let mut best: BinaryHeap<Near> = BinaryHeap::new();
    // The `enough.k` nearest accepted so far, when the walk may end early.
    let mut nearest: BinaryHeap<Near> = BinaryHeap::new();
    let found = |nearest: &mut BinaryHeap<Near>, n: Near| {
        if enough.distance.is_finite() {
            nearest.push(n);
            if nearest.len() > enough.k {
                nearest.pop();
            }
        }
    };
    // A node's unvisited neighbours are gathered first and scored in one batch.
    let mut ids: Vec<u32> = entries.iter().copied().filter(|&e| visited.insert(e)).collect();
    let mut dists = Vec::new();
    d.distances(&ids, &mut dists);
    for (&e, &dist) in ids.iter().zip(&dists) {
        frontier.push(std::cmp::Reverse(Near(dist, e)));
        if keep(e) {
            best.push(Near(dist, e));
            found(&mut nearest, Near(dist, e));
        }
    }
    while best.len() > ef {
        best.pop();
    }
    while let Some(std::cmp::Reverse(c)) = frontier.pop() {
        if best.len() >= ef && best.peek().is_some_and(|w| c.0 > w.0) {
            break;
        }
        if nearest.len() >= enough.k
            && c.0 > enough.distance
            && nearest.peek().is_some_and(|w| c.0 > w.0)
        {
            break;
        }
        ids.clear();
        links.each(c.1, layer, |nb| {
            if visited.insert(nb) {
                ids.push(nb);
            }
        });
        d.distances(&ids, &mut dists);
        for (&nb, &dist) in ids.iter().zip(&dists) {
            if best.len() < ef || best.peek().is_some_and(|w| dist < w.0) {
                frontier.push(std::cmp::Reverse(Near(dist, nb)));
                if keep(nb) {
                    best.push(Near(dist, nb));
                    found(&mut nearest, Near(dist, nb));
                    if best.len() > ef {
                        best.pop();
                    }
                }
            }
        }
    }
    best.into_sorted_vec()
}

/// The level of each node: `⌊−ln(u)·mL⌋` from a seeded xorshift64*, so levels are reproducible.
fn levels(n: usize, params: HnswParams) -> Vec<usize> {
    let mut rng = params.seed | 1;
    let ml = 1.0 / (params.m.max(2) as f64).ln();
    (0..n)
        .map(|_| {
            rng ^= rng >> 12;
            rng ^= rng << 25;
            rng ^= rng >> 27;
            let u = ((rng.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 + 1.0)
                / (1u64 << 53) as f64;
            (-u.ln() * ml).floor() as usize
        })
        .collect()
}

/// The graph under construction: every node's lists pre-sized to its level, each behind a lock.
struct Builder<'a> {
    rows: Rows<'a>,
    params: HnswParams,
    links: Vec<Mutex<Vec<Vec<u32>>>>,
    /// Entry node and top level.
    top: RwLock<(u32, usize)>,
    /// Held while a node that raises the top level is inserted, so two cannot race.
    grow: Mutex<()>,
}

impl Builder<'_> {
    fn max_links(&self, layer: usize) -> usize {
        update::max_links(self.params, layer)
    }

    fn insert(&self, node: u32, level: usize, visited: &mut Visited) {
        let mut top = *self.top.read().unwrap_or_else(PoisonError::into_inner);
        let _grow = (level > top.1).then(|| {
            let guard = self.grow.lock().unwrap_or_else(PoisonError::into_inner);
            top = *self.top.read().unwrap_or_else(PoisonError::into_inner);
            guard
        });
        let (mut entry, max_level) = top;
        let q = self.rows.query(self.rows.row(node));
        let links = self.links.as_slice();
        for layer in (level + 1..=max_level).rev() {
            entry = greedy(&q, links, entry, layer);
        }
        let mut entries = vec![entry];
        for layer in (0..=level.min(max_level)).rev() {
            let found =
                search_layer(&q, links, &entries, self.params.ef_construction, layer, visited);
            let chosen = self.rows.select(&found, self.params.m);
            self.links[node as usize].lock().unwrap_or_else(PoisonError::into_inner)[layer] =
                chosen.iter().map(|n| n.1).collect();
            for &Near(_, nb) in &chosen {
                let mut lists =
                    self.links[nb as usize].lock().unwrap_or_else(PoisonError::into_inner);
                let list = &mut lists[layer];
                list.push(node);
                if list.len() > self.max_links(layer) {
                    self.rows.prune(nb, list, self.max_links(layer));
                }
            }
            entries = found.iter().map(|n| n.1).collect();
        }
        if level > max_level {
            *self.top.write().unwrap_or_else(PoisonError::into_inner) = (node, level);
        }
    }
}

impl Hnsw {
    /// Builds the graph over `data` (`n × dim`, rows L2-normalised), inserting in parallel.
    pub fn build(data: &[f32], dim: usize, params: HnswParams) -> Self {
        let n = data.len().checked_div(dim).unwrap_or(0);
        let levels = levels(n, params);
        if n == 0 {
            return Self {
                dim,
                params,
                links: Lists::with_capacity(update::max_links(params, 0), 0),
                entry: None,
                max_level: 0,
                deleted: Vec::new(),
            };
        }
        let builder = Builder {
            rows: Rows { data, dim },
            params,
            links: levels.iter().map(|&l| Mutex::new(vec![Vec::new(); l + 1])).collect(),
            top: RwLock::new((0, levels[0])),
            grow: Mutex::new(()),
        };
        (1..n).into_par_iter().with_min_len(4096).for_each_init(
            || Visited::new(n),
            |visited, i| builder.insert(i as u32, levels[i], visited),
        );
        let (entry, max_level) = builder.top.into_inner().unwrap_or_else(PoisonError::into_inner);
        let mut links = Lists::with_capacity(update::max_links(params, 0), n);
        for (node, lists) in builder.links.into_iter().enumerate() {
            let lists = lists.into_inner().unwrap_or_else(PoisonError::into_inner);
            links.push(lists.len() - 1);
            for (layer, list) in lists.iter().enumerate() {
                // Within the maximum: the build prunes every list to it.
                links.set(node as u32, layer, list);
            }
        }
        Self { dim, params, links, entry: Some(entry), max_level, deleted: vec![false; n] }
    }

    /// The `k` rows most similar to `q` (normalised) as `(row, cosine)`, best first; `ef` ≥ k
    /// is the beam width (larger: better recall, slower).
    pub fn search(&self, data: &[f32], q: &[f32], k: usize, ef: usize) -> Vec<(u32, f32)> {
        self.search_above(data, q, k, ef, f32::NEG_INFINITY)
    }

    /// [`Hnsw::search`] for a caller that already holds `k` rows at least `floor` similar
    /// (from other graphs of one collection): the walk stops once every row left to explore
    /// is less similar than `floor` and than its own nearest 2 × `k` rows, so a
    /// small graph beside a large one costs a short walk rather than a full beam.
    pub fn search_above(
        &self,
        data: &[f32],
        q: &[f32],
        k: usize,
        ef: usize,
        floor: f32,
    ) -> Vec<(u32, f32)> {
        self.walk(&Rows { data, dim: self.dim }.query(q), k, ef, floor)
    }

    /// The same search walked with the int8 codes of the rows the graph was built over (in
    /// the same order), so the float32 rows need not be in memory: the similarities are the
    /// codes' estimates, for the caller to rescore. `None` unless `codes` are int8 codes of as
    /// many rows as the graph has, as long as `q`.
    pub fn search_codes(
        &self,
        codes: &crate::Codes,
        q: &[f32],
        k: usize,
        ef: usize,
    ) -> Option<Vec<(u32, f32)>> {
        self.search_codes_above(codes, q, k, ef, f32::NEG_INFINITY)
    }

    /// [`Hnsw::search_codes`], stopping early as [`Hnsw::search_above`] does.
    pub fn search_codes_above(
        &self,
        codes: &crate::Codes,
        q: &[f32],
        k: usize,
        ef: usize,
        floor: f32,
    ) -> Option<Vec<(u32, f32)>> {
        if codes.len() != self.len() || codes.dim() != q.len() {
            return None;
        }
        Some(self.walk(&codes.int8_query(q)?, k, ef, floor))
    }

    /// The `k` rows most similar to `q` among those `keep` accepts, walking the whole graph
    /// (rows it rejects still lead to the ones it accepts). Each accepted row found is one of
    /// the `ef` nearest accepted rows, so when few rows are accepted the walk visits most of
    /// the graph: a caller scores few rows exactly instead (see the engine's filter plan).
    pub fn search_filtered(
        &self,
        data: &[f32],
        q: &[f32],
        k: usize,
        ef: usize,
        keep: impl Fn(u32) -> bool,
    ) -> Vec<(u32, f32)> {
        let d = Rows { data, dim: self.dim }.query(q);
        let mut found =
            self.walk_kept(&d, (k, ef), Enough::NEVER, |n| keep(n) && !self.is_deleted(n));
        found.truncate(k);
        found
    }

    /// [`Hnsw::search_codes`] among the rows `keep` accepts (see [`Hnsw::search_filtered`]).
    pub fn search_codes_filtered(
        &self,
        codes: &crate::Codes,
        q: &[f32],
        k: usize,
        ef: usize,
        keep: impl Fn(u32) -> bool,
    ) -> Option<Vec<(u32, f32)>> {
        if codes.len() != self.len() || codes.dim() != q.len() {
            return None;
        }
        let d = codes.int8_query(q)?;
        let mut found =
            self.walk_kept(&d, (k, ef), Enough::NEVER, |n| keep(n) && !self.is_deleted(n));
        found.truncate(k);
        Some(found)
    }

    /// The `k` nearest live rows by `d`, as `(row, similarity)`, best first (see
    /// [`Hnsw::search_above`] for `floor`).
    fn walk(&self, d: &impl Distances, k: usize, ef: usize, floor: f32) -> Vec<(u32, f32)> {
        // Deleted rows take places in the beam, as in the walk before tombstones were kept.
        let enough = Enough { k: EARLY_STOP_DEPTH * k, distance: 1.0 - floor };
        let mut found = self.walk_kept(d, (k, ef), enough, |_| true);
        found.retain(|&(row, _)| !self.is_deleted(row));
        found.truncate(k);
        found
    }

    /// The nearest rows by `d` that `keep` accepts (the beam's `ef.max(k)`), as
    /// `(row, similarity)`, best first.
    fn walk_kept(
        &self,
        d: &impl Distances,
        (k, ef): (usize, usize),
        enough: Enough,
        keep: impl Fn(u32) -> bool,
    ) -> Vec<(u32, f32)> {
        let Some(mut at) = self.entry else { return Vec::new() };
        let links = &self.links;
        for layer in (1..=self.max_level).rev() {
            at = greedy(d, links, at, layer);
        }
        // One mark array per thread, reused: a fresh one per query would zero n words each time.
        thread_local! {
            static VISITED: std::cell::RefCell<Visited> = std::cell::RefCell::new(Visited::new(0));
        }
        VISITED
            .with_borrow_mut(|visited| {
                visited.grow(self.links.len());
                search_layer_kept(d, links, &[at], (ef.max(k), enough), 0, visited, keep)
            })
            .into_iter()
            .map(|n| (n.1, 1.0 - n.0))
            .collect()
    }

    /// Bytes the graph holds in memory (not counting the rows it is over).
    pub fn memory(&self) -> usize {
        self.links.memory() + self.deleted.capacity()
    }

    /// Number of indexed rows.
    pub fn len(&self) -> usize {
        self.links.len()
    }

    /// Whether nothing is indexed.
    pub fn is_empty(&self) -> bool {
        self.links.len() == 0
    }

    /// The graph as bytes: a header, then each node's level and neighbour lists (u32, LE).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        let mut put = |v: u64| out.extend_from_slice(&(v as u32).to_le_bytes());
        put(0x484e_5357); // "HNSW"
        put(self.dim as u64);
        put(self.params.m as u64);
        put(self.params.ef_construction as u64);
        put(self.links.len() as u64);
        put(self.entry.map_or(u64::from(u32::MAX), u64::from));
        put(self.max_level as u64);
        for node in 0..self.links.len() as u32 {
            put(self.links.level(node) as u64 + 1);
            for layer in 0..=self.links.level(node) {
                let list = self.links.get(node, layer);
                put(list.len() as u64);
                for &nb in list {
                    put(u64::from(nb));
                }
            }
        }
        // Deleted nodes last, so a graph that has none reads as before they existed.
        let deleted: Vec<usize> = (0..self.deleted.len()).filter(|&i| self.deleted[i]).collect();
        put(deleted.len() as u64);
        for i in deleted {
            put(i as u64);
        }
        out
    }

    /// Reads [`Hnsw::to_bytes`] output; `None` if it is not a well-formed graph.
    pub fn from_bytes(bytes: &[u8]) -> Option<Self> {
        let mut words = bytes.chunks_exact(4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
        let mut next = || words.next().map(|w| w as usize);
        if next()? != 0x484e_5357 {
            return None;
        }
        let (dim, m, ef_construction, n, entry, max_level) =
            (next()?, next()?, next()?, next()?, next()?, next()?);
        // Every node takes at least two words (its level count and a list length): a header
        // claiming more nodes than that is refused below, and must not reserve for them here.
        let max_bottom = update::max_links(HnswParams { m, ef_construction, seed: 0 }, 0);
        let mut links = Lists::with_capacity(max_bottom, n.min(bytes.len() / 8));
        for node in 0..n as u32 {
            let levels = next()?;
            links.push(levels.checked_sub(1)?.min(64));
            for layer in 0..levels {
                let len = next()?;
                let list: Option<Vec<u32>> =
                    (0..len).map(|_| next().filter(|&nb| nb < n).map(|nb| nb as u32)).collect();
                if layer > 64 || !links.set(node, layer, &list?) {
                    return None;
                }
            }
        }
        let mut deleted = vec![false; n];
        // Absent in graphs written before deletions existed.
        if let Some(count) = next() {
            for _ in 0..count {
                *deleted.get_mut(next()?)? = true;
            }
        }
        let entry = (entry != u32::MAX as usize).then_some(entry as u32);
        if entry.is_some_and(|e| e as usize >= n || links.level(e) != max_level) {
            return None;
        }
        Some(Self {
            dim,
            params: HnswParams { m, ef_construction, seed: 0 },
            links,
            entry,
            max_level,
            deleted,
        })
    }
}

#[cfg(test)]
mod tests;
