//! A finished graph's neighbour lists. Layer 0, which every node has and where a search spends
//! nearly all its steps, is one flat array of fixed-size slots (a count, then up to `2m` ids),
//! as FAISS and hnswlib keep it: a node's list is found by arithmetic, in one or two cache
//! lines, not behind two pointers. The few nodes on upper layers keep lists of their own.

use super::Links;

#[derive(Debug, Clone, PartialEq)]
pub(super) struct Lists {
    /// Words per node in `bottom`: the count, then room for the layer-0 maximum.
    slot: usize,
    bottom: Vec<u32>,
    /// `upper[node][layer − 1]`; empty (no allocation) for the nodes only on layer 0.
    upper: Vec<Vec<Vec<u32>>>,
}

impl Lists {
    /// No nodes, room for `nodes` (the flat array grows by doubling past that); layer-0 lists
    /// will hold up to `max_bottom` neighbours.
    pub(super) fn with_capacity(max_bottom: usize, nodes: usize) -> Self {
        let slot = max_bottom + 1;
        Self { slot, bottom: Vec::with_capacity(nodes * slot), upper: Vec::with_capacity(nodes) }
    }

    /// Number of nodes.
    pub(super) fn len(&self) -> usize {
        self.upper.len()
    }

    /// The most neighbours a layer-0 list holds.
    pub(super) fn max_bottom(&self) -> usize {
        self.slot - 1
    }

    /// Adds a node on layers 0 to `level`, with no neighbours yet.
    pub(super) fn push(&mut self, level: usize) {
        self.bottom.resize(self.bottom.len() + self.slot, 0);
        self.upper.push(vec![Vec::new(); level]);
    }

    /// Bytes held: the layer-0 slots, a list header per node, and the upper layers' lists.
    pub(super) fn memory(&self) -> usize {
        let vec = std::mem::size_of::<Vec<u32>>();
        let upper: usize = self.upper.iter().flatten().map(|list| vec + 4 * list.capacity()).sum();
        4 * self.bottom.capacity() + vec * self.upper.len() + upper
    }

    /// The top layer `node` is on.
    pub(super) fn level(&self, node: u32) -> usize {
        self.upper[node as usize].len()
    }

    /// `node`'s neighbours on `layer` (which it must be on).
    pub(super) fn get(&self, node: u32, layer: usize) -> &[u32] {
        if layer == 0 {
            let slot = &self.bottom[node as usize * self.slot..(node as usize + 1) * self.slot];
            &slot[1..=slot[0] as usize]
        } else {
            &self.upper[node as usize][layer - 1]
        }
    }

    /// Replaces `node`'s neighbours on `layer`; `false`, changing nothing, if a layer-0 list is
    /// longer than its slot (the graph code prunes lists to the maximum first).
    pub(super) fn set(&mut self, node: u32, layer: usize, list: &[u32]) -> bool {
        if layer > 0 {
            self.upper[node as usize][layer - 1] = list.to_vec();
            return true;
        }
        if list.len() > self.max_bottom() {
            return false;
        }
        let slot = &mut self.bottom[node as usize * self.slot..(node as usize + 1) * self.slot];
        slot[0] = list.len() as u32;
        slot[1..=list.len()].copy_from_slice(list);
        true
    }
}

impl Links for Lists {
    #[inline]
    fn each(&self, node: u32, layer: usize, f: impl FnMut(u32)) {
        self.get(node, layer).iter().copied().for_each(f);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_keep_their_layers_apart_and_refuse_overlong_bottoms() {
        let mut lists = Lists::with_capacity(3, 1);
        lists.push(0);
        lists.push(2);
        assert_eq!((lists.len(), lists.level(0), lists.level(1)), (2, 0, 2));
        assert!(lists.get(1, 0).is_empty());
        assert!(lists.set(1, 0, &[0, 7, 9]));
        assert!(lists.set(1, 2, &[4, 5, 6, 8, 10]));
        assert!(!lists.set(0, 0, &[1, 2, 3, 4]));
        assert!(lists.get(0, 0).is_empty());
        assert!(lists.set(1, 0, &[5]));
        assert_eq!(
            (lists.get(1, 0), lists.get(1, 1), lists.get(1, 2)),
            (&[5][..], &[][..], &[4, 5, 6, 8, 10][..])
        );
    }
}
