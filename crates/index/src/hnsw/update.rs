//! Changes to a built graph, so a collection under writes keeps approximate search without a
//! rebuild: rows appended to the matrix are inserted as the build inserts them; deleted rows
//! become tombstones — walked through, never returned — and each of their neighbours gets its
//! list repaired from the deleted node's own neighbours (hnswlib's `markDelete` plus the repair
//! its updates do). A caller rebuilds once [`Hnsw::deleted_count`] is a large share of the
//! graph, since tombstones still cost the walks that pass through them.

use super::{Hnsw, HnswParams, Near, Rows, Visited, greedy, search_layer};

/// The most neighbours a node keeps on `layer` (twice as many on layer 0).
pub(super) fn max_links(params: HnswParams, layer: usize) -> usize {
    if layer == 0 { 2 * params.m } else { params.m }
}

/// The level of inserted node `node`: `⌊−ln(u)·mL⌋` with `u` from a hash of the seed and the
/// node (splitmix64), so it does not depend on the order of inserts.
fn level_of(params: HnswParams, node: u32) -> usize {
    let mut z = params.seed ^ u64::from(node).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    let u = ((z >> 11) as f64 + 1.0) / (1u64 << 53) as f64;
    let ml = 1.0 / (params.m.max(2) as f64).ln();
    (-u.ln() * ml).floor() as usize
}

impl Hnsw {
    /// Inserts row `node` of `data` — the graph's matrix with the new row appended, so `node`
    /// is [`Hnsw::len`] — linking it as the build would have.
    ///
    /// # Panics
    /// If `node` is not the next row or `data` does not hold it.
    pub fn insert(&mut self, data: &[f32], node: u32) {
        assert_eq!(node as usize, self.links.len(), "rows are inserted in order");
        assert!(data.len() >= (node as usize + 1) * self.dim, "the matrix holds the new row");
        let rows = Rows { data, dim: self.dim };
        let level = level_of(self.params, node);
        self.links.push(level);
        self.deleted.push(false);
        let Some(mut entry) = self.entry else {
            (self.entry, self.max_level) = (Some(node), level);
            return;
        };
        let q = rows.query(rows.row(node));
        let mut visited = Visited::new(self.links.len());
        for layer in (level + 1..=self.max_level).rev() {
            entry = greedy(&q, &self.links, entry, layer);
        }
        let mut entries = vec![entry];
        for layer in (0..=level.min(self.max_level)).rev() {
            let found = search_layer(
                &q,
                &self.links,
                &entries,
                self.params.ef_construction,
                layer,
                &mut visited,
            );
            let live: Vec<Near> =
                found.iter().copied().filter(|n| n.1 != node && !self.is_deleted(n.1)).collect();
            let chosen = rows.select(&live, self.params.m);
            let ids: Vec<u32> = chosen.iter().map(|n| n.1).collect();
            self.links.set(node, layer, &ids);
            let max = max_links(self.params, layer);
            for &Near(_, nb) in &chosen {
                let mut list = self.links.get(nb, layer).to_vec();
                list.push(node);
                if list.len() > max {
                    rows.prune(nb, &mut list, max);
                }
                self.links.set(nb, layer, &list);
            }
            if !found.is_empty() {
                entries = found.iter().map(|n| n.1).collect();
            }
        }
        if level > self.max_level {
            (self.entry, self.max_level) = (Some(node), level);
        }
        if self.entry.is_some_and(|e| self.is_deleted(e)) {
            // Every other node is deleted: this one is where walks must start.
            self.move_entry();
        }
    }

    /// Deletes row `node` (of the matrix `data` the graph is over): searches stop returning
    /// it, and each neighbour that links to it relinks among its other neighbours and the
    /// deleted node's, chosen by the same heuristic as the build. Unknown or deleted rows are
    /// ignored.
    pub fn delete(&mut self, data: &[f32], node: u32) {
        if node as usize >= self.links.len() || self.is_deleted(node) {
            return;
        }
        self.deleted[node as usize] = true;
        let rows = Rows { data, dim: self.dim };
        for layer in 0..=self.links.level(node) {
            let around: Vec<u32> = self
                .links
                .get(node, layer)
                .iter()
                .copied()
                .filter(|&x| !self.is_deleted(x))
                .collect();
            for &nb in &around {
                if !self.links.get(nb, layer).contains(&node) {
                    continue;
                }
                let mut candidates: Vec<u32> = self
                    .links
                    .get(nb, layer)
                    .iter()
                    .chain(&around)
                    .copied()
                    .filter(|&x| x != nb && !self.is_deleted(x))
                    .collect();
                candidates.sort_unstable();
                candidates.dedup();
                let p = rows.row(nb);
                let mut near: Vec<Near> =
                    candidates.into_iter().map(|x| Near(rows.distance(p, x), x)).collect();
                near.sort();
                let kept = rows.select(&near, max_links(self.params, layer));
                let kept: Vec<u32> = kept.into_iter().map(|n| n.1).collect();
                self.links.set(nb, layer, &kept);
            }
        }
        if self.entry == Some(node) {
            self.move_entry();
        }
    }

