//! The JSON filter form (HTTP, MCP, Python): refused with its place, or checked and testable.
#![no_main]

use ckeep_store::MetadataFilter;
use serde_json::json;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Ok(filter) = serde_json::from_slice::<MetadataFilter>(data) else { return };
    filter.check().expect("a filter that deserialised is a checked one");
    for doc in [json!(null), json!({"year": 2021, "lang": ["zh", "en"], "t": "2024-05-01"})] {
        let _ = filter.matches(&doc);
    }
    let _ = filter.texts_like_operators();
});
