#!/usr/bin/env bash
# What adding 1,000 chunks (and removing 100) costs a live server's vector index at 100k and at a
# million real vectors: the indexer's pass as a stopping server makes it (the new rows frozen
# into a segment with its own graph) and its save, time and bytes written, median of three
# rounds at each size. Ends with `update cost 1M/100k: time X, bytes Y` — near 1 when an update
# costs its own size, near 10 when it costs the collection's. See
# crates/engine/benches/segments.rs.
#
# Long benchmark: the first run builds both stores (the million's whole graph takes about eight
# minutes on 2 cores); later runs reuse them.
# Usage: bench/segments.sh      (BENCH_SIZES=100000,1000000; CKEEP_DATA for the data)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="$PWD/target/quantize-bench"
mkdir -p "$OUT"
cargo build --release --quiet -p ckeep
if [ ! -f "$OUT/million.base.f32" ]; then
  target/release/ckeep --quiet model pull potion-base-8M
  BENCH_DIR="$OUT" cargo bench --quiet -p ckeep-engine --bench vectors_1m
fi
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores" >&2
BENCH_DIR="$OUT" cargo bench --quiet -p ckeep-engine --bench segments
