//! Test support shared by every crate's tests and benchmarks, so a rule about the test
//! environment is written once.

use std::path::{Path, PathBuf};

/// The evaluation data (`../shared/data` beside the checkout, or `$CKEEP_DATA`).
pub fn data_dir() -> PathBuf {
    std::env::var_os("CKEEP_DATA").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data"),
        PathBuf::from,
    )
}

/// The models' reference files (reference vectors, format readers): the `models` folder beside
/// the evaluation data, so `$CKEEP_DATA` moves both.
pub fn shared_models_dir() -> PathBuf {
    data_dir().join("../models")
}
