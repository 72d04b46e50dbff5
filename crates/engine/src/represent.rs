//! Representations: what stands for a chunk in dense (and, for `contextual`, lexical) search.
//!
//! A chunk cut out of a long document loses what the document is about. Each representation
//! gives some of it back in a different way, and each wins somewhere, so a store can hold several
//! and a query (or an evaluation strategy) picks one or fuses a few:
//! - stored, computed once per document when it is added: `plain` (the chunk alone), `late`
//!   (token vectors of the whole document pooled inside the chunk), `contextual` (title,
//!   headings and/or summary prepended before embedding and BM25 indexing), and the summary
//!   vectors themselves (one per document, stored against its first chunk);
//! - derived when a query first asks, from stored vectors, so any weight or width can be tried
//!   without re-embedding: `summary-avg:α` and `window-avg:W`.

use std::fmt;
use std::str::FromStr;

use std::collections::HashMap;

use ckeep_core::DocKey;
use ckeep_store::{Manifest, VectorMatrix};

use crate::error::{Error, Result};
use crate::lexical::PLAIN_FIELD;
use crate::manifest::{ManifestExt, summary_repr};

/// The representation that holds chunks' own embeddings.
pub const PLAIN_REPR: &str = "plain";

/// What a chunk's context text is made of, in this order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ContextParts {
    /// The document's title.
    pub title: bool,
    /// The chunk's heading path.
    pub headings: bool,
    /// The document's summary.
    pub summary: bool,
}

/// A representation of chunks, as named in `--repr` and strategy specs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Representation {
    /// The chunk's own embedding.
    #[default]
    Plain,
    /// `(1 − α)·chunk + α·summary`, both unit vectors; α in thousandths (Gist used 0.5).
    SummaryAvg(u16),
    /// The document's summary vector alone (one vector per document).
    Summary,
    /// Context text prepended to the chunk before embedding and BM25 (Anthropic's contextual
    /// retrieval); spans still point at the chunk.
    Contextual(ContextParts),
    /// The mean of the chunk's vector and its `W` neighbours on each side in the same document.
    WindowAvg(u16),
    /// Late chunking: the mean of the whole document's token vectors inside the chunk's span.
    Late,
}

/// Where a representation's vectors come from, resolved against a store.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Source {
    /// Stored under this representation name.
    Stored(String),
    /// Plain vectors averaged with the document's summary vector (stored under `summary`).
    SummaryAvg {
        /// Weight of the summary.
        alpha: f32,
        /// The stored summary representation.
        summary: String,
    },
    /// Plain vectors averaged with their neighbours.
    WindowAvg(usize),
}

/// A representation resolved against a store: its cache key, vectors and lexical field.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Resolved {
    /// Names the vectors (and their HNSW graph) uniquely within the store.
    pub key: String,
    /// How to get the vectors.
    pub source: Source,
    /// The lexical field BM25 reads (`None`: the representation has no text of its own).
    pub field: Option<String>,
    /// How the store holds these vectors for search (`ckeep add --quantize`); derived
    /// representations are float32. Read with the manifest here, so a query does not read it
    /// again.
    pub quantize: ckeep_index::Quantization,
}

impl Representation {
    /// One line per representation, for `--help`.
    pub const HELP: &'static str = "\
plain              the chunk's own embedding (default)
summary-avg:A      (1−A)·chunk + A·document summary vector, A in [0, 1] (Gist: 0.5)
summary            the document's summary vector alone (one per document)
contextual[:title,headings,summary]
                   that context prepended to the chunk before embedding and BM25
                   (default title,headings)
window-avg:W       the chunk's vector averaged with W neighbours on each side
late               late chunking: the document's token vectors pooled in the chunk's span
Join several with + (repr=plain+summary) to fuse their document rankings (RRF)";

    /// Whether its vectors are computed at add time (else derived from stored ones).
    pub fn is_stored(self) -> bool {
        matches!(self, Self::Plain | Self::Late | Self::Contextual(_) | Self::Summary)
    }

