//! Files and folders as documents, for every front end that adds them (the CLI's `add` and
//! `sync`, Python's `Store.add`, MCP's `add` with a path): the sources under the paths (none
//! loadable is refused, with the known extensions), then every source loaded and checked before
//! the store is touched — a source that does not load refuses the whole operation, every such
//! source named, unless `keep_going` skips it — then its documents handed to the writer.

use std::path::PathBuf;

use ckeep_core::Document;
use ckeep_store::StoreWrite;
use ckeep_text::load::{Checked, KNOWN_EXTENSIONS, Source};
use ckeep_text::{LoadOptions, Loader};

use crate::error::{Error, Result};
use crate::ingest::Ingest;
use crate::report::Skipped;

/// Inputs checked in the first pass are kept in memory up to this many bytes of text, so small
/// and medium corpora are read once; larger ones are read again when written.
const KEEP_LOADED_BYTES: usize = 512 << 20;

/// Files, folders or `-` (standard input) to add, and how to read them.
#[derive(Debug, Clone, Default)]
pub struct Inputs {
    /// What to read.
    pub paths: Vec<PathBuf>,
    /// How to read it (invalid UTF-8, size bounds).
    pub load: LoadOptions,
    /// Skip the sources that do not load (each reported) instead of refusing them all.
    pub keep_going: bool,
}

/// What the first pass found: the sources that loaded (and those skipped), and what is
/// reported of them.
#[derive(Debug)]
pub struct CheckedInputs {
    loader: Loader,
    checked: Checked,
    /// Sources skipped with `keep_going`, each with why.
    pub skipped: Vec<Skipped>,
    /// The loaders' warnings.
    pub warnings: Vec<String>,
}

impl Inputs {
    /// `paths` read with the default options, refusing what does not load.
    pub fn new(paths: Vec<PathBuf>) -> Self {
        Self { paths, ..Self::default() }
    }

    /// The loader these inputs are read with.
    pub fn loader(&self) -> Loader {
        Loader::new(self.load.clone())
    }

    /// The sources under the paths; none is the caller's mistake.
    pub fn sources(&self) -> Result<Vec<Source>> {
        let sources = self.loader().sources(&self.paths)?;
        if sources.is_empty() {
            let paths: Vec<String> = self.paths.iter().map(|p| p.display().to_string()).collect();
            return Err(Error::Invalid(format!(
                "no loadable files under {} (known extensions: {KNOWN_EXTENSIONS})",
                paths.join(", ")
            )));
        }
        Ok(sources)
    }

    /// Loads and checks every source before anything is written (`verb`: what the operation
    /// does to the documents, for the refusal: `added`, `synced`), calling `progress` after
    /// each source.
    pub fn check(&self, verb: &str, progress: impl FnMut()) -> Result<CheckedInputs> {
        self.check_sources(self.sources()?, verb, progress)
    }

    /// [`Inputs::check`] of sources already listed by [`Inputs::sources`] (standard input can
    /// be read only once, so a caller that counts the sources first passes them on).
    pub fn check_sources(
        &self,
        sources: Vec<Source>,
        verb: &str,
        progress: impl FnMut(),
    ) -> Result<CheckedInputs> {
        let loader = self.loader();
        let checked = loader.check_all(sources, KEEP_LOADED_BYTES, progress);
        let failures: Vec<&ckeep_text::Error> = checked.failed.iter().map(|(_, e)| e).collect();
        self.refuse_unless_skipping(&failures, verb)?;
        let skipped = checked
            .failed
            .iter()
            .map(|(source, e)| Skipped { source: source.name(), error: e.to_string() })
            .collect();
        let warnings = checked.warnings.clone();
        Ok(CheckedInputs { loader, checked, skipped, warnings })
    }

    /// Inputs that did not load refuse the operation, every one named, unless `keep_going`.
    pub fn refuse_unless_skipping(
        &self,
        failures: &[&ckeep_text::Error],
        verb: &str,
    ) -> Result<()> {
        if failures.is_empty() || self.keep_going {
            return Ok(());
        }
        Err(Error::Unloadable {
            failures: failures.iter().map(ToString::to_string).collect(),
            verb: verb.to_string(),
            // The input's fault only when every failure is (a read error may be the machine's).
            user: failures.iter().all(|e| e.is_user_error()),
        })
    }
}

impl CheckedInputs {
    /// How many documents the checked sources hold, as far as is known without reading them
    /// again.
    pub fn documents_known(&self) -> u64 {
        self.checked.documents_known()
    }

    /// The loader's check and the loader, for a sync's plan (which also needs the sources
    /// that failed: their stored documents are kept).
    pub fn into_checked(self) -> (Checked, Loader) {
        (self.checked, self.loader)
    }

    /// Every document, in source order, read again where the first pass did not keep it
    /// (`reread` is told how many documents each such source held).
    pub fn documents(self, mut reread: impl FnMut(u64)) -> impl Iterator<Item = Result<Document>> {
        let loader = self.loader;
        self.checked.loaded.into_iter().flat_map(move |(source, kept)| {
            let loaded = match kept {
                Some(l) => Ok(l),
                None => loader.load(&source).inspect(|l| reread(l.documents.len() as u64)),
            };
            let (docs, error) = match loaded {
                Ok(l) => (l.documents, None),
                Err(e) => (Vec::new(), Some(Error::from(e))),
            };
            docs.into_iter().map(Ok).chain(error.map(Err))
        })
    }

    /// Adds every document to `ingest`, calling `added` after each (with how many more
    /// documents a source read again brought, else 0).
    pub fn add_to<S: StoreWrite>(
        self,
        ingest: &mut Ingest<'_, S>,
        mut added: impl FnMut(u64),
    ) -> Result<()> {
        let grown = std::cell::Cell::new(0);
        for doc in self.documents(|n| grown.set(grown.get() + n)) {
            ingest.add(doc?)?;
            added(grown.take());
        }
        Ok(())
    }
}
