//! Ingest: documents in, chunks and lexical entries written in batches.
//!
//! Each batch is one store transaction, so an interrupted ingest leaves every document fully
//! present or absent, and running the same ingest again completes it (unchanged documents are
//! recognised by content hash and skipped).

use std::sync::atomic::{AtomicU64, Ordering};

use ckeep_core::Document;
use ckeep_embed::InputKind;
use ckeep_index::Analyzer;
use ckeep_store::{DocumentWrite, LexicalEntry, StoreWrite, VectorEntry};
use ckeep_text::chunk::SizeUnit;
use ckeep_text::{ChunkerSpec, SizeCounter, WordCounter};
use rayon::prelude::*;
use serde::Serialize;

use crate::engine::Engine;
use crate::engine::Writer;
use crate::error::{Error, Result};
use crate::lexical::PLAIN_FIELD;
use crate::represent::PLAIN_REPR;

/// A batch is written when it holds this many documents…
const BATCH_DOCS: usize = 2048;
/// …or, when chunks are embedded (seconds per batch rather than milliseconds), this many.
const BATCH_DOCS_EMBEDDING: usize = 128;
/// …or this many bytes of text.
const BATCH_BYTES: usize = 32 << 20;

/// What an ingest did.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct IngestReport {
    /// Documents offered.
    pub documents: u64,
    /// New documents stored.
    pub added: u64,
    /// Documents whose content changed and were replaced.
    pub replaced: u64,
    /// Documents already stored with the same content (no-ops).
    pub unchanged: u64,
    /// Chunks written (all levels).
    pub chunks: u64,
    /// Bytes of text written.
    pub bytes: u64,
    /// Chunk vectors written (0 without a model).
    pub vectors: u64,
    /// Of those, how many came from the embedding cache instead of the model.
    pub cached_vectors: u64,
    /// Chunks longer than the model's input limit, embedded from their beginning only.
    pub truncated: u64,
    /// The analyzer `auto` chose for the store (set by the ingest that chose it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub analyzer_chosen: Option<String>,
    /// Documents mostly in an unspaced script (Chinese, Japanese, Korean) written under the
    /// `standard` analyzer, which keeps each unspaced run as one term: their words cannot be
    /// found one by one, so the CLI and Python warn.
    #[serde(skip_serializing_if = "is_zero")]
    pub unspaced_under_standard: u64,
    /// Whether an HNSW graph was (re)built for a large collection.
    pub vector_index_built: bool,
    /// Summaries and representations computed for documents that lacked them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub derived: Vec<crate::stage::StageReport>,
}

/// An ingest in progress; call [`Ingest::finish`] to write the last batch.
#[derive(Debug)]
pub struct Ingest<'e, S: StoreWrite> {
    engine: &'e mut Engine<S>,
    chunker: ChunkerSpec,
    /// `None` until `auto` has seen the first batch.
    analyzer: Option<Analyzer>,
    pending: Vec<(Document, bool)>,
    pending_bytes: usize,
    /// Ids to remove in the same transaction as the last batch (see [`Ingest::remove`]).
    removals: Vec<String>,
    report: IngestReport,
}

impl<'e, S: StoreWrite> Writer<'e, S> {
    /// Starts an ingest with `chunker`, recording it (and the analyzer) in the manifest of a new
    /// store, or checking them against an existing one.
    pub fn ingest(self, chunker: &ChunkerSpec) -> Result<Ingest<'e, S>> {
        let mut manifest = self.engine.store.manifest()?;
        let requested = chunker.to_string();
        size_counter(chunker, self.engine.embedder.as_ref())?;
        if chunker.needs_sentence_vectors() && self.engine.embedder.is_none() {
            return Err(Error::ModelRequired(format!(
                "the `{requested}` chunker embeds sentences; pass --model"
            )));
        }
        match &manifest.chunker {
            Some(stored) if *stored != requested => {
                return Err(Error::ChunkerMismatch {
                    stored: stored.clone(),
                    requested,
                    asked: crate::error::ChunkerAsked::Add,
                });
            }
            _ => {}
        }
        let analyzer = crate::analysis::for_ingest(&manifest, self.engine.analyzer)?;
        let mut changed =
            manifest.chunker.is_none() || (manifest.analyzer.is_none() && analyzer.is_some());
        match (&self.engine.embedder, &manifest.model) {
            (Some(e), Some(_)) => crate::vectors::check_model(&manifest, e.as_ref())?,
            (Some(e), None) => {
                if !self.engine.store.document_ids()?.is_empty() {
                    return Err(Error::ModelRequired(format!(
                        "the store holds documents indexed without a model; embed them first with `ckeep add --model {}` (no inputs)",
                        e.info().name
                    )));
                }
                crate::adopt::record_model(&mut manifest, e.info());
                changed = true;
            }
            (None, Some(m)) => {
                return Err(Error::ModelRequired(format!(
                    "the store embeds its chunks with `{m}`; pass --model {m}"
                )));
            }
            (None, None) => {}
        }
        if changed {
            manifest.chunker = Some(requested);
            manifest.analyzer = analyzer.map(|a| a.id().to_string());
            if manifest.created_by.is_empty() {
                manifest.created_by = format!("ckeep {}", env!("CARGO_PKG_VERSION"));
            }
            self.engine.store.set_manifest(&manifest)?;
        }
        Ok(Ingest {
            engine: self.engine,
            chunker: chunker.clone(),
            analyzer,
            pending: Vec::new(),
            pending_bytes: 0,
            removals: Vec::new(),
            report: IngestReport::default(),
        })
    }
}