    /// Whether it needs document summaries.
    pub fn needs_summary(self) -> bool {
        match self {
            Self::SummaryAvg(_) | Self::Summary => true,
            Self::Contextual(p) => p.summary,
            Self::Plain | Self::WindowAvg(_) | Self::Late => false,
        }
    }

    /// The name its vectors are stored under, given the summarizer it uses (if any), or `None`
    /// for derived representations.
    pub(crate) fn stored_name(self, summarizer: Option<&str>) -> Option<String> {
        match self {
            Self::Plain => Some(PLAIN_REPR.to_string()),
            Self::Late => Some("late".to_string()),
            Self::Summary => summarizer.map(summary_repr),
            Self::Contextual(p) => Some(match (p.summary, summarizer) {
                (true, Some(s)) => format!("{self}@{s}"),
                _ => self.to_string(),
            }),
            Self::SummaryAvg(_) | Self::WindowAvg(_) => None,
        }
    }

    /// Resolves the representation against a store's manifest for a search that reads its
    /// vectors (`vectors`) or only its text: what it reads must be stored (or derivable from
    /// stored vectors), and a summary-based one names its summarizer unless the store has
    /// exactly one.
    pub(crate) fn resolve(
        self,
        summarizer: Option<&str>,
        manifest: &Manifest,
        vectors: bool,
    ) -> Result<Resolved> {
        if !vectors {
            match self {
                Self::Plain => {
                    return Ok(Resolved {
                        key: PLAIN_REPR.to_string(),
                        source: Source::Stored(PLAIN_REPR.to_string()),
                        field: Some(PLAIN_FIELD.to_string()),
                        quantize: ckeep_index::Quantization::None,
                    });
                }
                // Its text is indexed with or without a model: resolved below, minus the vectors.
                Self::Contextual(_) => {}
                Self::Summary | Self::SummaryAvg(_) | Self::WindowAvg(_) | Self::Late => {
                    return Err(Error::Invalid(format!(
                        "`{self}` is a vector representation; search it with mode=dense or mode=hybrid"
                    )));
                }
            }
        } else if manifest.model.is_none() {
            return Err(Error::ModelRequired(
                "the store has no vectors: it was built without a model; embed its chunks with `ckeep add --model NAME` (no inputs)".into(),
            ));
        }
        let summarizer = if self.needs_summary() {
            Some(match summarizer {
                Some(s) => s.to_string(),
                None => match manifest.summarizers.as_slice() {
                    [only] => only.clone(),
                    [] => {
                        return Err(Error::Invalid(format!(
                            "`{self}` needs document summaries and the store has none; add them with `ckeep add --summarizer lead:128` (or extractive:N, field:NAME, llm:MODEL, http:URL)"
                        )));
                    }
                    many => {
                        return Err(Error::Invalid(format!(
                            "`{self}`: the store has summaries by {}; choose one with --summarizer",
                            many.join(", ")
                        )));
                    }
                },
            })
        } else {
            None
        };
        let have = |name: &str| -> Result<()> {
            if manifest.representations.iter().any(|r| r == name) {
                Ok(())
            } else {
                Err(Error::Invalid(format!(
                    "the store has no `{name}` {} (it has {}); build them with `ckeep add --repr {self}{}`",
                    if vectors { "vectors" } else { "text" },
                    if manifest.representations.is_empty() {
                        "none".to_string()
                    } else {
                        manifest.representations.join(", ")
                    },
                    summarizer.as_ref().map(|s| format!(" --summarizer {s}")).unwrap_or_default()
                )))
            }
        };
        let key = match &summarizer {
            Some(s) if !self.is_stored() => format!("{self}@{s}"),
            _ => self.stored_name(summarizer.as_deref()).unwrap_or_else(|| self.to_string()),
        };
        let source = match self {
            Self::SummaryAvg(a) => {
                let summary = summary_repr(summarizer.as_deref().unwrap_or_default());
                have(PLAIN_REPR)?;
                have(&summary)?;
                Source::SummaryAvg { alpha: f32::from(a) / 1000.0, summary }
            }
            Self::WindowAvg(w) => {
                have(PLAIN_REPR)?;
                Source::WindowAvg(usize::from(w))
            }
            Self::Plain | Self::Late | Self::Summary | Self::Contextual(_) => {
                have(&key)?;
                Source::Stored(key.clone())
            }
        };
        let field = match self {
            Self::Contextual(_) => Some(key.clone()),
            Self::Summary => None,
            Self::Plain | Self::Late | Self::SummaryAvg(_) | Self::WindowAvg(_) => {
                Some(PLAIN_FIELD.to_string())
            }
        };
        let quantize = match &source {
            Source::Stored(name) if vectors => manifest.quantization(name)?,
            Source::Stored(_) | Source::SummaryAvg { .. } | Source::WindowAvg(_) => {
                ckeep_index::Quantization::None
            }
        };
        Ok(Resolved { key, source, field, quantize })
    }
}