    /// A live node on the highest level any live node reaches becomes the entry point (the
    /// deleted one kept its lists, but a walk should start where results can be).
    fn move_entry(&mut self) {
        let best = (0..self.links.len())
            .filter(|&i| !self.deleted[i])
            .max_by_key(|&i| (self.links.level(i as u32), std::cmp::Reverse(i)));
        if let Some(i) = best {
            (self.entry, self.max_level) = (Some(i as u32), self.links.level(i as u32));
        }
    }

    /// Whether row `node` was deleted.
    pub fn is_deleted(&self, node: u32) -> bool {
        self.deleted.get(node as usize).copied().unwrap_or(false)
    }

    /// How many rows were deleted since the graph was built.
    pub fn deleted_count(&self) -> usize {
        self.deleted.iter().filter(|&&d| d).count()
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{exact_live, random};
    use super::*;

    /// Recall@10 against an exact scan of the rows not deleted.
    fn recall(g: &Hnsw, data: &[f32], dim: usize, deleted: &[bool]) -> f64 {
        let queries = random(100, dim, 99);
        let mut hit = 0;
        for q in queries.chunks_exact(dim) {
            let want = exact_live(data, dim, q, 10, deleted);
            let got: Vec<u32> = g.search(data, q, 10, 100).into_iter().map(|x| x.0).collect();
            assert!(got.iter().all(|&r| !deleted[r as usize]), "a deleted row was returned");
            hit += want.iter().filter(|w| got.contains(w)).count();
        }
        hit as f64 / 1000.0
    }

    #[test]
    fn recall_holds_after_ten_thousand_mixed_inserts_and_deletes() {
        let (n, dim) = (5000, 32);
        let all = random(n + 6000, dim, 7);
        let mut g = Hnsw::build(&all[..n * dim], dim, HnswParams::default());
        let mut deleted = vec![false; n];
        // 6,000 inserts and 4,000 deletes, interleaved, deletes spread over old and new rows.
        let mut s = 11u64;
        for step in 0..10_000 {
            s = s.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            if step % 5 < 3 {
                let node = g.len() as u32;
                g.insert(&all[..(node as usize + 1) * dim], node);
                deleted.push(false);
            } else {
                let node = ((s >> 33) % g.len() as u64) as u32;
                g.delete(&all[..g.len() * dim], node);
                deleted[node as usize] = true;
            }
        }
        let data = &all[..g.len() * dim];
        assert_eq!(g.len(), 11_000);
        assert_eq!(g.deleted_count(), deleted.iter().filter(|&&d| d).count());
        let r = recall(&g, data, dim, &deleted);
        eprintln!("recall@10 after 6,000 inserts and 4,000 deletes: {r:.4}");
        assert!(r >= 0.95, "recall@10 after inserts and deletes = {r}");
        // Tombstones survive a round trip through bytes.
        let back = Hnsw::from_bytes(&g.to_bytes()).unwrap();
        assert_eq!(back.deleted_count(), g.deleted_count());
        assert_eq!(back.search(data, &data[..dim], 10, 64), g.search(data, &data[..dim], 10, 64));
    }

    #[test]
    fn an_emptied_graph_returns_nothing_and_grows_again() {
        let dim = 8;
        let all = random(40, dim, 3);
        let mut g = Hnsw::build(&all[..20 * dim], dim, HnswParams::default());
        for node in 0..20 {
            g.delete(&all, node);
        }
        assert!(g.search(&all[..20 * dim], &all[..dim], 5, 50).is_empty());
        g.insert(&all[..21 * dim], 20);
        assert_eq!(g.search(&all[..21 * dim], &all[20 * dim..21 * dim], 1, 50)[0].0, 20);
        g.delete(&all, 99); // unknown: ignored
        assert_eq!(g.deleted_count(), 20);
    }
}
