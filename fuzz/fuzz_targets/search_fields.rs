//! What `/search`, `/ask` and MCP's tools take beside the query: strategy fields as JSON, laid
//! over the default into a request. An error for the client, never a panic.
#![no_main]

use ckeep_engine::{AskRequest, SearchRequest, StrategyFields};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Ok(fields) = serde_json::from_slice::<StrategyFields>(data) else { return };
    let Ok(search) = SearchRequest::from_fields("query", &fields) else { return };
    let _ = AskRequest::new("question").with_search(search).with_options(
        Some(data.len()),
        Some(data.first().copied().map_or(0, usize::from)),
        false,
    );
});
