//! What the fuzz targets share: a loader run on the fuzzer's bytes as a file of one format.

use ckeep_core::SourceMap;
use ckeep_text::Loader;
use ckeep_text::load::Format;

/// Loads `data` as a file of `format`; any `Err` is a fine answer, a panic or an abort is a
/// bug. Whatever loads keeps the loader's promises: some text, and a source map whose blocks
/// start inside it, in order.
pub fn load(format: Format, data: &[u8]) {
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
