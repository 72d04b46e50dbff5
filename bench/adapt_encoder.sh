#!/usr/bin/env bash
# Fine-tuning the encoder on a store's own documents, measured before building it into `ckeep
# adapt`: all-MiniLM-L6-v2 trained in PyTorch on the inverse-cloze and title pairs `ckeep adapt`
# makes from SciFact's abstracts, scored on SciFact's 300 human test queries (dense, whole
# abstracts) before and after, with the 95 % paired bootstrap interval. See bench/adapt_encoder.py
# for what is trained and how; docs/guides/adapt.md quotes the results.
#
# Two runs: in-batch negatives only, then one mined hard negative per pair; each trains on 3,000
# pairs with sources cut to 128 tokens (what a 30-minute budget allows on 2 cores).
# Long benchmark: about 40 minutes per run on 2 cores. Sets up bench/.venv-torch on first use.
# Usage: bench/adapt_encoder.sh   (BENCH_ADAPT_NEGATIVES="0 1" picks the runs; BENCH_THREADS=N;
# CKEEP_BIN=PATH pulls the model with that binary instead of a release build)
set -euo pipefail
cd "$(dirname "$0")/.."
DATA="${CKEEP_DATA:-$(cd .. && pwd)/shared/data}"
export OMP_NUM_THREADS="${BENCH_THREADS:-2}"
VENV=bench/.venv-torch
if ! "$VENV/bin/python" -c "import torch, transformers" 2>/dev/null; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet torch transformers
fi
ck="${CKEEP_BIN:-target/release/ckeep}"
[ -n "${CKEEP_BIN:-}" ] || cargo build --release --quiet -p ckeep
"$ck" --quiet model pull all-MiniLM-L6-v2
model="${CKEEP_MODELS:-$HOME/.cache/ckeep/models}/all-MiniLM-L6-v2"
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-), $(nproc) cores; $(date -u +%F)"
for negatives in ${BENCH_ADAPT_NEGATIVES:-0 1}; do
  echo "== hard negatives per pair: $negatives"
  "$VENV/bin/python" bench/adapt_encoder.py "$model" "$DATA" bench/results/adapt_encoder \
    --negatives "$negatives" 2>/dev/null
done