impl fmt::Display for Representation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Plain => f.write_str("plain"),
            Self::SummaryAvg(a) => {
                let s = format!("{:.3}", f32::from(*a) / 1000.0);
                write!(f, "summary-avg:{}", s.trim_end_matches('0').trim_end_matches('.'))
            }
            Self::Summary => f.write_str("summary"),
            Self::Contextual(p) => {
                let parts: Vec<&str> =
                    [(p.title, "title"), (p.headings, "headings"), (p.summary, "summary")]
                        .iter()
                        .filter(|(on, _)| *on)
                        .map(|(_, n)| *n)
                        .collect();
                write!(f, "contextual:{}", parts.join(","))
            }
            Self::WindowAvg(w) => write!(f, "window-avg:{w}"),
            Self::Late => f.write_str("late"),
        }
    }
}

impl FromStr for Representation {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (name, arg) = match s.split_once(':') {
            Some((n, a)) => (n, Some(a)),
            None => (s, None),
        };
        match (name, arg) {
            ("plain", None) => Ok(Self::Plain),
            ("summary", None) => Ok(Self::Summary),
            ("late", None) => Ok(Self::Late),
            ("summary-avg", None) => Ok(Self::SummaryAvg(500)),
            ("summary-avg", Some(a)) => match a.parse::<f64>() {
                Ok(x) if (0.0..=1.0).contains(&x) => {
                    Ok(Self::SummaryAvg((x * 1000.0).round() as u16))
                }
                _ => Err(format!("summary-avg:A needs a weight A in [0, 1], got `{a}`")),
            },
            ("window-avg", Some(w)) => match w.parse::<u16>() {
                Ok(w) if (1..=64).contains(&w) => Ok(Self::WindowAvg(w)),
                _ => Err(format!("window-avg:W needs W from 1 to 64 neighbours, got `{w}`")),
            },
            ("contextual", None) => {
                Ok(Self::Contextual(ContextParts { title: true, headings: true, summary: false }))
            }
            ("contextual", Some(list)) => {
                let mut p = ContextParts { title: false, headings: false, summary: false };
                for part in list.split(',').map(str::trim) {
                    match part {
                        "title" => p.title = true,
                        "headings" => p.headings = true,
                        "summary" => p.summary = true,
                        other => {
                            return Err(format!(
                                "unknown context part `{other}`; expected title, headings and/or summary"
                            ));
                        }
                    }
                }
                Ok(Self::Contextual(p))
            }
            _ => Err(format!(
                "unknown representation `{s}`; expected plain, summary-avg:A, summary, contextual[:PARTS], window-avg:W or late"
            )),
        }
    }
}

/// Which fields of a document are indexed: its text, or its title and text — BEIR's
/// convention, and what users expect of documents with titles: each chunk is indexed (terms
/// and embedding alike) with its document's title in front (`repr=contextual:title`), and
/// that is what searches use unless a strategy names another representation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Fields {
    /// The text alone.
    #[default]
    Text,
    /// Title and text.
    TitleText,
}

