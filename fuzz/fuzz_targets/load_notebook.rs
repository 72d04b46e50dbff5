//! The notebook loader on any bytes: an error about the file, never a panic, abort or hang.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    ckeep_fuzz::load(ckeep_text::load::Format::Notebook, data);
});
