//! Strategy specs and the grids of `eval tune`/`recommend` (`k1={0.9,1.2}`): an error, or a
//! strategy whose text reads back as the same strategy.
#![no_main]

use std::str::FromStr;

use ckeep_engine::Strategy;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
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
});
