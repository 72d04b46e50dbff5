#!/usr/bin/env bash
# The chunk-pair method on Chinese (the Chinese edition of the chunk-pair write-up): `ckeep pairs`
# on the labelled dev pairs in ../shared/data/zh/pairs (LCQMC, BQ, PAWS-X zh, binarised STS-B zh)
# with multilingual-e5-small, windows of clamp(words/4, 18, 150) words where every Chinese
# character is a word, top-3 mean; whole-text cosine beside it. The threshold is calibrated on a
# seeded half of each file and reported on the other half (never on the pairs it was chosen
# on), with 95 % intervals, F1, ROC-AUC and AP. JSON per set in bench/results/zh-pairs/.
# Usage: bench/zh_pairs.sh [lcqmc|bq|pawsx_zh|stsb_zh]...   (default: all four)
set -euo pipefail
cd "$(dirname "$0")/.."
DATA="${CKEEP_DATA:-$(cd .. && pwd)/shared/data}/zh/pairs"
cargo build --release --quiet -p ckeep
ck=target/release/ckeep
$ck --quiet model pull multilingual-e5-small
mkdir -p bench/results/zh-pairs
sets=("$@")
[ ${#sets[@]} -gt 0 ] || sets=(lcqmc bq pawsx_zh stsb_zh)
for set in "${sets[@]}"; do
  echo "== $set" >&2
  $ck pairs "$DATA/$set/dev.tsv" --model multilingual-e5-small --calibrate-split 0.5 \
    | tee "bench/results/zh-pairs/$set.txt"
  $ck --json pairs "$DATA/$set/dev.tsv" --model multilingual-e5-small --calibrate-split 0.5 \
    > "bench/results/zh-pairs/$set.json"
done
