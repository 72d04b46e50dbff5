//! Dense search over quantised vectors: a representation marked `int8` or `binary` in the
//! manifest is held in memory as compact codes only (a quarter or a thirty-second of float32);
//! a query scans the codes, then rescores the best `oversample × candidates` (at most
//! `oversample × 100`) exactly with their float32 vectors read from the store — as Qdrant's
//! quantisation does — unless the strategy says `rescore=false`. In a large collection int8
//! codes walk the HNSW graph built over the float32 vectors instead of being scanned, when the
//! store has a current one (`ckeep add` builds it); under a server's writes they walk it and
//! the graphs of the segments its indexer freezes ([`super::codes`]).

use std::sync::Arc;

use ckeep_core::{ChunkHit, ChunkId, DocKey};
use ckeep_index::{Codes, Hnsw, Quantization, dot, top_k};
use ckeep_store::{ReadSnapshot, StoreRead, StoreWrite, VectorMatrix};

use super::VectorIndex;
use super::blob::VectorIndexBuild;
use super::blob::stamp_of;
use super::cache::Loaded;
use super::codes::{CodeIndex, CodeRows, CodeSegment};
use super::maintain::outgrown;
use super::segmented::Rows;
use super::{ANN_EF, ANN_MIN_VECTORS, MIN_CHANGES_READ_ALL, Rescoring, same_dimension};
use crate::error::{Error, Result};
use crate::filtered::{AllowedDocs, DenseFilter, FilteredBy};
use crate::manifest::ManifestExt;
use crate::represent::{Resolved, Source};

/// Candidates that get exact scores (times the oversampling): the best 100 decide a top 10
/// of documents or fused results too; deeper candidates of a document-level or hybrid
/// search's pool of 1,000 keep their int8 estimates (a binary pool stops at the rescored
/// ones, since its estimates are not cosines). Reading every candidate's float32 vector made
/// `SQuAD`'s document-level evaluation 5× slower than float32 search.
const RESCORED_POOL: usize = 100;

/// The cache key of stored representation `name` held as `kind` codes (`plain@int8`), also
/// the name memory reports give it.
pub(crate) fn codes_key(name: &str, kind: Quantization) -> String {
    format!("{name}@{kind}")
}

/// The int8 codes of the rows of `m` (normalised float32 vectors).
fn int8_rows(m: &VectorMatrix) -> CodeRows {
    CodeRows {
        codes: Codes::encode(Quantization::Int8, &m.data, m.dim).unwrap_or_default(),
        ids: m.ids.clone(),
        docs: m.docs.clone(),
    }
}

