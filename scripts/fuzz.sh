#!/usr/bin/env bash
# The coverage-guided fuzz targets in fuzz/ (cargo-fuzz on libFuzzer, without sanitizers, so the
# stable toolchain builds them): each loader and each parser of user input. Every target starts
# from its seeds (fuzz/seeds/TARGET, committed) and runs RUNS inputs (default 2000: CI's short
# budget); what it learns goes to target/fuzz-corpus/TARGET, kept between runs. A crash or a
# hang stops with the input saved under fuzz/artifacts/TARGET: make it a regression test (see
# docs/security.md), then commit the test, not the artifact.
#
#   scripts/fuzz.sh                   every target, 2000 inputs each
#   RUNS=1000000 scripts/fuzz.sh pdf  the targets whose names hold `pdf`, a million each
#
# Installs cargo-fuzz from crates.io when it is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${RUNS:-2000}"
filter="${1:-}"
command -v cargo-fuzz > /dev/null || cargo install --quiet --locked cargo-fuzz
scripts/build_deps.sh # libFuzzer is C++
targets=$(cargo fuzz list --fuzz-dir fuzz | grep -- "$filter" || true)
[ -n "$targets" ] || { echo "no fuzz target matches \`$filter\`" >&2; exit 2; }
# Each input must be read in well under a second and a few hundred megabytes: slower or larger
# is a finding (a quadratic walk, a bomb), not noise.
# A short run (CI's) builds unoptimised, which compiles in about half the time; a long one
# builds optimised, which runs inputs many times faster.
profile=()
[ "$runs" -gt 100000 ] || profile=(--dev)
cargo fuzz build --fuzz-dir fuzz --sanitizer none "${profile[@]}"
for t in $targets; do
  corpus="target/fuzz-corpus/$t"
  mkdir -p "$corpus"
  start=$SECONDS
  cargo fuzz run --fuzz-dir fuzz --sanitizer none "${profile[@]}" "$t" "$corpus" "fuzz/seeds/$t" -- \
    -runs="$runs" -timeout=10 -rss_limit_mb=1024 -max_len=1048576 -print_final_stats=1 \
    2> "target/fuzz-$t.log" || { tail -40 "target/fuzz-$t.log" >&2; exit 1; }
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "target/fuzz-$t.log" | grep -o '[0-9]*$')
  printf '%-14s %9s inputs in %5d s, corpus %s\n' "$t" "$execs" $((SECONDS - start)) \
    "$(find "$corpus" -type f | wc -l)"
done
