#!/usr/bin/env bash
# A million real text vectors: exact float32 scans against int8 and binary codes with rescoring,
# ckeep's and FAISS's side by side on the same vectors, queries and exact top-10 (recall@10,
# queries/s on 1 thread and on all, bytes per vector). The vectors: windows of 8-64 words over
# every English text of the 100k-chunk collection, embedded with potion-base-8M (256
# dimensions); 200 real queries (SciFact claims, SQuAD questions) held out. See
# crates/engine/benches/vectors_1m.rs.
#
# Sets up its own venv (bench/.venv-ann: faiss-cpu, numpy) on first use.
# Usage: bench/million.sh      (BENCH_ROWS to change the million; CKEEP_DATA for the data)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="$PWD/target/quantize-bench"
mkdir -p "$OUT"
source bench/faiss_env.sh
cargo build --release --quiet -p ckeep
target/release/ckeep --quiet model pull potion-base-8M
cpu_line >&2
BENCH_DIR="$OUT" cargo bench --quiet -p ckeep-engine --bench vectors_1m
BENCH_DIR="$OUT" BENCH_SETS=million BENCH_DIM=256 cargo bench --quiet -p ckeep-index --bench quantize
"$VENV/bin/python" bench/quantize_faiss.py "$OUT" million 256
