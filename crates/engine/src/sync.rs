//! Sync: a store brought in line with files on disk. New files are added, changed ones
//! replaced (by content hash, as `add` does) and, when asked, documents whose file is gone are
//! removed.
//!
//! A sync is planned first ([`Writer::plan_sync`]: nothing is written, so `--dry-run` is the
//! plan) and then applied ([`Writer::apply_sync`]). Every write is an ingest batch (the last
//! one also removes what is gone), each a single transaction, so a sync killed midway leaves
//! every document old or new, never half, and running it again finishes the job: what was
//! written is unchanged now.

use std::collections::HashSet;
use std::path::{Component, Path, PathBuf};

use ckeep_store::{StoreRead, StoreWrite};
use ckeep_text::load::{Checked, Loaded, Source, source_file};
use ckeep_text::{ChunkerSpec, Loader};
use serde::Serialize;

use crate::engine::Writer;
use crate::error::Result;
use crate::ingest::IngestReport;
use crate::stage::DeriveProgress;

/// What a sync will do; [`Writer::apply_sync`] does it.
#[derive(Debug, Default)]
pub struct SyncPlan {
    /// Ids of documents the store does not have yet.
    pub added: Vec<String>,
    /// Ids of stored documents whose content changed.
    pub replaced: Vec<String>,
    /// How many documents are stored as they are on disk.
    pub unchanged: u64,
    /// Ids of stored documents whose file is gone (or no longer holds them): applying the
    /// plan removes them, so a caller that does not prune clears this list first.
    pub gone: Vec<String>,
    /// The sources with something to write, with their documents when they were kept.
    sources: Vec<(Source, Option<Loaded>)>,
}

/// What a sync did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct SyncReport {
    /// Ids of the documents added.
    pub added: Vec<String>,
    /// Ids of the documents replaced.
    pub replaced: Vec<String>,
    /// How many documents were already as on disk.
    pub unchanged: u64,
    /// Ids of the documents removed.
    pub removed: Vec<String>,
    /// The writing: chunks, bytes, vectors, derived representations.
    pub ingest: IngestReport,
}

impl<S: StoreRead> Writer<'_, S> {
    /// Compares what `checked` loaded from `roots` with the store. A stored document is gone
    /// when its source file lies under a root and no loaded source gave its id, unless its
    /// file failed to load (it is still there). Sources the loader did not keep in memory are
    /// read again here.
    pub fn plan_sync(
        &self,
        roots: &[PathBuf],
        checked: Checked,
        loader: &Loader,
    ) -> Result<SyncPlan> {
        let mut plan = SyncPlan::default();
        let mut seen: HashSet<String> = HashSet::new();
        for (source, kept) in checked.loaded {
            let reloaded;
            let loaded = if let Some(l) = &kept {
                l
            } else {
                reloaded = loader.load(&source)?;
                &reloaded
            };
            let mut writes = false;
            for doc in &loaded.documents {
                seen.insert(doc.id.clone());
                let list = match self.engine.store.document_hash(&doc.id)? {
                    Some(hash) if hash == doc.content_hash().to_hex() => {
                        plan.unchanged += 1;
                        continue;
                    }
                    Some(_) => &mut plan.replaced,
                    None => &mut plan.added,
                };
                list.push(doc.id.clone());
                writes = true;
            }
            if writes {
                plan.sources.push((source, kept));
            }
        }
        let failed: HashSet<PathBuf> = checked
            .failed
            .iter()
            .filter_map(|(s, _)| match s {
                Source::File(p, _) => Some(normal(p)),
                Source::Stdin(_) => None,
            })
            .collect();
        let roots: Vec<PathBuf> = roots.iter().map(|r| normal(r)).collect();
        for (id, source) in self.engine.store.document_sources()? {
            let Some(file) = source_file(&source).map(normal) else { continue };
            let under = roots.iter().any(|r| within(&file, r));
            if under && !seen.contains(&id) && !failed.contains(&file) {
                plan.gone.push(id);
            }
        }
        Ok(plan)
    }
}

impl<S: StoreWrite> Writer<'_, S> {
    /// Writes `plan`: its new and changed documents in ingest batches with `chunker`, the last
    /// of which also removes its gone documents, so a plan that fits one batch (a watched
    /// folder's edits) is one transaction.
    pub fn apply_sync(
        &mut self,
        plan: SyncPlan,
        loader: &Loader,
        chunker: &ChunkerSpec,
        progress: DeriveProgress<'_>,
    ) -> Result<SyncReport> {
        let SyncPlan { added, replaced, unchanged, gone: removed, sources } = plan;
        let mut ingest = self.engine.writer().ingest(chunker)?;
        for (source, kept) in sources {
            let loaded = match kept {
                Some(l) => l,
                None => loader.load(&source)?,
            };
            for doc in loaded.documents {
                ingest.add(doc)?;
            }
        }
        ingest.remove(removed.iter().cloned());
        let ingest = ingest.finish_with(progress)?;
        Ok(SyncReport { added, replaced, unchanged, removed, ingest })
    }
}

/// `path` without `.` components, so `./docs/a.md` and `docs/a.md` compare equal.
pub(crate) fn normal(path: &Path) -> PathBuf {
    path.components().filter(|c| !matches!(c, Component::CurDir)).collect()
}

/// Whether `file` is `root` or lies below it (both normalised; a relative root holds only
/// relative paths, as the loader makes them from a relative argument).
pub(crate) fn within(file: &Path, root: &Path) -> bool {
    file.is_absolute() == root.is_absolute() && file.starts_with(root)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roots_hold_what_lies_below_them() {
        let cases = [
            ("docs/a.md", "docs", true),
            ("docs/sub/a.md", "./docs/", true),
            ("docs2/a.md", "docs", false),
            ("a.md", ".", true),
            ("/abs/a.md", ".", false),
            ("/abs/a.md", "/abs", true),
            ("notes.md", "notes.md", true),
        ];
        for (file, root, expected) in cases {
            assert_eq!(
                within(&normal(Path::new(file)), &normal(Path::new(root))),
                expected,
                "{file} in {root}"
            );
        }
    }
}
