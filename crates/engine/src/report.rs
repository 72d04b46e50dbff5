//! What an `add` did and what a store holds, each in the one shape every front end returns:
//! `ckeep add --json` and Python's `Store.add`; `ckeep stats --json`, Python's `Store.stats` and
//! `GET /stats`.

use ckeep_store::{CheckReport, Manifest, StoreRead, StoreStats};
use serde::Serialize;

use crate::engine::Searcher;
use crate::error::Result;
use crate::ingest::IngestReport;
use crate::strategy::DefaultStrategy;
use crate::vectors::GraphCheck;

/// A store at a glance: where it is, what it was built with, and its counts and sizes.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct StoreSummary {
    /// The store's location.
    pub store: String,
    /// What the store was built with (chunker, analyzer, model, representations, …).
    pub manifest: Manifest,
    /// The strategy searches use when the caller names none, and where it came from.
    pub default_strategy: DefaultStrategy,
    /// Documents, chunks, lexical fields, vectors and bytes.
    pub stats: StoreStats,
}

impl<S: StoreRead> Searcher<'_, S> {
    /// The store at a glance.
    pub fn summary(&self) -> Result<StoreSummary> {
        let manifest = self.manifest().clone();
        Ok(StoreSummary {
            store: self.store().location(),
            default_strategy: DefaultStrategy::of(&manifest),
            manifest,
            stats: self.store().stats()?,
        })
    }
}

/// What `check` found: the store's own check (every span, parent and count), each stored
/// HNSW graph read back against the vectors (a damaged one is a problem of the store's), and
/// whether the store is sound. `ckeep check --json`, Python's `Store.check`.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct StoreCheck {
    /// Whether nothing is wrong.
    pub ok: bool,
    /// The store's check, with the graphs' problems among its problems.
    pub report: CheckReport,
    /// Each stored graph: current, how far behind, or why it cannot be used.
    pub graphs: Vec<GraphCheck>,
}

impl<S: StoreRead> Searcher<'_, S> {
    /// The store checked, graphs included.
    pub fn check(&self) -> Result<StoreCheck> {
        let mut report = self.store().check()?;
        let graphs = self.engine.vectors().check()?;
        for g in &graphs {
            if let Some(p) = &g.problem {
                report.problems.push(format!("HNSW graph of `{}`: {p}", g.representation));
            }
        }
        Ok(StoreCheck { ok: report.is_ok(), report, graphs })
    }
}

/// An input left out of an `add` (`--keep-going`), with why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Skipped {
    /// The file (or `stdin`).
    pub source: String,
    /// Why it was left out.
    pub error: String,
}

/// What an `add` did: where, with what, the ingest's counts, what was left out, and the
/// warnings a user should read (the loaders', and a store's analyzer that cannot split the
/// documents' script).
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct AddReport {
    /// The store's location.
    pub store: String,
    /// The chunker the documents were cut with.
    pub chunker: String,
    /// The store's analyzer.
    pub analyzer: Option<&'static str>,
    /// The embedding model, if any.
    pub model: Option<String>,
    /// The ingest's counts.
    #[serde(flatten)]
    pub ingest: IngestReport,
    /// Inputs left out.
    pub skipped: Vec<Skipped>,
    /// Warnings, in the order they arose.
    pub warnings: Vec<String>,
    /// Wall-clock seconds.
    pub seconds: f64,
}

impl IngestReport {
    /// The warning for documents in an unspaced script (Chinese, Japanese, Korean) written
    /// under the `standard` analyzer: nothing failed, but their words cannot be searched one
    /// by one. `None` when there were none.
    pub fn unspaced_warning(&self) -> Option<String> {
        let n = self.unspaced_under_standard;
        (n > 0).then(|| {
            format!(
                "{n} document{} mostly Chinese, Japanese or Korean, but the store's analyzer is \
                 `standard`, which keeps each unspaced run of characters as one term: words \
                 inside them cannot be searched. A new store made with --analyzer cjk (or \
                 jieba, for Chinese; analyzer=\"cjk\" in Python) indexes them word by word",
                if n == 1 { " is" } else { "s are" }
            )
        })
    }
}

impl AddReport {
    /// The report of an ingest into `store`, with the engine's warnings; the inputs' are added
    /// by [`AddReport::with_inputs`].
    pub fn new(
        store: &str,
        chunker: &ckeep_text::ChunkerSpec,
        analyzer: Option<ckeep_index::Analyzer>,
        model: Option<String>,
        ingest: IngestReport,
        seconds: f64,
    ) -> Self {
        Self {
            store: store.to_string(),
            chunker: chunker.to_string(),
            analyzer: analyzer.map(ckeep_index::Analyzer::name),
            model,
            warnings: ingest.unspaced_warning().into_iter().collect(),
            ingest,
            skipped: Vec::new(),
            seconds,
        }
    }

    /// The same report with the inputs left out and the loaders' warnings (before the
    /// engine's, as they arose first).
    #[must_use]
    pub fn with_inputs(mut self, skipped: Vec<Skipped>, mut warnings: Vec<String>) -> Self {
        warnings.append(&mut self.warnings);
        self.skipped = skipped;
        self.warnings = warnings;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unspaced_documents_are_warned_of_in_the_report() {
        let ingest =
            IngestReport { documents: 3, unspaced_under_standard: 2, ..IngestReport::default() };
        let report = AddReport::new(
            "s",
            &ckeep_text::ChunkerSpec::default(),
            Some(ckeep_index::Analyzer::default()),
            None,
            ingest,
            0.5,
        )
        .with_inputs(Vec::new(), vec!["a.md: empty".into()]);
        assert_eq!(report.warnings.len(), 2);
        assert!(
            report.warnings[1].starts_with("2 documents are mostly Chinese"),
            "{:?}",
            report.warnings
        );
        let json = serde_json::to_value(&report).unwrap();
        assert_eq!(json["documents"], 3);
        assert_eq!(json["analyzer"], "standard");
        assert_eq!(json["skipped"], serde_json::json!([]));
        assert!(IngestReport::default().unspaced_warning().is_none());
    }
}
