//! Derivation: summaries and stored representations computed for documents already in the store.
//!
//! Whatever the manifest lists (summarizers, representations) every document gets; this stage
//! finds the documents that lack something and computes it, a batch per transaction, so an
//! interrupted run (minutes of LLM summaries) resumes where it stopped, and a representation
//! added to an existing store is built for the documents already there.

use std::time::Instant;

use ckeep_core::Chunk;
use ckeep_embed::InputKind;
use ckeep_store::{DerivedWrite, Lacking, LexicalEntry, StoreWrite, StoredDocument, VectorEntry};

use crate::engine::Writer;
use crate::error::{Error, Result};
use crate::manifest::{is_summary_repr, summary_repr};
use crate::represent::PLAIN_REPR;
use crate::represent::Representation;
use crate::stage::{DeriveProgress, DeriveReport, StageReport};
use crate::summarize::{LoadedSummarizer, Summarizer};

/// Documents per transaction for fast derivations (slow ones write every document).
const BATCH_DOCS: usize = 32;

impl<S: StoreWrite> Writer<'_, S> {
    /// Records summarizers and representations every document of the store gets (now, by
    /// [`Writer::derive`], and when added later). Checks that what they need is there.
    pub fn require(&mut self, reprs: &[Representation], summarizers: &[Summarizer]) -> Result<()> {
        let mut manifest = self.engine.store.manifest()?;
        let before = manifest.clone();
        for s in summarizers {
            if s.needs_model() && self.engine.embedder.is_none() {
                return Err(Error::ModelRequired(format!(
                    "the `{s}` summarizer embeds sentences; pass --model"
                )));
            }
            if let Summarizer::Llm(_) | Summarizer::Http(_) = s {
                // Fail now on a missing model or a bad URL, not after the ingest.
                crate::summarize::LoadedSummarizer::load(s, None)?;
            }
            let name = s.to_string();
            if !manifest.summarizers.contains(&name) {
                manifest.summarizers.push(name);
            }
        }
        // Summary vectors come with each summarizer (below); the other stored ones are built here.
        for r in reprs.iter().filter(|r| {
            r.is_stored() && !matches!(r, Representation::Summary | Representation::Plain)
        }) {
            let summarizer = if r.needs_summary() {
                match manifest.summarizers.as_slice() {
                    [only] => Some(only.clone()),
                    [] => {
                        return Err(Error::Invalid(format!(
                            "`{r}` needs document summaries; add --summarizer (lead:128, extractive:128, field:NAME, llm:MODEL or http:URL)"
                        )));
                    }
                    _ => match summarizers {
                        [one] => Some(one.to_string()),
                        _ => {
                            return Err(Error::Invalid(format!(
                                "`{r}`: the store has several summarizers ({}); build it with exactly one --summarizer",
                                manifest.summarizers.join(", ")
                            )));
                        }
                    },
                }
            } else {
                None
            };
            if let (Representation::Late, Some(e)) = (r, &self.engine.embedder) {
                // Fail before the ingest, not after it, when the model has no token vectors.
                e.token_vectors(&[""], InputKind::Document)?;
            }
            let needs_model = !matches!(r, Representation::Contextual(_));
            if needs_model && self.engine.embedder.is_none() {
                return Err(Error::ModelRequired(format!(
                    "the `{r}` representation is a vector; pass --model"
                )));
            }
            if let Some(name) = r.stored_name(summarizer.as_deref())
                && name != PLAIN_REPR
                && !manifest.representations.contains(&name)
            {
                manifest.representations.push(name);
            }
        }
        if self.engine.embedder.is_some() {
            for s in &manifest.summarizers.clone() {
                let name = summary_repr(s);
                if !manifest.representations.contains(&name) {
                    manifest.representations.push(name);
                }
            }
        }
        if manifest != before {
            self.engine.store.set_manifest(&manifest)?;
        }
        Ok(())
    }

    /// Makes `repr` the representation searched when a strategy names none (`None`: plain);
    /// [`Writer::require`] it first, so every document has it.
    pub fn set_default_repr(&mut self, repr: Option<Representation>) -> Result<()> {
        let mut manifest = self.engine.store.manifest()?;
        let spec = repr.filter(|r| *r != Representation::Plain).map(|r| r.to_string());
        if manifest.default_repr != spec {
            manifest.default_repr = spec;
            self.engine.store.set_manifest(&manifest)?;
        }
        Ok(())
    }

    /// Computes every summary and stored representation the manifest lists for the documents
    /// that lack it.
    pub fn derive(&mut self, progress: DeriveProgress<'_>) -> Result<DeriveReport> {
        let manifest = self.engine.store.manifest()?;
        let mut report = DeriveReport::default();
        for spec in &manifest.summarizers {
            let summarizer: Summarizer = spec.parse().map_err(Error::Invalid)?;
            let lacking = self.engine.store.documents_lacking(Lacking::Summary(spec))?;
            if lacking.is_empty() {
                continue;
            }
            let loaded =
                LoadedSummarizer::load(&summarizer, self.engine.generation_cache.as_deref())?;
            let stage = format!("summaries {spec}");
            let batch = if summarizer.is_slow() { 1 } else { BATCH_DOCS };
            let mut done = StageReport { stage: stage.clone(), ..StageReport::default() };
            let started = Instant::now();
            progress(&stage, 0, lacking.len() as u64);
            for ids in lacking.chunks(batch) {
                let (writes, tokens) = self.summaries(&loaded, ids)?;
                done.vectors += writes.iter().map(|w| w.vectors.len() as u64).sum::<u64>();
                done.generated_tokens += tokens;
                self.engine.store.write_derived(writes)?;
                done.documents += ids.len() as u64;
                progress(&stage, done.documents, lacking.len() as u64);
            }
            done.seconds = started.elapsed().as_secs_f64();
            report.stages.push(done);
        }
        for name in &manifest.representations {
            if name == PLAIN_REPR || is_summary_repr(name) {
                continue;
            }
            if let (_, Some(model)) = crate::more_models::split_model_repr(name) {
                let record = manifest.extra_models.iter().find(|r| r.name == model);
                // Listed only with a model to make them; without one the store adds no vectors.
                if let (Some(record), true) = (record, self.engine.embedder.is_some()) {
                    let embedder = self.engine.more_models.get(record)?;
                    let stage = format!("representation {name}");
                    let mut done = StageReport { stage, ..StageReport::default() };
                    let started = Instant::now();
                    self.embed_lacking_vectors(name, embedder.as_ref(), &mut done, progress)?;
                    done.seconds = started.elapsed().as_secs_f64();
                    if done.documents > 0 {
                        report.stages.push(done);
                    }
                }
                continue;
            }
            let (repr_name, summarizer) =
                name.split_once('@').map_or((name.as_str(), None), |(r, s)| (r, Some(s)));
            let repr: Representation = repr_name.parse().map_err(Error::Invalid)?;
            let lacking = if self.engine.embedder.is_some() {
                self.engine.store.documents_lacking(Lacking::Vectors(name))?
            } else {
                self.engine.store.documents_lacking(Lacking::Field(name))?
            };
            if lacking.is_empty() {
                continue;
            }
            let stage = format!("representation {name}");
            let mut done = StageReport { stage: stage.clone(), ..StageReport::default() };
            let started = Instant::now();
            progress(&stage, 0, lacking.len() as u64);
            for ids in lacking.chunks(BATCH_DOCS) {
                let writes = self.represent(repr, name, summarizer, ids)?;
                done.vectors += writes.iter().map(|w| w.vectors.len() as u64).sum::<u64>();
                self.engine.store.write_derived(writes)?;
                done.documents += ids.len() as u64;
                progress(&stage, done.documents, lacking.len() as u64);
            }
            done.seconds = started.elapsed().as_secs_f64();
            report.stages.push(done);
        }
        Ok(report)
    }

    /// Documents with their leaf chunks (documents removed meanwhile are skipped).
    pub(crate) fn documents_with_leaves(
        &self,
        ids: &[String],
    ) -> Result<Vec<(StoredDocument, Vec<Chunk>)>> {
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            if let Some(doc) = self.engine.store.document(id)? {
                let leaves = self
                    .engine
                    .store
                    .chunks_of(id)?
                    .into_iter()
                    .map(|c| c.chunk)
                    .filter(|c| c.leaf)
                    .collect();
                out.push((doc, leaves));
            }
        }
        Ok(out)
    }

    /// Summaries of `ids`, with their vectors (against each document's first chunk).
    fn summaries(
        &self,
        loaded: &LoadedSummarizer,
        ids: &[String],
    ) -> Result<(Vec<DerivedWrite>, u64)> {
        let embedder = self.engine.embedder.as_deref();
        let docs = self.documents_with_leaves(ids)?;
        let texts: Vec<&ckeep_core::Document> = docs.iter().map(|(d, _)| &d.document).collect();
        let summaries = loaded.summarize_all(&texts, embedder)?;
        let name = loaded.spec.to_string();
        let vectors = match embedder {
            Some(e) => {
                let texts: Vec<&str> = summaries.iter().map(|(s, _)| s.as_str()).collect();
                e.embed(&texts, InputKind::Document)?.0
            }
            None => Vec::new(),
        };
        let tokens = summaries.iter().map(|(_, t)| *t as u64).sum();
        let writes = docs
            .into_iter()
            .zip(summaries)
            .enumerate()
            .map(|(i, ((doc, chunks), (text, _)))| {
                let vector = vectors.get(i).filter(|_| !text.is_empty() && !chunks.is_empty());
                DerivedWrite {
                    doc_id: doc.document.id,
                    hash: doc.hash,
                    vectors: vector
                        .map(|v| VectorEntry {
                            repr: summary_repr(&name),
                            ordinal: 0,
                            vector: v.clone(),
                        })
                        .into_iter()
                        .collect(),
                    summaries: vec![(name.clone(), text)],
                    lexical: Vec::new(),
                }
            })
            .collect();
        Ok((writes, tokens))
    }

    /// A stored representation's entries for `ids`.
    fn represent(
        &self,
        repr: Representation,
        name: &str,
        summarizer: Option<&str>,
        ids: &[String],
    ) -> Result<Vec<DerivedWrite>> {
        let docs = self.documents_with_leaves(ids)?;
        let mut writes: Vec<DerivedWrite> = docs
            .iter()
            .map(|(d, _)| DerivedWrite {
                doc_id: d.document.id.clone(),
                hash: d.hash.clone(),
                ..DerivedWrite::default()
            })
            .collect();
        match repr {
            Representation::Late => self.late_entries(name, &docs, &mut writes)?,
            Representation::Contextual(parts) => {
                self.contextual_entries(parts, name, summarizer, &docs, &mut writes)?;
            }
            Representation::Plain
            | Representation::Summary
            | Representation::SummaryAvg(_)
            | Representation::WindowAvg(_) => {
                return Err(Error::Invalid(format!("`{repr}` is not built at add time")));
            }
        }
        Ok(writes)
    }

    /// Late vectors: each leaf's span pooled from the whole document's token vectors.
    fn late_entries(
        &self,
        name: &str,
        docs: &[(StoredDocument, Vec<Chunk>)],
        writes: &mut [DerivedWrite],
    ) -> Result<()> {
        let embedder = self
            .engine
            .embedder
            .as_ref()
            .ok_or_else(|| Error::ModelRequired("late chunking needs --model".into()))?;
        let texts: Vec<&str> = docs.iter().map(|(d, _)| d.document.text.as_str()).collect();
        let tokens = embedder.token_vectors(&texts, InputKind::Document)?;
        for ((w, (doc, leaves)), tv) in writes.iter_mut().zip(docs).zip(tokens) {
            // A chunk with no token of its own (whitespace) keeps its plain vector.
            let mut missing = Vec::new();
            for c in leaves {
                match tv.mean_in(c.span.start, c.span.end) {
                    Some(mut v) => {
                        ckeep_embed::normalize(&mut v);
                        w.vectors.push(VectorEntry {
                            repr: name.to_string(),
                            ordinal: c.ordinal,
                            vector: v,
                        });
                    }
                    None => missing.push(c),
                }
            }
            if !missing.is_empty() {
                let texts: Vec<&str> =
                    missing.iter().map(|c| c.span.slice(&doc.document.text)).collect();
                let (vs, _) = embedder.embed(&texts, InputKind::Document)?;
                for (c, vector) in missing.iter().zip(vs) {
                    w.vectors.push(VectorEntry {
                        repr: name.to_string(),
                        ordinal: c.ordinal,
                        vector,
                    });
                }
            }
        }
        Ok(())
    }

    /// Contextual text per leaf: its lexical entries, and its vectors with a model.
    fn contextual_entries(
        &self,
        parts: crate::represent::ContextParts,
        name: &str,
        summarizer: Option<&str>,
        docs: &[(StoredDocument, Vec<Chunk>)],
        writes: &mut [DerivedWrite],
    ) -> Result<()> {
        let analyzer = crate::analysis::of_store(&self.engine.store.manifest()?)?;
        let texts = self.leaf_texts(Representation::Contextual(parts), summarizer, docs)?;
        for ((w, (_, leaves)), texts) in writes.iter_mut().zip(docs).zip(&texts) {
            w.lexical = leaves
                .iter()
                .zip(texts)
                .map(|(c, t)| {
                    let (terms, len) = analyzer.term_counts(t);
                    LexicalEntry { field: name.to_string(), ordinal: c.ordinal, terms, len }
                })
                .collect();
        }
        if let Some(embedder) = &self.engine.embedder {
            let flat: Vec<&str> = texts.iter().flatten().map(String::as_str).collect();
            let (mut vectors, _) = embedder.embed(&flat, InputKind::Document)?;
            vectors.reverse();
            for (w, (_, leaves)) in writes.iter_mut().zip(docs) {
                for c in leaves {
                    let vector = vectors.pop().unwrap_or_default();
                    w.vectors.push(VectorEntry {
                        repr: name.to_string(),
                        ordinal: c.ordinal,
                        vector,
                    });
                }
            }
        }
        Ok(())
    }
}