impl<S: StoreWrite> Ingest<'_, S> {
    /// Adds a document; writes a batch when enough is pending.
    pub fn add(&mut self, doc: Document) -> Result<()> {
        self.report.documents += 1;
        let stored = self.engine.store.document_hash(&doc.id)?;
        let replacing = match stored {
            Some(hash) if hash == doc.content_hash().to_hex() => {
                self.report.unchanged += 1;
                return Ok(());
            }
            Some(_) => true,
            None => false,
        };
        self.pending_bytes += doc.text.len();
        self.pending.push((doc, replacing));
        let max_docs =
            if self.engine.embedder.is_some() { BATCH_DOCS_EMBEDDING } else { BATCH_DOCS };
        if self.pending.len() >= max_docs || self.pending_bytes >= BATCH_BYTES {
            self.flush()?;
        }
        Ok(())
    }

    /// Sets the representation searches use by default (see [`Writer::set_default_repr`]).
    pub fn set_default_repr(
        &mut self,
        repr: Option<crate::represent::Representation>,
    ) -> Result<()> {
        self.engine.writer().set_default_repr(repr)
    }

    /// Removes documents in the transaction that writes the last batch, so a reader sees the
    /// documents added, replaced and removed by a small ingest (a watched folder's batch) all at
    /// once. Ids not stored are ignored.
    pub fn remove(&mut self, ids: impl IntoIterator<Item = String>) {
        self.removals.extend(ids);
    }

    /// Records representations and summarizers every document gets (see [`Writer::require`]);
    /// they are computed by [`Ingest::finish`].
    pub fn require(
        &mut self,
        reprs: &[crate::represent::Representation],
        summarizers: &[crate::summarize::Summarizer],
    ) -> Result<()> {
        self.engine.writer().require(reprs, summarizers)
    }

    /// What has been done so far (written batches and skipped documents).
    pub fn report(&self) -> &IngestReport {
        &self.report
    }

    /// Writes pending documents as one transaction.
    pub fn flush(&mut self) -> Result<()> {
        self.write_pending(&[])
    }

    /// Writes pending documents and removes `removed`, as one transaction.
    fn write_pending(&mut self, removed: &[String]) -> Result<()> {
        if self.pending.is_empty() {
            if !removed.is_empty() {
                self.engine.store.remove(removed)?;
            }
            return Ok(());
        }
        let pending = std::mem::take(&mut self.pending);
        self.pending_bytes = 0;
        let analyzer = match self.analyzer {
            Some(a) => a,
            None => self.choose_analyzer(&pending)?,
        };
        let chunker = &self.chunker;
        let sentence_vectors = self.sentence_vectors(&pending)?;
        let counter = size_counter(chunker, self.engine.embedder.as_ref())?;
        let counter = counter.as_ref();
        let unspaced = AtomicU64::new(0);
        let mut writes: Vec<(DocumentWrite, bool)> = pending
            .into_par_iter()
            .zip(sentence_vectors)
            .map(|((doc, replacing), vectors)| {
                if analyzer == Analyzer::Standard
                    && Analyzer::detect([doc.text.as_str()]) != Analyzer::Standard
                {
                    unspaced.fetch_add(1, Ordering::Relaxed);
                }
                (prepare(doc, chunker, analyzer, counter, &vectors), replacing)
            })
            .collect();
        let mut report = self.report.clone();
        report.unspaced_under_standard += unspaced.into_inner();
        if let Some(embedder) = &self.engine.embedder {
            let texts: Vec<&str> = writes
                .iter()
                .flat_map(|(w, _)| {
                    w.chunks.iter().filter(|c| c.leaf).map(|c| c.span.slice(&w.document.text))
                })
                .collect();
            let (vectors, stats) = embedder.embed(&texts, InputKind::Document)?;
            report.vectors += vectors.len() as u64;
            report.cached_vectors += stats.cached as u64;
            report.truncated += stats.truncated as u64;
            let mut vectors = vectors.into_iter();
            for (w, _) in &mut writes {
                for c in w.chunks.iter().filter(|c| c.leaf) {
                    let vector = vectors.next().unwrap_or_default();
                    w.vectors.push(VectorEntry {
                        repr: PLAIN_REPR.into(),
                        ordinal: c.ordinal,
                        vector,
                    });
                }
            }
        }
        for (w, replacing) in &writes {
            if *replacing {
                report.replaced += 1;
            } else {
                report.added += 1;
            }
            report.chunks += w.chunks.len() as u64;
            report.bytes += w.document.text.len() as u64;
        }
        self.engine.store.write_changes(writes.into_iter().map(|(w, _)| w).collect(), removed)?;
        self.report = report;
        Ok(())
    }

    /// `auto`'s choice, made on the first batch written and recorded in the manifest.
    fn choose_analyzer(&mut self, pending: &[(Document, bool)]) -> Result<Analyzer> {
        let chosen = Analyzer::detect(pending.iter().map(|(d, _)| d.text.as_str()));
        let mut manifest = self.engine.store.manifest()?;
        manifest.analyzer = Some(chosen.id().to_string());
        self.engine.store.set_manifest(&manifest)?;
        self.analyzer = Some(chosen);
        self.report.analyzer_chosen = Some(chosen.name().to_string());
        Ok(chosen)
    }

    /// One vector per sentence of each pending document when the chunker needs them (the
    /// `semantic` chunker), else empty lists.
    fn sentence_vectors(&self, pending: &[(Document, bool)]) -> Result<Vec<Vec<Vec<f32>>>> {
        if !self.chunker.needs_sentence_vectors() {
            return Ok(vec![Vec::new(); pending.len()]);
        }
        let embedder = self.engine.embedder.as_ref().ok_or_else(|| {
            Error::ModelRequired(format!("the `{}` chunker needs --model", self.chunker))
        })?;
        let spans: Vec<Vec<ckeep_core::Span>> =
            pending.iter().map(|(d, _)| ckeep_text::chunk::sentence_spans(&d.text)).collect();
        let texts: Vec<&str> = pending
            .iter()
            .zip(&spans)
            .flat_map(|((d, _), s)| s.iter().map(|s| s.slice(&d.text)))
            .collect();
        let (vectors, _) = embedder.embed(&texts, InputKind::Document)?;
        let mut vectors = vectors.into_iter();
        Ok(spans.iter().map(|s| vectors.by_ref().take(s.len()).collect()).collect())
    }

    /// Writes what is pending, computes the summaries and representations the store keeps for
    /// every document, refreshes the vector index of a large collection, and returns the report.
    pub fn finish(self) -> Result<IngestReport> {
        self.finish_with(&mut |_, _, _| {})
    }

    /// [`Ingest::finish`], reporting the derivation's progress (LLM summaries take minutes).
    pub fn finish_with(
        mut self,
        progress: crate::stage::DeriveProgress<'_>,
    ) -> Result<IngestReport> {
        let removals = std::mem::take(&mut self.removals);
        self.write_pending(&removals)?;
        self.report.derived = self.engine.writer().derive(progress)?.stages;
        if self.engine.embedder.is_some() && !self.engine.background_index {
            self.report.vector_index_built = self.engine.writer().refresh_vector_index()?;
        }
        Ok(self.report)
    }
}

