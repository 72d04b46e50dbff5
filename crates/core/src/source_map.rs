//! Where the parts of an extracted text came from in its file: the PDF page, or the element of
//! an HTML, XHTML (EPUB) or DOCX file that each block was extracted from.
//!
//! Loaders that extract text from a richer file keep a [`SourceMap`] in the document's metadata
//! under [`SOURCE_MAP_KEY`]; search results and `show` turn a span into a [`Location`] with it.
//! The spans themselves stay byte spans into the stored (extracted) text.

use serde::{Deserialize, Serialize};

use crate::Span;

/// The metadata key a document's source map is kept under.
pub const SOURCE_MAP_KEY: &str = "source_map";

/// The parts of a document's text in order, each with where it came from.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct SourceMap {
    /// The byte offset in the stored text where each part starts, ascending; the first is 0.
    pub starts: Vec<usize>,
    /// For pages: each part's page number (1-based). Empty for elements.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pages: Vec<u32>,
    /// For elements: each part's element path (an `XPath` into the file, prefixed with the
    /// member's name inside an EPUB). Empty for pages.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<String>,
}

/// Where a span of extracted text came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Location {
    /// The pages the span touches, first to last (PDF).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pages: Vec<u32>,
    /// The element the span starts in (HTML, XHTML, DOCX).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub element: Option<String>,
}

impl std::fmt::Display for Location {
    /// `p. 3`, `pp. 3–4`, or the element path.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.pages.as_slice(), &self.element) {
            ([page], _) => write!(f, "p. {page}"),
            ([first, .., last], _) => write!(f, "pp. {first}–{last}"),
            ([], Some(element)) => f.write_str(element),
            ([], None) => Ok(()),
        }
    }
}

impl SourceMap {
    /// The map kept in `metadata`, if there is a well-formed one.
    pub fn of(metadata: &serde_json::Value) -> Option<SourceMap> {
        serde_json::from_value(metadata.get(SOURCE_MAP_KEY)?.clone()).ok().and_then(Self::checked)
    }

    /// The map in its JSON form, if well-formed (a store hands it over this way).
    pub fn from_json(json: &str) -> Option<SourceMap> {
        serde_json::from_str(json).ok().and_then(Self::checked)
    }

    /// `map` if its lists run in parallel and its starts ascend.
    fn checked(map: SourceMap) -> Option<SourceMap> {
        let parallel = map.pages.len() == map.starts.len() || map.paths.len() == map.starts.len();
        (parallel && map.starts.is_sorted()).then_some(map)
    }

    /// Where `span` came from: every page it touches, or the element it starts in.
    pub fn locate(&self, span: Span) -> Location {
        // The part holding a byte: the last one starting at or before it.
        let part = |byte: usize| self.starts.partition_point(|&s| s <= byte).saturating_sub(1);
        let first = part(span.start);
        let last = part(span.end.saturating_sub(1).max(span.start));
        let mut pages: Vec<u32> = self.pages.get(first..=last).unwrap_or_default().to_vec();
        pages.dedup();
        Location { pages, element: self.paths.get(first).cloned() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_find_their_pages_and_elements() {
        let pages =
            SourceMap { starts: vec![0, 10, 20, 30], pages: vec![1, 2, 2, 3], paths: vec![] };
        let cases =
            [((0, 5), vec![1]), ((5, 15), vec![1, 2]), ((10, 30), vec![2]), ((25, 31), vec![2, 3])];
        for ((start, end), want) in cases {
            assert_eq!(pages.locate(Span::new(start, end)).pages, want, "{start}..{end}");
        }
        let elements = SourceMap {
            starts: vec![0, 12],
            pages: vec![],
            paths: vec!["/html/body/h1".into(), "/html/body/p[2]".into()],
        };
        assert_eq!(elements.locate(Span::new(13, 20)).element.as_deref(), Some("/html/body/p[2]"));
        assert_eq!(elements.locate(Span::new(3, 20)).element.as_deref(), Some("/html/body/h1"));
        let metadata = serde_json::json!({"source_map": elements, "lang": "en"});
        assert_eq!(SourceMap::of(&metadata), Some(elements));
        assert_eq!(
            SourceMap::of(&serde_json::json!({"source_map": {"starts": [5, 1], "pages": [1, 2]}})),
            None
        );
    }
}