impl Fields {
    /// The representation searches use by default (`None`: plain).
    pub fn representation(self) -> Option<Representation> {
        match self {
            Self::Text => None,
            Self::TitleText => Some(Representation::Contextual(ContextParts {
                title: true,
                headings: false,
                summary: false,
            })),
        }
    }
}

impl FromStr for Fields {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.replace(' ', "").as_str() {
            "text" => Ok(Self::Text),
            "title,text" | "text,title" => Ok(Self::TitleText),
            _ => Err(format!("unknown fields `{s}`; expected `text` or `title,text`")),
        }
    }
}

/// Parses `a+b+…` (a fusion of representations).
pub fn parse_list(s: &str) -> Result<Vec<Representation>, String> {
    let list: Vec<Representation> =
        s.split('+').map(|p| p.trim().parse()).collect::<Result<_, _>>()?;
    let mut seen = std::collections::HashSet::new();
    if let Some(dup) = list.iter().find(|r| !seen.insert(**r)) {
        return Err(format!("`{dup}` is listed twice"));
    }
    Ok(list)
}

/// The context text of a chunk: the chosen parts, one per line, then a blank line.
pub(crate) fn context_prefix(
    parts: ContextParts,
    title: &str,
    headings: &str,
    summary: &str,
) -> String {
    let mut lines: Vec<&str> = Vec::new();
    if parts.title && !title.trim().is_empty() {
        lines.push(title.trim());
    }
    if parts.headings && !headings.trim().is_empty() {
        lines.push(headings.trim());
    }
    if parts.summary && !summary.trim().is_empty() {
        lines.push(summary.trim());
    }
    if lines.is_empty() { String::new() } else { format!("{}\n\n", lines.join("\n")) }
}

/// `(1 − α)·chunk + α·summary` for each row of `plain` (both unit vectors), in place; rows of
/// documents without a summary vector stay as they are.
pub(crate) fn average_with_summaries(
    plain: &mut VectorMatrix,
    summaries: &VectorMatrix,
    alpha: f32,
) {
    if plain.dim == 0 || summaries.dim != plain.dim {
        return;
    }
    let by_doc: HashMap<DocKey, usize> =
        summaries.docs.iter().enumerate().map(|(i, d)| (*d, i)).collect();
    let dim = plain.dim;
    for (row, doc) in plain.data.chunks_exact_mut(dim).zip(&plain.docs) {
        let Some(&i) = by_doc.get(doc) else { continue };
        let mut s = summaries.row(i).to_vec();
        ckeep_embed::normalize(&mut s);
        ckeep_embed::normalize(row);
        for (c, s) in row.iter_mut().zip(&s) {
            *c = (1.0 - alpha) * *c + alpha * s;
        }
    }
}