/// Chunk sizes in the embedding model's tokens (`unit=tokens`).
struct ModelTokens<'a>(&'a dyn ckeep_embed::Embedder);

impl SizeCounter for ModelTokens<'_> {
    fn count(&self, text: &str) -> usize {
        self.0.count_text_tokens(text).unwrap_or(0)
    }

    fn unit(&self) -> &'static str {
        "tokens"
    }
}

/// What `chunker`'s sizes count: words, or the model's tokens (which needs a model with a
/// tokenizer at hand).
pub(crate) fn size_counter<'a>(
    chunker: &ChunkerSpec,
    embedder: Option<&'a std::sync::Arc<dyn ckeep_embed::Embedder>>,
) -> Result<Box<dyn SizeCounter + 'a>> {
    match (chunker.unit(), embedder) {
        (SizeUnit::Words, _) => Ok(Box::new(WordCounter)),
        (SizeUnit::Tokens, Some(e)) if e.count_text_tokens("").is_some() => {
            Ok(Box::new(ModelTokens(e.as_ref())))
        }
        (SizeUnit::Tokens, _) => Err(Error::ModelRequired(format!(
            "`{chunker}` counts sizes in the embedding model's tokens: pass --model with a local model (a server's tokenizer is not at hand)"
        ))),
    }
}

/// Chunks a document and analyses its leaves for the lexical index.
fn prepare(
    doc: Document,
    chunker: &ChunkerSpec,
    analyzer: Analyzer,
    counter: &dyn SizeCounter,
    sentence_vectors: &[Vec<f32>],
) -> DocumentWrite {
    let chunks = chunker.chunk_with_vectors(&doc.text, counter, sentence_vectors);
    let lexical = chunks
        .iter()
        .filter(|c| c.leaf)
        .map(|c| {
            let (terms, len) = analyzer.term_counts(c.span.slice(&doc.text));
            LexicalEntry { field: PLAIN_FIELD.to_string(), ordinal: c.ordinal, terms, len }
        })
        .collect();
    DocumentWrite { document: doc, chunks, lexical, vectors: Vec::new(), summaries: Vec::new() }
}

/// For `skip_serializing_if`: a count that is zero is left out of the report.
#[allow(clippy::trivially_copy_pass_by_ref)] // serde passes a reference
fn is_zero(n: &u64) -> bool {
    *n == 0
}
