//! Float32 vectors as dense search holds them: read (or derived) from the store, normalised,
//! brought up to date from its change log, with their HNSW graph; the query's embedding, and
//! the check that the model asked for is the one the store's vectors came from.

use std::collections::HashSet;
use std::sync::Arc;

use ckeep_core::{ChunkHit, ChunkId};
use ckeep_embed::Embedder;
use ckeep_index::{Hnsw, top_k};
use ckeep_store::{Manifest, ReadSnapshot, StoreRead, VectorMatrix};
use rayon::prelude::*;

use super::MIN_CHANGES_READ_ALL;
use super::VectorIndex;
use super::blob::{GraphBlobName, blob_parts, is_current, stamp};
use super::cache::{Cached, GraphEntry, Loaded};
use super::live::DenseIndex;
use crate::error::{Error, Result};
use crate::represent::PLAIN_REPR;
use crate::represent::{Representation, Resolved, Source};

/// Checks `embedder` against the model recorded in `manifest` (if any).
pub(crate) fn check_model(manifest: &Manifest, embedder: &dyn Embedder) -> Result<()> {
    match &manifest.model_fingerprint {
        Some(fp) if *fp != embedder.info().fingerprint => Err(Error::ModelMismatch {
            stored: manifest.model.clone().unwrap_or_default(),
            requested: embedder.info().name.clone(),
        }),
        _ => Ok(()),
    }
}

