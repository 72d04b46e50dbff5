//! Dense search over quantised vectors: a representation marked `int8` or `binary` in the
//! manifest is held in memory as compact codes only (a quarter or a thirty-second of float32);
//! a query scans the codes, then rescores the best `oversample × candidates` (at most
//! `oversample × 100`) exactly with their float32 vectors read from the store — as Qdrant's
//! quantisation does — unless the strategy says `rescore=false`. In a large collection int8
//! codes walk the HNSW graph built over the float32 vectors instead of being scanned, when the
//! store has a current one (`ckeep add` builds it; a server under writes scans).

use std::collections::HashSet;
use std::sync::{Arc, OnceLock};

use ckeep_core::{ChunkHit, ChunkId, DocKey};
use ckeep_index::{Codes, Hnsw, Quantization, dot, top_k};
use ckeep_store::{StoreRead, StoreWrite};

use super::blob::stamp_of;
use super::cache::Loaded;
use super::codes::CodeMatrix;
use super::{ANN_EF, ANN_MIN_VECTORS, MIN_CHANGES_READ_ALL, Rescoring, same_dimension};
use crate::filtered::{AllowedDocs, DenseFilter, FilteredBy};
use crate::manifest::ManifestExt;
use crate::{Engine, Error, Result};

/// Candidates that get exact scores (times the oversampling): the best 100 decide a top 10
/// of documents or fused results too; deeper candidates of a document-level or hybrid
/// search's pool of 1,000 keep their int8 estimates (a binary pool stops at the rescored
/// ones, since its estimates are not cosines). Reading every candidate's float32 vector made
/// `SQuAD`'s document-level evaluation 5× slower than float32 search.
const RESCORED_POOL: usize = 100;

/// The cache key of stored representation `name` held as `kind` codes (`plain@int8`), also
/// the name memory reports give it.
fn codes_key(name: &str, kind: Quantization) -> String {
    format!("{name}@{kind}")
}

impl<S: StoreRead> Engine<S> {
    /// The codes of stored representation `name`, normalised then quantised row by row as
    /// they stream from the store (the float32 matrix is never held whole). After writes, the
    /// codes loaded before are brought up to date from the store's change log when the changes
    /// are few, as float32 vectors are ([`Engine::apply_changes`]).
    fn codes(&self, name: &str, kind: Quantization) -> Result<(Arc<CodeMatrix>, u64, bool)> {
        let key = codes_key(name, kind);
        self.load_cached(&key, |previous: Option<&Loaded<CodeMatrix>>, _| {
            if let Some(previous) = previous
                && let Some(changed) = self.store.vector_changes(name, previous.generation)?
                && changed.len() <= previous.value.ids.len() / 4 + MIN_CHANGES_READ_ALL
                && let Some(m) = self.codes_with_changes(&previous.value, name, kind, &changed)?
            {
                return Ok(m);
            }
            // The dimension is known once the first vector arrives.
            let empty = |dim| CodeMatrix {
                ids: Vec::new(),
                docs: Vec::new(),
                codes: Codes::new(kind, dim).unwrap_or_default(),
                graph: OnceLock::new(),
            };
            let mut m: Option<CodeMatrix> = None;
            let mut row = Vec::new();
            self.store.each_vector(name, None, &mut |chunk, doc, v| {
                let m = m.get_or_insert_with(|| empty(v.len()));
                row.clear();
                row.extend_from_slice(v);
                ckeep_embed::normalize(&mut row);
                m.ids.push(chunk);
                m.docs.push(doc);
                m.codes.push(&row);
            })?;
            Ok(m.unwrap_or_else(|| empty(0)))
        })
    }

