//! A store's documents chunked anew (`ckeep eval recommend --apply --rechunk`): every document
//! is added to an empty store with the new chunker and otherwise as the old store keeps it —
//! the same model (its vectors come from the embedding cache where the chunks are the same),
//! analyzer, representations, summaries (from the generation cache), default representation
//! and quantisation. The old store is left as it was; replacing it is the store's one step
//! (`ckeep_store::replace`), so a reader sees the old store or the new one, never a mix.

use ckeep_store::StoreWrite;
use ckeep_text::ChunkerSpec;

use crate::engine::Engine;
use crate::engine::Writer;
use crate::error::{Error, Result};
use crate::ingest::IngestReport;

impl<S: StoreWrite> Writer<'_, S> {
    /// Adds every document of this store to `target`, an empty store, chunked with `chunker`;
    /// `target` takes this engine's model and caches. The default strategy is not copied: it
    /// was chosen for the old chunker, and the caller records the one chosen for the new.
    pub fn copy_rechunked<T: StoreWrite>(
        &self,
        target: &mut Engine<T>,
        chunker: &ChunkerSpec,
        progress: crate::stage::DeriveProgress<'_>,
    ) -> Result<IngestReport> {
        if !target.store.document_ids()?.is_empty() {
            return Err(Error::Invalid(format!(
                "{} already holds documents; re-chunking needs an empty store",
                target.store.location()
            )));
        }
        // Everything the old store keeps but its chunker (recorded by the ingest), its default
        // strategy and its query adapters.
        let manifest = ckeep_store::Manifest {
            schema_version: target.store.manifest()?.schema_version,
            chunker: None,
            default_strategy: None,
            default_strategy_from: None,
            // Adapters' weights are auxiliary blobs, which are not copied; they were learned
            // against the old chunks.
            adapters: Vec::new(),
            ..self.engine.store.manifest()?
        };
        target.store.set_manifest(&manifest)?;
        target.embedder.clone_from(&self.engine.embedder);
        target.generation_cache.clone_from(&self.engine.generation_cache);
        target.bm25 = self.engine.bm25;
        let ids = self.engine.store.document_ids()?;
        let total = ids.len() as u64;
        let mut ingest = target.writer().ingest(chunker)?;
        for (done, id) in ids.iter().enumerate() {
            if let Some(stored) = self.engine.store.document(id)? {
                ingest.add(stored.document)?;
            }
            progress("re-chunking", done as u64 + 1, total);
        }
        ingest.finish_with(progress)
    }
}
