#!/usr/bin/env bash
# A learned pair score from one, two and three embedding models (issue 46): `ckeep pairs
# --learn` on QQP dev (English) and LCQMC dev (Chinese), each model set judged two ways — five
# folds out of fold over the whole file, and fitted on a seeded half (`--calibrate-split 0.5`)
# and judged on the other — never on a pair it was fitted on. Then what each model costs: the
# seconds `pairs` spends embedding and scoring QQP with that model alone, without the
# embedding cache. JSON per run in bench/results/pair-models/.
#
# The model order puts the best model for the language first (its scores are the ones the
# fixed rows report); the learned score reads all of them.
# Usage: bench/pair_models.sh   (CKEEP_DATA=DIR for the data; BENCH_COSTS=0 skips the costs)
set -euo pipefail
cd "$(dirname "$0")/.."
DATA="${CKEEP_DATA:-$(cd .. && pwd)/shared/data}"
cargo build --release --quiet -p ckeep
ck=target/release/ckeep
$ck --quiet model pull all-MiniLM-L6-v2 multilingual-e5-small potion-base-8M
out=bench/results/pair-models
mkdir -p "$out"
M=all-MiniLM-L6-v2 E=multilingual-e5-small P=potion-base-8M
run() { # NAME FILE MODEL...
  local name=$1 file=$2; shift 2
  local models=()
  for m in "$@"; do models+=(--model "$m"); done
  $ck --quiet --json pairs "$file" "${models[@]}" --learn 2> /dev/null > "$out/$name-folds.json"
  $ck --quiet --json pairs "$file" "${models[@]}" --learn --calibrate-split 0.5 2> /dev/null \
    > "$out/$name-half.json"
}
run qqp-1 "$DATA/qqp/dev.tsv" $M
run qqp-2 "$DATA/qqp/dev.tsv" $M $E
run qqp-3 "$DATA/qqp/dev.tsv" $M $E $P
run lcqmc-1 "$DATA/zh/pairs/lcqmc/dev.tsv" $E
run lcqmc-2 "$DATA/zh/pairs/lcqmc/dev.tsv" $E $M
run lcqmc-3 "$DATA/zh/pairs/lcqmc/dev.tsv" $E $M $P
if [ "${BENCH_COSTS:-1}" != 0 ]; then
  for m in $M $E $P; do
    $ck --quiet --no-cache --json pairs "$DATA/qqp/dev.tsv" --model "$m" 2> /dev/null \
      > "$out/cost-$m.json"
  done
fi
python3 - "$out" <<'PY'
import glob, json, os, sys
out = sys.argv[1]
print("| pairs | models | judged | accuracy (95 % CI) | F1 | ROC-AUC | AP |")
print("|---|---|---|---|---|---|---|")
for set_ in ("qqp", "lcqmc"):
    for n in (1, 2, 3):
        for way in ("folds", "half"):
            r = json.load(open(f"{out}/{set_}-{n}-{way}.json"))
            row = r["results"][-1]
            lo, hi = row["accuracy_ci95"]
            print(f"| {set_} {r['pairs']:,} | {r['model'].replace('+', ' + ')} | {row['method']} "
                  f"| {100 * row['accuracy']:.2f} % ({100 * lo:.1f}–{100 * hi:.1f}) "
                  f"| {row['f1']:.3f} | {row['roc_auc']:.4f} | {row['average_precision']:.4f} |")
costs = sorted(glob.glob(f"{out}/cost-*.json"))
if costs:
    print()
    print("| model | seconds for 10,000 QQP pairs (20,000 texts), no cache |")
    print("|---|---|")
    for path in costs:
        r = json.load(open(path))
        print(f"| {r['model']} | {r['seconds']:.1f} |")
PY
