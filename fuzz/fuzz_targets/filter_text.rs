//! The compact filter form (`year>=2020 and (lang=zh or not draft=true)`): an error naming a
//! place, or a filter whose JSON form reads back as itself and can be tested on documents.
#![no_main]

use ckeep_store::MetadataFilter;
use serde_json::json;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(filter) = MetadataFilter::parse(text) else { return };
    let again: MetadataFilter = serde_json::from_value(serde_json::to_value(&filter).unwrap())
        .expect("a parsed filter's JSON form is a valid filter");
    assert_eq!(again, filter);
    for doc in [json!(null), json!({"year": 2021, "lang": ["zh", "en"], "t": "2024-05-01"})] {
        assert_eq!(filter.matches(&doc), again.matches(&doc));
    }
    let _ = filter.keys();
});