    /// `previous` without the rows of the `changed` chunks, plus the codes of those still
    /// stored, read now. `None` (read everything) unless the result keeps the chunk order a
    /// full read has — new chunks have larger ids than old ones, so it normally does — or if
    /// the dimension changed.
    fn codes_with_changes(
        &self,
        previous: &CodeMatrix,
        name: &str,
        kind: Quantization,
        changed: &[ChunkId],
    ) -> Result<Option<CodeMatrix>> {
        let gone: HashSet<ChunkId> = changed.iter().copied().collect();
        let live: Vec<bool> = previous.ids.iter().map(|id| !gone.contains(id)).collect();
        let mut codes = (!previous.ids.is_empty()).then(|| previous.codes.retain_rows(|i| live[i]));
        let kept = (0..live.len()).filter(|&i| live[i]);
        let mut ids: Vec<ChunkId> = kept.clone().map(|i| previous.ids[i]).collect();
        let mut docs: Vec<DocKey> = kept.map(|i| previous.docs[i]).collect();
        let (mut in_order, mut row) = (true, Vec::new());
        self.store.each_vector(name, Some(changed), &mut |chunk, doc, v| {
            let codes = codes.get_or_insert_with(|| Codes::new(kind, v.len()).unwrap_or_default());
            if codes.dim() != v.len() || ids.last().is_some_and(|&last| last >= chunk) {
                in_order = false;
                return;
            }
            row.clear();
            row.extend_from_slice(v);
            ckeep_embed::normalize(&mut row);
            codes.push(&row);
            ids.push(chunk);
            docs.push(doc);
        })?;
        let Some(codes) = codes.filter(|_| in_order) else { return Ok(None) };
        Ok(Some(CodeMatrix { ids, docs, codes, graph: OnceLock::new() }))
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
        if m.ids.is_empty() {
            return Ok((Vec::new(), None));
        }
        same_dimension(m.codes.dim(), q)?;
        let oversample = rescoring.oversample.unwrap_or_else(|| kind.default_oversample());
        let rescored = candidates.min(RESCORED_POOL).saturating_mul(oversample);
        let wanted = match (rescoring.rescore, kind) {
            (false, _) => candidates,
            // int8 estimates are cosines: the pool below the rescored ones keeps them.
            (true, Quantization::Int8) => candidates.max(rescored),
            (true, _) => rescored,
        };
        let keep = |row: usize| allowed.is_none_or(|a| a.contains(m.docs[row]));
        // int8 codes walk the graph; a filtered search walks it only when many chunks match.
        let graph = (kind == Quantization::Int8).then(|| self.codes_graph(name, &m)).flatten();
        let plan = allowed.map(|a| {
            let matching = m.docs.iter().filter(|&&d| a.contains(d)).count();
            let walk = FilteredBy::choose(matching, m.ids.len(), graph.is_some());
            let by = if walk == FilteredBy::FilteredGraph { walk } else { FilteredBy::CodesScan };
            DenseFilter { matching: Some(matching), total: Some(m.ids.len()), by }
        });
        let ef = ANN_EF.max(wanted);
        let walked = graph.and_then(|graph| match plan {
            None => graph.search_codes(&m.codes, q, wanted, ef),
            Some(p) if p.by == FilteredBy::FilteredGraph => {
                graph.search_codes_filtered(&m.codes, q, wanted, ef, |r| keep(r as usize))
            }
            Some(_) => None,
        });
        let found = walked.unwrap_or_else(|| m.codes.nearest(q, wanted, keep));
        let hit = |&(row, score): &(u32, f32)| ChunkHit {
            chunk: m.ids[row as usize],
            doc: m.docs[row as usize],
            score,
        };
        if !rescoring.rescore {
            let hits = found.iter().map(hit).collect();
            let hits = if stale { self.live_hits(hits, candidates)? } else { hits };
            return Ok((hits, plan));
        }
        // Only chunks still stored come back, so this is also the liveness check. Each is
        // normalised and scored as the float32 scan scores it, so the scores are the same.
        let (head, tail) = found.split_at(rescored.min(found.len()));
        let ids: Vec<ChunkId> = head.iter().map(|&(row, _)| m.ids[row as usize]).collect();
        let mut hits = Vec::with_capacity(found.len());
        let mut row = Vec::new();
        self.store.each_vector(name, Some(&ids), &mut |chunk, doc, v| {
            row.clear();
            row.extend_from_slice(v);
            ckeep_embed::normalize(&mut row);
            hits.push(ChunkHit { chunk, doc, score: dot(&row, q) });
        })?;
        if !tail.is_empty() {
            let tail: Vec<ChunkHit> = tail.iter().map(hit).collect();
            hits.extend(if stale { self.live_hits(tail, candidates)? } else { tail });
        }
        Ok((top_k(hits, candidates), plan))
    }

    /// The graph int8 codes `m` of stored representation `name` walk: the store's, if it
    /// was built over these rows (read once per loaded codes).
    fn codes_graph(&self, name: &str, m: &CodeMatrix) -> Option<Arc<Hnsw>> {
        m.graph
            .get_or_init(|| {
                if m.ids.len() < ANN_MIN_VECTORS {
                    return None;
                }
                self.stored_graph(name, &stamp_of(m.codes.dim(), &m.ids)).map(Arc::new)
            })
            .clone()
    }

    /// Bytes each quantised representation loaded so far takes in memory: its codes (and
    /// chunk ids) as `name@kind`, and the graph they walk, once read, as `name@kind:hnsw`.
    pub fn quantized_memory(&self) -> Vec<(String, usize)> {
        let mut all = Vec::new();
        self.vectors.each_codes(|key, m| {
            all.push((key.to_string(), m.codes.memory() + 16 * m.ids.len()));
            if let Some(graph) = m.graph.get().and_then(Option::as_ref) {
                all.push((format!("{key}:hnsw"), graph.memory()));
            }
        });
        all.sort();
        all
    }
}

impl<S: StoreWrite> Engine<S> {
    /// Holds stored representation `repr` (`None`: every one the store has) as `kind` in
    /// memory for dense search, recorded in the manifest so every reader does the same.
    /// Summary representations are document-level and few, so they stay float32.
    pub fn set_quantization(&mut self, repr: Option<&str>, kind: Quantization) -> Result<()> {
        let mut manifest = self.store.manifest()?;
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
            self.store.set_manifest(&manifest)?;
        }
        Ok(())
    }
}