impl<S: StoreRead> VectorIndex<'_, S> {
    /// The HNSW graph of `m` (the vectors of representation `key`, read at store generation
    /// `generation`): cached, else the persisted one if its stamp matches, else built now (and
    /// persisted at the next ingest) — or, with a background index, `None` until it is rebuilt.
    pub(crate) fn graph(&self, key: &str, m: &VectorMatrix, generation: u64) -> Option<Arc<Hnsw>> {
        if let GraphEntry::Known(g) = self.cache.graph(key, generation) {
            return g;
        }
        let _loading = self.cache.loading();
        if let GraphEntry::Known(g) = self.cache.graph(key, generation) {
            return g;
        }
        let g = match self.stored_graph(key, &stamp(m)) {
            Some(g) => Some(Arc::new(g)),
            None if self.background => None,
            None => Some(Arc::new(self.graph_for(key, m))),
        };
        self.cache.set_graph(key, generation, g.clone());
        g
    }

    /// The graph the store keeps for representation `key`, if it was built over rows with
    /// this stamp (a missing, stale or unreadable one is `None`).
    pub(crate) fn stored_graph(&self, key: &str, stamp: &[u8; 32]) -> Option<Hnsw> {
        let bytes = self.store.aux(&GraphBlobName(key).to_string()).ok().flatten()?;
        let (_, graph) = blob_parts(&bytes)?;
        is_current(&bytes, stamp).then(|| Hnsw::from_bytes(graph)).flatten()
    }

    /// The plain representation, resolved.
    pub(crate) fn plain(&self) -> Result<Resolved> {
        Representation::Plain.resolve(None, &self.store.manifest()?, true)
    }

    /// A representation's vectors, L2-normalised, loaded (or derived) once per store
    /// generation — or, with a refresh interval, at most once per interval — with the
    /// generation they were read at and whether that is not the store's now (then hits must be
    /// checked against the store, see [`VectorIndex::live_hits`]). After writes, the vectors of a
    /// stored representation are brought up to date from the store's change log.
    pub(crate) fn dense_index(&self, repr: &Resolved) -> Result<(Arc<DenseIndex>, u64, bool)> {
        self.load_cached(&repr.key, |previous, generation| {
            self.load_dense(repr, previous, generation)
        })
    }

    /// The representation's live vectors as one matrix, with the generation of their graph
    /// (see [`VectorIndex::graph`]) when they are all the graph holds (no rows written or removed
    /// since it).
    pub(crate) fn matrix(&self, repr: &Resolved) -> Result<(Arc<VectorMatrix>, Option<u64>)> {
        let (index, _, _) = self.dense_index(repr)?;
        Ok(if index.is_pure() {
            (Arc::clone(&index.first().rows), Some(index.read_at))
        } else {
            (Arc::new(index.sorted_matrix()), None)
        })
    }

    /// The value of type `T` (vectors, codes) cached under `key`, loaded by `load` as of the
    /// store's generation now (see [`super::cache::VectorCache::load`]).
    pub(crate) fn load_cached<T: Cached>(
        &self,
        key: &str,
        load: impl FnOnce(Option<&Loaded<T>>, u64) -> Result<T>,
    ) -> Result<(Arc<T>, u64, bool)> {
        // The generation and the value from one snapshot.
        let _snapshot = ReadSnapshot::begin(self.store)?;
        let current = self.store.generation()?;
        self.cache.load(key, current, load)
    }

    /// A representation's vectors as of the store's generation now, `generation`: `previous`
    /// with the changes since applied when the store logs them and they are few, else all read
    /// (or derived) again.
    fn load_dense(
        &self,
        repr: &Resolved,
        previous: Option<&Loaded<DenseIndex>>,
        generation: u64,
    ) -> Result<DenseIndex> {
        if let (Source::Stored(name), Some(previous)) = (&repr.source, previous)
            && let Some(changed) = self.store.vector_changes(name, previous.generation)?
            && changed.len() <= previous.value.len() / 4 + MIN_CHANGES_READ_ALL
            && let Some(index) = self.apply_changes(&previous.value, name, &changed)?
        {
            return Ok(index);
        }
        let m = self.load_matrix(repr)?;
        match &repr.source {
            Source::Stored(name) => self.open_dense(name, m, generation),
            Source::SummaryAvg { .. } | Source::WindowAvg(_) => {
                Ok(DenseIndex::whole(m, generation))
            }
        }
    }

    /// `index` with the vectors of the chunks `changed` (under stored representation `name`)
    /// read again: `None` when they no longer fit it (another dimension).
    pub(crate) fn apply_changes(
        &self,
        index: &DenseIndex,
        name: &str,
        changed: &[ChunkId],
    ) -> Result<Option<DenseIndex>> {
        let mut fresh = self.vectors_of(name, changed)?;
        if fresh.is_empty() {
            fresh.dim = index.dim();
        }
        Ok(index.with_changes(changed, &fresh))
    }

    /// The vectors of the chunks `ids` under stored representation `name`, normalised, in
    /// chunk order (of no dimension when there are none).
    pub(crate) fn vectors_of(&self, name: &str, ids: &[ChunkId]) -> Result<VectorMatrix> {
        let mut m = VectorMatrix::default();
        self.store.each_vector(name, Some(ids), &mut |chunk, doc, v| {
            m.dim = v.len();
            m.ids.push(chunk);
            m.docs.push(doc);
            m.data.extend_from_slice(v);
            let at = m.data.len() - v.len();
            ckeep_embed::normalize(&mut m.data[at..]);
        })?;
        Ok(m)
    }

    /// A representation's vectors read (or derived) from the store, normalised.
    pub(crate) fn load_matrix(&self, repr: &Resolved) -> Result<VectorMatrix> {
        let m = match &repr.source {
            Source::Stored(name) => self.store.vectors(name)?,
            Source::SummaryAvg { alpha, summary } => {
                let mut plain = self.store.vectors(PLAIN_REPR)?;
                let summaries = self.store.vectors(summary)?;
                crate::represent::average_with_summaries(&mut plain, &summaries, *alpha);
                plain
            }
            Source::WindowAvg(w) => {
                let plain = self.store.vectors(PLAIN_REPR)?;
                crate::represent::window_average(&plain, *w)
            }
        };
        let mut m = m;
        if m.dim > 0 {
            m.data.par_chunks_mut(m.dim).for_each(ckeep_embed::normalize);
        }
        Ok(m)
    }

    /// Of hits from vectors read at another generation than the snapshot's, the best `keep`
    /// whose chunks the snapshot still has (chunk ids are never reused, so a chunk that exists
    /// is the one the vector was made from).
    pub(crate) fn live_hits(&self, mut hits: Vec<ChunkHit>, keep: usize) -> Result<Vec<ChunkHit>> {
        hits = top_k(hits, keep);
        let ids: Vec<ChunkId> = hits.iter().map(|h| h.chunk).collect();
        let live: HashSet<ChunkId> = self.store.live_chunks(&ids)?.into_iter().collect();
        hits.retain(|h| live.contains(&h.chunk));
        Ok(hits)
    }
}
