//! `ckeep_fuzz::search_fields` under libFuzzer (crates/fuzz says what it checks).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ckeep_fuzz::search_fields(data));
