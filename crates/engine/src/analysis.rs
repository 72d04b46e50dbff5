//! Which analyzer a store uses: chosen on its first ingest (by name, or `auto` from the script
//! of the first documents), recorded in the manifest, and used for every later document and
//! query, so stored terms and query terms always agree.

use std::fmt;
use std::str::FromStr;

use ckeep_index::Analyzer;
use ckeep_store::Manifest;

use crate::error::{Error, Result};

/// The analyzer asked for on ingest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AnalyzerChoice {
    /// Picked from the script of the first documents written ([`Analyzer::detect`]): `standard`
    /// for spaced scripts, `jieba` for Chinese, `cjk` for Japanese and Korean.
    #[default]
    Auto,
    /// This one.
    Fixed(Analyzer),
}

impl fmt::Display for AnalyzerChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AnalyzerChoice::Auto => f.write_str("auto"),
            AnalyzerChoice::Fixed(a) => a.fmt(f),
        }
    }
}

impl FromStr for AnalyzerChoice {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        if s == "auto" {
            return Ok(AnalyzerChoice::Auto);
        }
        s.parse().map(AnalyzerChoice::Fixed).map_err(|e: String| format!("{e} or auto"))
    }
}

/// The analyzer a store's manifest records; `None` for a store that has none yet.
pub(crate) fn recorded(manifest: &Manifest) -> Result<Option<Analyzer>> {
    manifest
        .analyzer
        .as_deref()
        .map(|id| Analyzer::from_id(id).ok_or_else(|| Error::AnalyzerUnknown { stored: id.into() }))
        .transpose()
}

/// The analyzer a store's terms are made with, for its queries and for terms derived later
/// (`standard` for a store without documents).
pub(crate) fn of_store(manifest: &Manifest) -> Result<Analyzer> {
    Ok(recorded(manifest)?.unwrap_or_default())
}

/// The analyzer an ingest uses, checked against the store's: `None` when `auto` has yet to see
/// the first documents.
pub(crate) fn for_ingest(manifest: &Manifest, choice: AnalyzerChoice) -> Result<Option<Analyzer>> {
    match (recorded(manifest)?, choice) {
        (Some(stored), AnalyzerChoice::Fixed(asked)) if stored != asked => {
            Err(Error::AnalyzerMismatch {
                stored: stored.name().into(),
                requested: asked.name().into(),
            })
        }
        (Some(stored), _) => Ok(Some(stored)),
        (None, AnalyzerChoice::Fixed(asked)) => Ok(Some(asked)),
        (None, AnalyzerChoice::Auto) => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn choices_parse() {
        assert_eq!("auto".parse(), Ok(AnalyzerChoice::Auto));
        assert_eq!("jieba".parse(), Ok(AnalyzerChoice::Fixed(Analyzer::Jieba)));
        assert!("jeiba".parse::<AnalyzerChoice>().is_err());
        assert_eq!(AnalyzerChoice::Fixed(Analyzer::Cjk).to_string(), "cjk");
    }

    #[test]
    fn a_store_keeps_its_analyzer() {
        let mut m = Manifest::default();
        assert_eq!(for_ingest(&m, AnalyzerChoice::Auto).unwrap(), None);
        m.analyzer = Some(Analyzer::Cjk.id().into());
        assert_eq!(for_ingest(&m, AnalyzerChoice::Auto).unwrap(), Some(Analyzer::Cjk));
        let e = for_ingest(&m, AnalyzerChoice::Fixed(Analyzer::Jieba)).unwrap_err().to_string();
        assert!(e.contains("`cjk`") && e.contains("`jieba`"), "{e}");
        m.analyzer = Some("klingon/v9".into());
        assert!(of_store(&m).unwrap_err().to_string().contains("klingon/v9"));
    }
}