impl<S: StoreRead> VectorIndex<'_, S> {
    /// The codes of stored representation `name`, normalised then quantised row by row as
    /// they stream from the store (the float32 matrix is never held whole). After writes, the
    /// codes loaded before are brought up to date from the store's change log when the changes
    /// are few, as float32 vectors are ([`VectorIndex::apply_changes`]); the rows written since
    /// wait in the tail, and read all again once it passes a quarter of the rest, unless a
    /// server's indexer freezes them into segments first ([`super::segments`]).
    pub(crate) fn codes(
        &self,
        name: &str,
        kind: Quantization,
    ) -> Result<(Arc<CodeIndex>, u64, bool)> {
        let key = codes_key(name, kind);
        self.load_cached(&key, |previous: Option<&Loaded<CodeIndex>>, generation| {
            if let Some(previous) = previous
                && let Some(changed) = self.store.vector_changes(name, previous.generation)?
                && changed.len() <= previous.value.len() / 4 + MIN_CHANGES_READ_ALL
                && let Some(index) =
                    self.codes_with_changes(&previous.value, name, kind, &changed)?
                && index.tail.len() <= (index.len() - index.tail.len()) / 4 + MIN_CHANGES_READ_ALL
            {
                return Ok(index);
            }
            let rows = self.code_rows(name, kind, None)?;
            // int8 codes come back in the segments a server saved; binary codes are scanned.
            if kind == Quantization::Int8 {
                return self.open_segmented(name, rows, generation);
            }
            Ok(CodeIndex::whole(rows, generation))
        })
    }

    /// The codes of the vectors of stored representation `name` (only those of the chunks
    /// `only`, when given), in chunk order.
    fn code_rows(
        &self,
        name: &str,
        kind: Quantization,
        only: Option<&[ChunkId]>,
    ) -> Result<CodeRows> {
        // The dimension is known once the first vector arrives.
        let empty = |dim| CodeRows {
            ids: Vec::new(),
            docs: Vec::new(),
            codes: Codes::new(kind, dim).unwrap_or_default(),
        };
        let mut m: Option<CodeRows> = None;
        let mut row = Vec::new();
        self.store.each_vector(name, only, &mut |chunk, doc, v| {
            let m = m.get_or_insert_with(|| empty(v.len()));
            if v.len() != m.codes.dim() {
                return; // a store mid-way through a change of model: read whole next time
            }
            row.clear();
            row.extend_from_slice(v);
            ckeep_embed::normalize(&mut row);
            m.ids.push(chunk);
            m.docs.push(doc);
            m.codes.push(&row);
        })?;
        Ok(m.unwrap_or_else(|| empty(0)))
    }

    /// `previous` with the rows of the `changed` chunks tombstoned or dropped, plus the codes
    /// of those still stored, read now. `None` (read everything) if the dimension changed.
    fn codes_with_changes(
        &self,
        previous: &CodeIndex,
        name: &str,
        kind: Quantization,
        changed: &[ChunkId],
    ) -> Result<Option<CodeIndex>> {
        let fresh = self.code_rows(name, kind, Some(changed))?;
        Ok(previous.with_changes(changed, &fresh))
    }

    /// The best `candidates` chunks for `q` under quantised representation `name`: the codes'
    /// best `oversample × candidates`, rescored exactly unless `rescoring` says not.
    pub(crate) fn quantized_hits(
        &self,
        q: &[f32],
        name: &str,
        kind: Quantization,
        candidates: usize,
        rescoring: Rescoring,
        allowed: Option<&AllowedDocs>,
    ) -> Result<(Vec<ChunkHit>, Option<DenseFilter>)> {
        let (m, _, stale) = self.codes(name, kind)?;
        if m.len() == 0 {
            return Ok((Vec::new(), None));
        }
        same_dimension(m.dim(), q)?;
        let oversample = rescoring.oversample.unwrap_or_else(|| kind.default_oversample());
        let rescored = candidates.min(RESCORED_POOL).saturating_mul(oversample);
        let wanted = match (rescoring.rescore, kind) {
            (false, _) => candidates,
            // int8 estimates are cosines: the pool below the rescored ones keeps them.
            (true, Quantization::Int8) => candidates.max(rescored),
            (true, _) => rescored,
        };
        // int8 codes walk the graphs; a filtered search walks them only when many chunks match.
        let graph = kind == Quantization::Int8 && self.codes_graph(name, m.first()).is_some();
        let graphs = graph || m.segments.len() > 1;
        let plan = allowed.map(|a| {
            let matching = m.matching(|d| a.contains(d));
            let walk = FilteredBy::choose(matching, m.len(), graphs);
            let by = if walk == FilteredBy::FilteredGraph { walk } else { FilteredBy::CodesScan };
            DenseFilter { matching: Some(matching), total: Some(m.len()), by }
        });
        let walk = plan.is_none_or(|p| p.by == FilteredBy::FilteredGraph);
        let keep = allowed.map(|a| move |d: DocKey| a.contains(d));
        let keep = keep.as_ref().map(|k| k as &(dyn Fn(DocKey) -> bool + Sync));
        let found = m.nearest(q, wanted, ANN_EF.max(wanted), keep, walk);
        if !rescoring.rescore {
            let hits = if stale { self.live_hits(found, candidates)? } else { found };
            return Ok((hits, plan));
        }
        // Only chunks still stored come back, so this is also the liveness check. Each is
        // normalised and scored as the float32 scan scores it, so the scores are the same.
        let (head, tail) = found.split_at(rescored.min(found.len()));
        let ids: Vec<ChunkId> = head.iter().map(|h| h.chunk).collect();
        let mut hits = Vec::with_capacity(found.len());
        let mut row = Vec::new();
        self.store.each_vector(name, Some(&ids), &mut |chunk, doc, v| {
            row.clear();
            row.extend_from_slice(v);
            ckeep_embed::normalize(&mut row);
            hits.push(ChunkHit { chunk, doc, score: dot(&row, q) });
        })?;
        if !tail.is_empty() {
            let tail = tail.to_vec();
            hits.extend(if stale { self.live_hits(tail, candidates)? } else { tail });
        }
        Ok((top_k(hits, candidates), plan))
    }

    /// One pass of a server's indexer over the int8 codes of stored representation `name`:
    /// the rows written since frozen, or segments merged ([`super::segments`]); `last`: the
    /// process stops, so the rows written since are frozen however few. Returns what to save
    /// of them: the new segments and tombstones, beside the store's whole graph when the
    /// codes read whole walk it (else nothing: a restart reads the codes whole).
    pub(crate) fn refresh_code_segments(
        &self,
        name: &str,
        last: bool,
    ) -> Result<Option<VectorIndexBuild>> {
        let kind = Quantization::Int8;
        let (index, generation, _) = self.codes(name, kind)?;
        if index.len() < ANN_MIN_VECTORS {
            return Ok(None);
        }
        // Segments extend a whole graph the store keeps, until they outgrow it.
        if self.codes_graph(name, index.first()).is_none() || outgrown(&index) {
            return self.whole_codes_graph(name).map(Some);
        }
        let key = codes_key(name, kind);
        self.refresh_segments((name, &key), &index, generation, last, |m| int8_rows(&m))?;
        let (now, at, _) = self.codes(name, kind)?;
        self.segment_save(name, &now, at)
    }

    /// One graph over every row of int8 representation `name`, built from its float32 vectors
    /// (read for the build, then let go), returned for saving; the codes of the same rows,
    /// walking it, become the ones queries search, brought up to the writes made meanwhile.
    fn whole_codes_graph(&self, name: &str) -> Result<VectorIndexBuild> {
        let kind = Quantization::Int8;
        let repr = Resolved {
            key: name.to_string(),
            source: Source::Stored(name.to_string()),
            field: None,
            quantize: Quantization::None,
        };
        let (m, generation) = {
            let _snapshot = ReadSnapshot::begin(self.store)?;
            (self.load_matrix(&repr)?, self.store.generation()?)
        };
        let graph = Arc::new(self.graph_for(name, &m));
        let build = self.whole_build(name, &m, &graph)?;
        let mut index = CodeIndex::whole(int8_rows(&m), generation);
        drop(m);
        let _ = index.first().graph.set(Some(graph));
        let _loading = self.cache.loading();
        let _snapshot = ReadSnapshot::begin(self.store)?;
        let (current, mut at) = (self.store.generation()?, generation);
        if current > generation
            && let Some(changed) = self.store.vector_changes(name, generation)?
            && let Some(caught_up) = self.codes_with_changes(&index, name, kind, &changed)?
        {
            (index, at) = (caught_up, current);
        }
        self.cache.install(&codes_key(name, kind), index, at);
        Ok(build)
    }

    /// The graph the int8 codes read whole (`first`) of stored representation `name` walk:
    /// the store's, if it was built over these rows (read once per loaded codes).
    fn codes_graph(&self, name: &str, first: &CodeSegment) -> Option<Arc<Hnsw>> {
        first
            .graph
            .get_or_init(|| {
                let rows = &first.rows;
                if rows.ids.len() < ANN_MIN_VECTORS {
                    return None;
                }
                self.stored_graph(name, &stamp_of(rows.codes.dim(), &rows.ids)).map(Arc::new)
            })
            .clone()
    }

    /// Bytes each representation loaded so far takes in memory: its rows (and chunk ids) as
    /// `name` (float32) or `name@kind` (codes), and the graphs they walk, once read or built,
    /// as `name:hnsw` or `name@kind:hnsw`.
    pub fn memory(&self) -> Vec<(String, usize)> {
        let mut all = Vec::new();
        let mut add = |key: &str, (rows, graphs): (usize, usize)| {
            all.push((key.to_string(), rows));
            if graphs > 0 {
                all.push((format!("{key}:hnsw"), graphs));
            }
        };
        self.cache.each(|key, m: &CodeIndex| add(key, m.memory()));
        self.cache.each(|key, m: &super::live::DenseIndex| add(key, m.memory()));
        all.sort();
        all
    }
}

