//! How a server's indexer keeps vectors and int8 codes walkable under writes: the rows written since the
//! last freeze (the tail, scanned) become a segment with its own HNSW graph once there are
//! [`FREEZE_ROWS`] of them, and frozen segments of about the same size merge by tiers, as
//! Lucene's tiered merge policy and Qdrant's optimiser merge theirs. A pass reads the float32
//! vectors of only the rows it freezes or merges, so its cost is the size of the change, not
//! of the collection; the segment the rows were read whole into keeps the store's graph.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use ckeep_core::ChunkId;
use ckeep_index::{Hnsw, HnswParams};
use ckeep_store::{StoreRead, VectorMatrix};

use super::VectorIndex;
use super::cache::Cached;
use super::live::REBUILD_SHARE;
use super::segmented::{Rows, Segment, Segmented};
use crate::error::Result;

/// The tail is frozen once it holds this many rows. Below, scanning it costs about a tenth of
/// a millisecond (4,096 rows × 384 int8 bytes = 1.5 MB), less than a graph of it would save.
pub(crate) const FREEZE_ROWS: usize = 4_096;

/// Frozen segments in one size tier (sizes within this factor) merge once there are this many:
/// each row is then rebuilt about log₄(rows / [`FREEZE_ROWS`]) times, and a search walks at
/// most three segments per tier.
const MERGE_FACTOR: usize = 4;

/// What one pass of the indexer makes: a segment of the tail's rows (when `freeze_tail`) and
/// the live rows of the frozen segments `merged`.
#[derive(Debug, PartialEq, Eq)]
struct SegmentPlan {
    freeze_tail: bool,
    merged: Vec<u64>,
}

/// The size tier of a segment of `rows` rows: 0 up to `MERGE_FACTOR × FREEZE_ROWS`, and so on.
fn tier(rows: usize) -> u32 {
    let (mut tier, mut bound) = (0, FREEZE_ROWS * MERGE_FACTOR);
    while rows >= bound {
        tier += 1;
        bound = bound.saturating_mul(MERGE_FACTOR);
    }
    tier
}

impl SegmentPlan {
    /// The pass `index` needs, if any: a frozen segment whose tombstones pass
    /// [`REBUILD_SHARE`] rewritten alone; else the lowest tier holding [`MERGE_FACTOR`]
    /// segments merged (the tail counted in its tier once it is due to freeze); else the tail
    /// frozen. The segment read whole is left alone: its graph is the one the store keeps.
    fn of<R: Rows>(index: &Segmented<R>) -> Option<Self> {
        let frozen = &index.segments[1..];
        let tombstones = |id: u64| index.removed.get(&id).map_or(0, HashSet::len);
        if let Some(s) =
            frozen.iter().find(|s| tombstones(s.id) as f64 > REBUILD_SHARE * s.rows.len() as f64)
        {
            return Some(Self { freeze_tail: false, merged: vec![s.id] });
        }
        let freeze_tail = index.tail.len() >= FREEZE_ROWS;
        let mut tiers: HashMap<u32, (bool, Vec<u64>)> = HashMap::new();
        for s in frozen {
            tiers.entry(tier(s.rows.len() - tombstones(s.id))).or_default().1.push(s.id);
        }
        if freeze_tail {
            tiers.entry(tier(index.tail.len())).or_default().0 = true;
        }
        let full = tiers
            .into_iter()
            .filter(|(_, (tail, ids))| ids.len() + usize::from(*tail) >= MERGE_FACTOR)
            .min_by_key(|(tier, _)| *tier);
        match full {
            Some((_, (tail, merged))) => Some(Self { freeze_tail: tail, merged }),
            None => freeze_tail.then(|| Self { freeze_tail, merged: Vec::new() }),
        }
    }
}

