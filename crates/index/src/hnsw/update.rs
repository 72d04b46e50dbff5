//! Changes to a built graph, so a collection under writes keeps approximate search without a
//! rebuild: rows appended to the matrix are inserted as the build inserts them; deleted rows
//! become tombstones — walked through, never returned — and each of their neighbours gets its
//! list repaired from the deleted node's own neighbours (hnswlib's `markDelete` plus the repair
//! its updates do). A caller rebuilds once [`Hnsw::deleted_count`] is a large share of the
//! graph, since tombstones still cost the walks that pass through them.

use super::lists::Lists;
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

    /// The graph over rows `order` of this one, row `order[i]` becoming row `i`: the graph of
    /// the matrix those rows make, with no tombstones. After updates, this is what a caller
    /// persists, since a reader loads only the live rows and in an order of its own. Links to
    /// rows left out are dropped (deleted rows' neighbours were already relinked around them);
    /// if the entry point is left out, a kept node on the highest level takes its place.
    ///
    /// # Panics
    /// If `order` names a row twice or one the graph does not have.
    #[must_use]
    pub fn compacted(&self, order: &[u32]) -> Hnsw {
        const LEFT_OUT: u32 = u32::MAX;
        let mut renumbered = vec![LEFT_OUT; self.links.len()];
        for (i, &old) in order.iter().enumerate() {
            assert_eq!(renumbered[old as usize], LEFT_OUT, "row {old} is kept once");
            renumbered[old as usize] = i as u32;
        }
        let mut links = Lists::with_capacity(self.links.max_bottom(), order.len());
        for &old in order {
            links.push(self.links.level(old));
        }
        for (i, &old) in order.iter().enumerate() {
            for layer in 0..=self.links.level(old) {
                let list: Vec<u32> = self
                    .links
                    .get(old, layer)
                    .iter()
                    .map(|&nb| renumbered[nb as usize])
                    .filter(|&nb| nb != LEFT_OUT)
                    .collect();
                links.set(i as u32, layer, &list);
            }
        }
        let entry = self.entry.map(|e| renumbered[e as usize]).filter(|&e| e != LEFT_OUT);
        let mut graph = Hnsw {
            dim: self.dim,
            params: self.params,
            links,
            entry,
            max_level: if entry.is_some() { self.max_level } else { 0 },
            deleted: vec![false; order.len()],
        };
        if graph.entry.is_none() {
            graph.move_entry();
        }
        graph
    }

    /// This graph, built over rows keyed `from` (in that order), carried over to the rows
    /// keyed `to` whose vectors are `data` (row-major): rows whose key is gone are deleted
    /// (their neighbours relinked) and dropped, new keys inserted, and the nodes renumbered to
    /// `to`'s order. A stored graph thus follows a collection that changed a little since it
    /// was built, at the cost of the changes rather than a rebuild's.
    ///
    /// # Panics
    /// If `from` is not one key per node, or `data` does not hold `to.len()` rows.
    #[must_use]
    pub fn carried_over<K: Copy + Eq + std::hash::Hash>(
        &self,
        from: &[K],
        to: &[K],
        data: &[f32],
    ) -> Hnsw {
        assert_eq!(from.len(), self.len(), "one key per node");
        assert_eq!(data.len(), to.len() * self.dim, "one row per key");
        let dim = self.dim;
        let position: std::collections::HashMap<K, usize> =
            to.iter().enumerate().map(|(i, &k)| (k, i)).collect();
        // Where each node's row is in `to`, if it is kept (a key repeated in `from` keeps
        // its first node only).
        let mut claimed = vec![false; to.len()];
        let kept_at: Vec<Option<usize>> = from
            .iter()
            .enumerate()
            .map(|(node, k)| {
                let at = position.get(k).copied().filter(|&at| !self.deleted[node] && !claimed[at]);
                if let Some(at) = at {
                    claimed[at] = true;
                }
                at
            })
            .collect();
        let mut graph = self.clone();
        if kept_at.iter().any(Option::is_none) {
            // Gone rows are relinked around with the kept rows' vectors; their own are not
            // needed (a deleted node is never a candidate), so they stay zero.
            let mut old = vec![0.0; from.len() * dim];
            for (node, at) in kept_at.iter().enumerate() {
                if let Some(at) = at {
                    old[node * dim..(node + 1) * dim]
                        .copy_from_slice(&data[at * dim..(at + 1) * dim]);
                }
            }
            for node in (0..from.len()).filter(|&n| kept_at[n].is_none()) {
                graph.delete(&old, node as u32);
            }
        }
        let mut kept: Vec<u32> =
            (0..from.len() as u32).filter(|&n| kept_at[n as usize].is_some()).collect();
        kept.sort_unstable_by_key(|&n| kept_at[n as usize]);
        let mut graph = graph.compacted(&kept);
        // Nodes now: the kept rows in `to`'s order, then each new row as it is inserted.
        let mut rows: Vec<usize> = kept.iter().filter_map(|&n| kept_at[n as usize]).collect();
        let new: Vec<usize> = (0..to.len()).filter(|&at| !claimed[at]).collect();
        if !new.is_empty() {
            let mut ordered: Vec<f32> = Vec::with_capacity(data.len());
            for &at in rows.iter().chain(&new) {
                ordered.extend_from_slice(&data[at * dim..(at + 1) * dim]);
            }
            for node in rows.len()..to.len() {
                graph.insert(&ordered[..(node + 1) * dim], node as u32);
            }
            rows.extend(new);
        }
        if rows.windows(2).all(|w| w[0] < w[1]) {
            return graph;
        }
        let mut order = vec![0u32; to.len()];
        for (node, &at) in rows.iter().enumerate() {
            order[at] = node as u32;
        }
        graph.compacted(&order)
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

    /// Rows `picks` of the matrix `all`, in that order.
    fn rows(all: &[f32], dim: usize, picks: impl Iterator<Item = usize>) -> Vec<f32> {
        picks.flat_map(|i| all[i * dim..(i + 1) * dim].iter().copied()).collect()
    }

    #[test]
    fn a_compacted_graph_is_the_live_rows_graph_in_their_new_order() {
        let (built, dim) = (3000, 24);
        let all = random(built + 1000, dim, 5);
        let mut graph = Hnsw::build(&all[..built * dim], dim, HnswParams::default());
        let mut deleted = vec![false; built];
        for node in built as u32..(built + 1000) as u32 {
            graph.insert(&all[..(node as usize + 1) * dim], node);
            deleted.push(false);
        }
        // Every third row deleted, the build's entry point among them.
        let entry = graph.entry.unwrap();
        for node in (0..graph.len() as u32).filter(|&i| i % 3 == 0 || i == entry) {
            graph.delete(&all, node);
            deleted[node as usize] = true;
        }
        // The live rows, in another order (reversed), make the new matrix.
        let order: Vec<u32> =
            (0..graph.len() as u32).rev().filter(|&i| !deleted[i as usize]).collect();
        let data = rows(&all, dim, order.iter().map(|&i| i as usize));
        let compact = graph.compacted(&order);
        assert_eq!((compact.len(), compact.deleted_count()), (order.len(), 0));
        let live = vec![false; order.len()];
        let after = recall(&compact, &data, dim, &live);
        eprintln!("recall@10 of the compacted graph: {after:.4}");
        assert!(after >= 0.95, "recall@10 after compaction = {after}");
        // The same answers as the graph it came from, renumbered.
        let before = recall(&graph, &all[..graph.len() * dim], dim, &deleted);
        assert!((after - before).abs() <= 0.02, "{before} before, {after} after");
        let query = &all[5 * dim..6 * dim];
        let old: Vec<u32> = graph.search(&all, query, 10, 64).into_iter().map(|x| x.0).collect();
        let new: Vec<u32> =
            compact.search(&data, query, 10, 64).into_iter().map(|x| order[x.0 as usize]).collect();
        assert_eq!(old.len(), 10);
        assert!(old.iter().filter(|x| new.contains(x)).count() >= 9, "{old:?} / {new:?}");
        // It persists like any graph, and nothing kept means an empty graph.
        assert_eq!(Hnsw::from_bytes(&compact.to_bytes()).unwrap().compacted(&[]).len(), 0);
        assert!(graph.compacted(&[]).search(&[], query, 10, 64).is_empty());
    }

    #[test]
    fn a_graph_carried_over_to_changed_rows_searches_them_as_a_build_would() {
        let (count, dim) = (4000, 24);
        let all = random(count + 400, dim, 8);
        let from: Vec<u64> = (0..count as u64).collect();
        let graph = Hnsw::build(&all[..count * dim], dim, HnswParams::default());
        // Every tenth key gone, 400 new keys.
        let keys: Vec<u64> = (0..(count + 400) as u64).filter(|k| k % 10 != 3).collect();
        let data = rows(&all, dim, keys.iter().map(|&k| k as usize));
        let carried = graph.carried_over(&from, &keys, &data);
        assert_eq!((carried.len(), carried.deleted_count()), (keys.len(), 0));
        let live = vec![false; keys.len()];
        let recall_carried = recall(&carried, &data, dim, &live);
        let rebuilt = Hnsw::build(&data, dim, HnswParams::default());
        let recall_rebuilt = recall(&rebuilt, &data, dim, &live);
        eprintln!("recall@10 carried over {recall_carried:.4}, rebuilt {recall_rebuilt:.4}");
        assert!(recall_carried >= recall_rebuilt - 0.02, "{recall_carried} / {recall_rebuilt}");
        // The same keys in another order (reversed): the nodes follow `to`'s order.
        let mut shuffled: Vec<u64> = keys.clone();
        shuffled.reverse();
        let reversed = rows(&all, dim, shuffled.iter().map(|&k| k as usize));
        let carried = graph.carried_over(&from, &shuffled, &reversed);
        for at in [0, 17, keys.len() - 1] {
            let q = &reversed[at * dim..(at + 1) * dim];
            assert_eq!(
                carried.search(&reversed, q, 1, 64)[0].0 as usize,
                at,
                "row {at} finds itself"
            );
        }
        // A key twice in `from` (a damaged record) keeps one node, not a panic.
        let mut twice = from.clone();
        twice[1] = twice[0];
        assert_eq!(graph.carried_over(&twice, &from, &all[..count * dim]).len(), count);
        // Nothing changed: the same graph.
        assert_eq!(
            graph.carried_over(&from, &from, &all[..count * dim]).to_bytes(),
            graph.to_bytes()
        );
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
