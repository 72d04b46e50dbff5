#!/usr/bin/env bash
# The whole test suite. Needs only the Rust toolchain and the evaluation data in ../shared/data
# (or $CKEEP_DATA); later parts of the suite install what they need themselves.
set -euo pipefail
cd "$(dirname "$0")/.."
export CKEEP_DATA="${CKEEP_DATA:-$(cd .. && pwd)/shared/data}"
if [ ! -d "$CKEEP_DATA" ]; then
  echo "evaluation data not found at $CKEEP_DATA (set CKEEP_DATA)" >&2
  exit 1
fi
# Libraries, binaries, integration tests and doctests; not the benchmarks (`cargo bench`),
# whose harness-free mains would otherwise run here in debug mode.
cargo test --workspace --lib --bins --tests
cargo test --workspace --doc