impl<S: StoreRead> VectorIndex<'_, S> {
    /// One pass of a server's indexer over `index`, the rows of stored representation `name`
    /// cached under `key` as read at `generation` (see the module's account); whether it
    /// changed them. `last`: the process stops, so the tail is frozen alone, whatever its
    /// size. The graph is built outside any lock, from the float32 vectors of the rows it
    /// covers (`rows_of` makes the segment's rows of them); readers keep searching the rows as
    /// they were until it is installed.
    pub(crate) fn refresh_segments<R: Rows>(
        &self,
        (name, key): (&str, &str),
        index: &Segmented<R>,
        generation: u64,
        last: bool,
        rows_of: impl FnOnce(VectorMatrix) -> R,
    ) -> Result<bool>
    where
        Segmented<R>: Cached,
    {
        let plan = if last {
            (index.tail.len() > 0).then(|| SegmentPlan { freeze_tail: true, merged: Vec::new() })
        } else {
            SegmentPlan::of(index)
        };
        let Some(plan) = plan else { return Ok(false) };
        let mut ids: Vec<ChunkId> =
            if plan.freeze_tail { index.tail.ids().to_vec() } else { Vec::new() };
        for s in index.segments.iter().filter(|s| plan.merged.contains(&s.id)) {
            ids.extend(index.live_chunks(s));
        }
        ids.sort_unstable();
        let m = self.vectors_of(name, &ids)?;
        if !m.is_empty() && m.dim != index.dim() {
            return Ok(false); // the model changed: the next read is a whole one
        }
        let graph =
            (!m.is_empty()).then(|| Arc::new(Hnsw::build(&m.data, m.dim, HnswParams::default())));
        let rows = rows_of(m);
        self.cache.update(key, |current: &Segmented<R>, _| {
            let Some(changed) = self.store.vector_changes(name, generation)? else {
                return Ok(None); // the log no longer reaches back: a whole read comes next
            };
            Ok(with_segment(index, current, &plan, rows, graph, &changed))
        })
    }
}

