#!/usr/bin/env bash
# Long-text near-duplicates: whole-text cosine vs chunk-pair similarity on pairs built from 108
# real articles (bench/longdoc_pairs.py: inserted, removed and shuffled passages and excerpts vs
# the nearest other article), all-MiniLM-L6-v2. For each kind: ROC-AUC, average precision, and
# accuracy at the fixed 0.7 and at a threshold calibrated on the other half of the pairs.
# Usage: bench/longdoc_pairs.sh     (CKEEP_DATA for the data)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=target/longdoc-pairs
cargo build --release --quiet -p ckeep
target/release/ckeep --quiet model pull all-MiniLM-L6-v2
python3 bench/longdoc_pairs.py "$OUT"
echo "| kind | method | ROC-AUC | AP | accuracy at 0.7 | calibrated threshold | accuracy at it (other half) |"
echo "|---|---|---|---|---|---|---|"
for kind in insert remove shuffle excerpt; do
  target/release/ckeep --quiet --json pairs "$OUT/$kind.jsonl" > "$OUT/$kind-all.json"
  target/release/ckeep --quiet --json pairs "$OUT/$kind.jsonl" --calibrate-split 0.5 > "$OUT/$kind-split.json"
  python3 - "$OUT" "$kind" <<'PY'
import json, sys
out, kind = sys.argv[1], sys.argv[2]
full = json.load(open(f"{out}/{kind}-all.json"))["results"]
split = json.load(open(f"{out}/{kind}-split.json"))["results"]
for method in ["whole text", "chunk pair"]:
    fixed = next(r for r in full if r["method"] == f"{method}, fixed")
    cal = next(r for r in split if r["method"] == f"{method}, calibrated")
    print(f"| {kind} | {method} | {fixed['roc_auc']:.3f} | {fixed['average_precision']:.3f} | "
          f"{100 * fixed['accuracy']:.1f} % | {cal['threshold']:.3f} | {100 * cal['accuracy']:.1f} % |")
PY
done
