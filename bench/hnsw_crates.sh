#!/usr/bin/env bash
# ckeep's HNSW against the hnsw_rs crate (the most used pure-Rust HNSW) on the vectors that
# bench/hnsw.sh dumped (run that first): real MiniLM sentence vectors, and the first 100,000
# random ones. bench/ann-compare is outside the workspace, so CI never builds hnsw_rs.
# Usage: bench/hnsw_crates.sh
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="$PWD/target/hnsw-bench"
[ -f "$OUT/real.base.f32" ] || { echo "run bench/hnsw.sh first (it writes $OUT)" >&2; exit 1; }
cargo build --release --quiet --manifest-path bench/ann-compare/Cargo.toml
bench/ann-compare/target/release/ann-compare "$OUT" real 384
if [ -f "$OUT/random.base.f32" ]; then
  bench/ann-compare/target/release/ann-compare "$OUT" random 384 100000
fi