/// `current` (the rows readers search now, which may have taken writes since `planned`) with
/// the segment of `rows` and `graph`, planned on `planned`, in place of the tail rows and
/// merged segments it covers. Rows of chunks `changed` since `planned` was read are tombstoned
/// in it (the tail keeps their newer versions). `None` when `current` no longer holds what
/// was planned on (the rows were read whole again).
fn with_segment<R: Rows>(
    planned: &Segmented<R>,
    current: &Segmented<R>,
    plan: &SegmentPlan,
    rows: R,
    graph: Option<Arc<Hnsw>>,
    changed: &[ChunkId],
) -> Option<Segmented<R>> {
    let held = |id: u64| {
        let find = |ix: &Segmented<R>| ix.segments.iter().find(|s| s.id == id).cloned();
        find(planned).zip(find(current)).is_some_and(|(a, b)| Arc::ptr_eq(&a, &b))
    };
    if !Arc::ptr_eq(&planned.segments[0], &current.segments[0])
        || !plan.merged.iter().all(|&id| held(id))
    {
        return None;
    }
    let changed: HashSet<ChunkId> = changed.iter().copied().collect();
    let mut segments: Vec<Arc<Segment<R>>> =
        current.segments.iter().filter(|s| !plan.merged.contains(&s.id)).cloned().collect();
    let mut removed = current.removed.clone();
    removed.retain(|id, _| !plan.merged.contains(id));
    let frozen: HashSet<ChunkId> = rows.ids().iter().copied().collect();
    let dead: HashSet<u32> =
        (0..rows.len()).filter(|&r| changed.contains(&rows.ids()[r])).map(|r| r as u32).collect();
    if rows.len() > 0 {
        let id = current.segments.iter().map(|s| s.id).max().unwrap_or(0) + 1;
        if !dead.is_empty() {
            removed.insert(id, dead);
        }
        segments.push(Arc::new(Segment::frozen(id, rows, graph)));
    }
    let tail = &current.tail;
    let stays = |i: usize| !frozen.contains(&tail.ids()[i]) || changed.contains(&tail.ids()[i]);
    Some(Segmented { segments, removed, tail: tail.retain(stays), read_at: current.read_at })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vectors::codes::tests::unit_rows;
    use crate::vectors::codes::{CodeIndex, CodeRows};

    /// An index of a first segment of 100 rows, frozen segments of `sizes`, and a tail of
    /// `tail` rows (chunk ids in that order, 1-dimensional codes).
    fn index(sizes: &[usize], tail: usize) -> CodeIndex {
        let mut next = 1i64;
        let mut rows = |n: usize| {
            let ids: Vec<i64> = (next..next + n as i64).collect();
            next += n as i64;
            unit_rows(&ids, 1, 7).0
        };
        let mut ix = CodeIndex::whole(rows(100), 1);
        for (i, &n) in sizes.iter().enumerate() {
            ix.segments.push(Arc::new(Segment::new(i as u64 + 1, rows(n))));
        }
        ix.tail = rows(tail);
        ix
    }

    #[test]
    fn segments_merge_by_size_tier_and_the_tail_freezes_when_due() {
        assert_eq!((tier(1), tier(FREEZE_ROWS * 4 - 1), tier(FREEZE_ROWS * 4)), (0, 0, 1));
        assert_eq!(tier(FREEZE_ROWS * 16), 2);
        let plan = |sizes: &[usize], tail| SegmentPlan::of(&index(sizes, tail));
        let f = FREEZE_ROWS;
        assert_eq!(plan(&[], f - 1), None, "a short tail is scanned");
        let alone = SegmentPlan { freeze_tail: true, merged: vec![] };
        assert_eq!(plan(&[], f), Some(alone));
        // Three of the tail's tier and the tail: merged with it.
        let with_three = SegmentPlan { freeze_tail: true, merged: vec![1, 2, 3] };
        assert_eq!(plan(&[f, f, f, 4 * f], f), Some(with_three));
        // Four in a higher tier merge even while the tail is short.
        let four = SegmentPlan { freeze_tail: false, merged: vec![2, 3, 4, 5] };
        assert_eq!(plan(&[f, 4 * f, 5 * f, 4 * f, 6 * f], 10), Some(four));
        assert_eq!(plan(&[f, 4 * f, 5 * f], 10), None);
        // A segment mostly removed is rewritten on its own.
        let mut ix = index(&[f, 4 * f], 0);
        ix.removed.insert(2, (0..(f as u32)).collect());
        assert_eq!(SegmentPlan::of(&ix), Some(SegmentPlan { freeze_tail: false, merged: vec![2] }));
    }

    #[test]
    fn a_segment_installed_after_more_writes_keeps_their_versions() {
        // Planned on: first segment 1..=100, frozen segment 1 (101..=110), tail 111..=120.
        let planned = index(&[10], 10);
        let plan = SegmentPlan { freeze_tail: true, merged: vec![1] };
        // Since then readers applied: 105 and 115 replaced, 116 removed, 121 added.
        let (fresh, _) = unit_rows(&[105, 115, 121], 1, 9);
        let changed: Vec<ChunkId> = [105, 115, 116, 121].map(ChunkId).to_vec();
        let current = planned.with_changes(&changed, &fresh).unwrap();
        // The indexer read 101..=120 (some after the writes: 116 is gone by then).
        let read: Vec<i64> = (101..=120).filter(|&i| i != 116).collect();
        let (rows, _) = unit_rows(&read, 1, 11);
        let merged = with_segment(&planned, &current, &plan, rows, None, &changed).unwrap();
        assert_eq!(merged.segments.iter().map(|s| s.id).collect::<Vec<_>>(), [0, 2]);
        assert_eq!(merged.segments[1].rows.len(), 19);
        // The changed chunks stay in the tail, their rows in the segment tombstoned.
        assert_eq!(merged.tail.ids, [105, 115, 121].map(ChunkId));
        let dead: HashSet<u32> = merged.removed[&2].clone();
        let dead: Vec<ChunkId> =
            dead.iter().map(|&r| merged.segments[1].rows.ids[r as usize]).collect();
        assert!(dead.len() == 2 && dead.contains(&ChunkId(105)) && dead.contains(&ChunkId(115)));
        assert_eq!(merged.len(), current.len());
        assert_eq!(merged.len(), 100 + 20 - 1 + 1);
        // Codes read whole again meanwhile: the pass is dropped.
        let reread = index(&[], 0);
        assert!(with_segment(&planned, &reread, &plan, CodeRows::default(), None, &[]).is_none());
    }

    #[test]
    fn float_rows_frozen_into_a_segment_are_found_through_its_graph() {
        use crate::vectors::live::{DenseIndex, tests::matrix};
        let dim = 16;
        let base = matrix(&(1..=300).collect::<Vec<_>>(), dim, 1);
        let fresh = matrix(&(301..=800).collect::<Vec<_>>(), dim, 2);
        let ids: Vec<ChunkId> = fresh.ids.clone();
        let planned = DenseIndex::whole(base, 3).with_changes(&ids, &fresh).unwrap();
        let plan = SegmentPlan { freeze_tail: true, merged: vec![] };
        let graph = Arc::new(Hnsw::build(&fresh.data, dim, HnswParams::default()));
        let frozen = with_segment(&planned, &planned, &plan, fresh.clone(), Some(graph), &[]);
        let frozen = frozen.unwrap();
        assert_eq!((frozen.segments.len(), frozen.tail.len(), frozen.len()), (2, 0, 800));
        assert!(frozen.segments[1].graph().is_some());
        for i in (0..fresh.len()).step_by(7) {
            let q = &fresh.data[i * dim..(i + 1) * dim];
            for walk in [true, false] {
                assert_eq!(frozen.nearest(q, 10, 64, None, walk)[0].chunk, fresh.ids[i]);
            }
        }
        // A row of the segment replaced later is a tombstone there; its new version is found.
        let newer = matrix(&[400], dim, 3);
        let changed = frozen.with_changes(&[ChunkId(400)], &newer).unwrap();
        let hits = changed.nearest(&newer.data, 800, 800, None, true);
        assert_eq!(hits[0].chunk, ChunkId(400));
        assert_eq!(hits.iter().filter(|h| h.chunk == ChunkId(400)).count(), 1);
    }
}
