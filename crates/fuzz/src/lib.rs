//! The fuzz targets' bodies, one function each: every loader and every parser of user input.
//! Two runners share them, so a target is written once: `fuzz/` wraps each in cargo-fuzz's
//! `fuzz_target!` for coverage-guided campaigns (`scripts/fuzz.sh`), and `tests/replay.rs` runs
//! each on its committed seeds and seeded mutations of them, a fixed budget inside the main
//! build, which is CI's short run (no second, instrumented compile of the workspace).
//!
//! A body may return early on input it cannot use; an `Err` from the code under test is a fine
//! answer. A panic, an abort or a hang is a finding.
#![allow(
    clippy::missing_panics_doc,
    reason = "a target panics to report a finding, as the crate's doc says"
)]

use std::str::FromStr;

use ckeep_core::SourceMap;
use ckeep_engine::{AskRequest, SearchRequest, Strategy, StrategyFields};
use ckeep_store::MetadataFilter;
use ckeep_text::Loader;
use ckeep_text::load::Format;
use serde_json::json;

/// A fuzz target: its name (the folder of its seeds under `fuzz/seeds`) and its body.
#[derive(Debug, Clone, Copy)]
pub struct Target {
    /// As cargo-fuzz and `fuzz/seeds` name it.
    pub name: &'static str,
    /// Runs one input.
    pub run: fn(&[u8]),
}

/// Every target, in the order `scripts/fuzz.sh` lists them.
pub const TARGETS: &[Target] = &[
    Target { name: "load_pdf", run: load_pdf },
    Target { name: "load_html", run: load_html },
    Target { name: "load_epub", run: load_epub },
    Target { name: "load_docx", run: load_docx },
    Target { name: "load_notebook", run: load_notebook },
    Target { name: "load_jsonl", run: load_jsonl },
    Target { name: "filter_text", run: filter_text },
    Target { name: "filter_json", run: filter_json },
    Target { name: "strategy", run: strategy },
    Target { name: "search_fields", run: search_fields },
];

/// One target per loader: `$name` reads any bytes as a file of `$format`.
macro_rules! loader_targets {
    ($($name:ident: $format:ident),* $(,)?) => {$(
        #[doc = concat!("The ", stringify!($format), " loader on any bytes.")]
        pub fn $name(data: &[u8]) {
            load(Format::$format, data);
        }
    )*};
}

loader_targets!(
    load_pdf: Pdf,
    load_html: Html,
    load_epub: Epub,
    load_docx: Docx,
    load_notebook: Notebook,
    load_jsonl: Jsonl,
);

/// Loads `data` as a file of `format`. Whatever loads keeps the loader's promises: some text,
/// and a source map whose blocks start inside it, in order.
fn load(format: Format, data: &[u8]) {
    let Ok(loaded) = Loader::default().load_bytes("fuzz", "fuzz", format, data.to_vec()) else {
        return;
    };
    for doc in loaded.documents {
        assert!(!doc.text.trim().is_empty(), "a loaded document has text");
        if let Some(map) = SourceMap::of(&doc.metadata) {
            assert!(map.starts.windows(2).all(|w| w[0] <= w[1]), "blocks in order");
            assert!(map.starts.iter().all(|&s| s <= doc.text.len()), "blocks inside the text");
        }
    }
}

/// The compact filter form (`year>=2020 and (lang=zh or not draft=true)`): an error naming a
/// place, or a filter whose JSON form reads back as itself and tests documents alike.
pub fn filter_text(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(filter) = MetadataFilter::parse(text) else { return };
    let again: MetadataFilter = serde_json::from_value(serde_json::to_value(&filter).unwrap())
        .expect("a parsed filter's JSON form is a valid filter");
    assert_eq!(again, filter);
    for doc in sample_documents() {
        assert_eq!(filter.matches(&doc), again.matches(&doc));
    }
    let _ = filter.keys();
}

/// The JSON filter form (HTTP, MCP, Python): refused with its place, or checked and testable.
pub fn filter_json(data: &[u8]) {
    let Ok(filter) = serde_json::from_slice::<MetadataFilter>(data) else { return };
    filter.check().expect("a filter that deserialised is a checked one");
    for doc in sample_documents() {
        let _ = filter.matches(&doc);
    }
    let _ = filter.texts_like_operators();
}

/// Metadata a filter is tested on: none, and one of each kind of value.
fn sample_documents() -> [serde_json::Value; 2] {
    [json!(null), json!({"year": 2021, "lang": ["zh", "en"], "t": "2024-05-01"})]
}

/// Strategy specs and the grids of `eval tune`/`recommend` (`k1={0.9,1.2}`): an error, or
/// strategies whose text reads back as the same strategy.
pub fn strategy(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(grid) = ckeep_eval::tune::expand_grid(text) else { return };
    assert!(grid.len() <= ckeep_eval::tune::MAX_CANDIDATES);
    for spec in grid {
        let Ok(strategy) = Strategy::from_str(&spec) else { continue };
        let Ok(strategy) = strategy.validate() else { continue };
        let again = Strategy::from_str(&strategy.to_string())
            .unwrap_or_else(|e| panic!("`{strategy}` does not read back: {e}"));
        assert_eq!(again.to_string(), strategy.to_string());
    }
}

/// What `/search`, `/ask` and MCP's tools take beside the query: strategy fields as JSON, laid
/// over the default into a request. An error for the client, never a panic.
pub fn search_fields(data: &[u8]) {
    let Ok(fields) = serde_json::from_slice::<StrategyFields>(data) else { return };
    let Ok(search) = SearchRequest::from_fields("query", &fields) else { return };
    let _ = AskRequest::new("question").with_search(search).with_options(
        Some(data.len()),
        Some(data.first().copied().map_or(0, usize::from)),
        false,
    );
}