/// Each row of `plain` averaged (as unit vectors) with up to `w` rows on each side that belong
/// to the same document. Rows are in chunk order, so neighbours are the chunks around it.
pub(crate) fn window_average(plain: &VectorMatrix, w: usize) -> VectorMatrix {
    let dim = plain.dim;
    let mut unit = plain.data.clone();
    if dim == 0 {
        return plain.clone();
    }
    unit.chunks_exact_mut(dim).for_each(ckeep_embed::normalize);
    let mut out = plain.clone();
    for (i, row) in out.data.chunks_exact_mut(dim).enumerate() {
        row.fill(0.0);
        let doc = plain.docs[i];
        let lo = (i.saturating_sub(w)..i).find(|&j| plain.docs[j] == doc).unwrap_or(i);
        let hi = (i + 1..=(i + w).min(plain.len() - 1))
            .take_while(|&j| plain.docs[j] == doc)
            .last()
            .unwrap_or(i);
        for j in lo..=hi {
            for (a, b) in row.iter_mut().zip(&unit[j * dim..(j + 1) * dim]) {
                *a += b;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for s in [
            "plain",
            "summary-avg:0.5",
            "summary-avg:0.25",
            "summary",
            "contextual:title,headings",
            "contextual:title,summary",
            "window-avg:1",
            "late",
        ] {
            assert_eq!(s.parse::<Representation>().unwrap().to_string(), s);
        }
        assert_eq!(
            "contextual".parse::<Representation>().unwrap().to_string(),
            "contextual:title,headings"
        );
        assert_eq!(parse_list("plain+summary").unwrap().len(), 2);
    }

    #[test]
    fn bad_names_say_why() {
        for (s, needle) in [
            ("summary-avg:1.5", "in [0, 1]"),
            ("window-avg:0", "from 1 to 64"),
            ("contextual:authors", "unknown context part"),
            ("gist", "unknown representation"),
        ] {
            let e = s.parse::<Representation>().unwrap_err();
            assert!(e.contains(needle), "{s}: {e}");
        }
        assert!(parse_list("plain+plain").unwrap_err().contains("twice"));
    }

    #[test]
    fn resolving_checks_the_store() {
        let mut m = Manifest {
            model: Some("m".into()),
            representations: vec!["plain".into(), "summary:lead:128".into()],
            summarizers: vec!["lead:128".into()],
            ..Manifest::default()
        };
        let r = Representation::SummaryAvg(250).resolve(None, &m, true).unwrap();
        assert_eq!(r.key, "summary-avg:0.25@lead:128");
        assert_eq!(
            r.source,
            Source::SummaryAvg { alpha: 0.25, summary: "summary:lead:128".into() }
        );
        assert_eq!(r.field.as_deref(), Some("plain"));
        let e = Representation::Late.resolve(None, &m, true).unwrap_err().to_string();
        assert!(Representation::Plain.resolve(None, &Manifest::default(), false).is_ok());
        let e2 = Representation::Late.resolve(None, &m, false).unwrap_err().to_string();
        assert!(e2.contains("mode=dense"), "{e2}");
        assert!(e.contains("ckeep add --repr late"), "{e}");
        m.summarizers.push("extractive:128".into());
        let e = Representation::Summary.resolve(None, &m, true).unwrap_err().to_string();
        assert!(e.contains("choose one"), "{e}");
        let e = Representation::Summary
            .resolve(Some("extractive:128"), &m, true)
            .unwrap_err()
            .to_string();
        assert!(e.contains("summary:extractive:128"), "{e}");
        let c = "contextual:title,summary".parse::<Representation>().unwrap();
        assert_eq!(c.stored_name(Some("lead:128")).unwrap(), "contextual:title,summary@lead:128");
    }

    #[test]
    fn window_average_stays_in_its_document() {
        let m = VectorMatrix {
            ids: (0..4).map(ckeep_core::ChunkId).collect(),
            docs: vec![DocKey(1), DocKey(1), DocKey(1), DocKey(2)],
            dim: 2,
            data: vec![2.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 3.0],
        };
        let w = window_average(&m, 1);
        // Row 0: itself and row 1; row 2: rows 1 and 2 only (row 3 is another document).
        assert_eq!(w.data, [1.0, 1.0, 2.0, 1.0, 1.0, 1.0, 0.0, 1.0]);
        let mut plain = m.clone();
        let summaries = VectorMatrix {
            ids: vec![ckeep_core::ChunkId(0)],
            docs: vec![DocKey(1)],
            dim: 2,
            data: vec![0.0, 5.0],
        };
        average_with_summaries(&mut plain, &summaries, 0.25);
        assert_eq!(&plain.data[..4], &[0.75, 0.25, 0.0, 1.0]);
        assert_eq!(&plain.data[6..], &[0.0, 3.0], "no summary: unchanged");
    }

    #[test]
    fn context_prefix_skips_empty_parts() {
        let all = ContextParts { title: true, headings: true, summary: true };
        assert_eq!(context_prefix(all, "Title", "", "A summary."), "Title\nA summary.\n\n");
        assert_eq!(context_prefix(all, " ", "", ""), "");
    }
}