/// Holds stored representation `repr` (`None`: every one the store has) as `kind` in memory
/// for dense search, recorded in the manifest of `store` so every reader does the same.
/// Summary representations are document-level and few, so they stay float32.
pub(crate) fn set_quantization<S: StoreWrite>(
    store: &mut S,
    repr: Option<&str>,
    kind: Quantization,
) -> Result<()> {
    let mut manifest = store.manifest()?;
    let names: Vec<String> = match repr {
        Some(r) if manifest.representations.iter().any(|n| n == r) => vec![r.to_string()],
        Some(r) => {
            return Err(Error::Invalid(format!(
                "the store has no stored representation `{r}` to quantize (it has: {})",
                manifest.representations.join(", ")
            )));
        }
        None => manifest.chunk_representations().cloned().collect(),
    };
    if names.is_empty() && kind != Quantization::None {
        return Err(Error::Invalid(
            "the store has no vectors to quantize: add its documents with --model NAME".into(),
        ));
    }
    let before = manifest.clone();
    for name in names {
        match kind {
            Quantization::None => manifest.quantize.remove(&name),
            Quantization::Int8 | Quantization::Binary => {
                manifest.quantize.insert(name, kind.to_string())
            }
        };
    }
    if manifest != before {
        store.set_manifest(&manifest)?;
    }
    Ok(())
}
