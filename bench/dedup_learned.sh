#!/usr/bin/env bash
# `ckeep dedup` with and without a learned pair model, on labelled duplicate pairs it was not
# fitted on. The model is fitted (`pairs --learn --save-model`) on the first half of a dev file;
# every question of the second half becomes a document of one store, and dedup runs over it at
# several chunk-pair thresholds and with `--pair-model`. Judged on the second half's labelled
# pairs that dedup reports (precision) and on how many of its duplicates it finds (recall);
# pairs of questions that were never labelled are counted but cannot be judged. A second model
# is fitted with two further models' cosines as features (`--model A --model B --model C`),
# which dedup loads by name beside the store's own.
# Usage: bench/dedup_learned.sh [qqp|lcqmc]...   (default: both; lcqmc with multilingual-e5-small)
set -euo pipefail
cd "$(dirname "$0")/.."
DATA="${CKEEP_DATA:-$(cd .. && pwd)/shared/data}"
cargo build --release --quiet -p ckeep
ck="$PWD/target/release/ckeep"
sets=("$@")
[ ${#sets[@]} -gt 0 ] || sets=(qqp lcqmc)
for set in "${sets[@]}"; do
  case "$set" in
    qqp) file="$DATA/qqp/dev.tsv" model=all-MiniLM-L6-v2 half=5000
      further=(--model multilingual-e5-small --model potion-base-8M) ;;
    lcqmc) file="$DATA/zh/pairs/lcqmc/dev.tsv" model=multilingual-e5-small half=4401
      further=(--model all-MiniLM-L6-v2 --model potion-base-8M) ;;
    *) echo "unknown set $set (qqp or lcqmc)" >&2; exit 2 ;;
  esac
  $ck --quiet model pull "$model" multilingual-e5-small all-MiniLM-L6-v2 potion-base-8M
  work=$(mktemp -d)
  head -n "$half" "$file" > "$work/fit.tsv"
  tail -n +"$((half + 1))" "$file" | head -n "$half" > "$work/judge.tsv"
  python3 - "$work" <<'EOF'
import json, sys
work = sys.argv[1]
labels = {}
with open(f"{work}/docs.jsonl", "w") as out:
    for n, line in enumerate(open(f"{work}/judge.tsv", "rb")):
        cols = line.decode("utf-8", "replace").rstrip("\n").split("\t")
        if len(cols) < 3 or not cols[1].strip() or not cols[2].strip():
            continue
        for side, text in (("a", cols[1]), ("b", cols[2])):
            out.write(json.dumps({"id": f"{n}{side}", "text": text}, ensure_ascii=False) + "\n")
        labels[str(n)] = cols[0] == "1"
json.dump(labels, open(f"{work}/labels.json", "w"))
EOF
  $ck --quiet pairs "$work/fit.tsv" --model "$model" --learn --save-model "$work/model.json" > /dev/null
  $ck --quiet pairs "$work/fit.tsv" --model "$model" "${further[@]}" --learn \
    --save-model "$work/model3.json" > /dev/null
  $ck --quiet --store "$work/store" add "$work/docs.jsonl" --model "$model"
  for t in 0.9 0.8 0.75 0.7; do
    $ck --quiet --json --store "$work/store" dedup --threshold "$t" > "$work/dedup-$t.json"
  done
  $ck --quiet --json --store "$work/store" dedup --pair-model "$work/model.json" > "$work/dedup-learned.json"
  $ck --quiet --json --store "$work/store" dedup --pair-model "$work/model3.json" > "$work/dedup-learned3.json"
  echo "== $set: model fitted on $half pairs, judged on the next $half ($model)"
  python3 - "$work" <<'EOF'
import json, sys
work = sys.argv[1]
labels = json.load(open(f"{work}/labels.json"))
duplicates = sum(labels.values())
threshold = json.load(open(f"{work}/model.json"))["threshold"]
model3 = json.load(open(f"{work}/model3.json"))
threshold3, models3 = model3["threshold"], " + ".join([model3["model"]] + model3["further_models"])
print(f"{len(labels)} labelled pairs, {duplicates} duplicates")
print("| dedup | pairs reported | labelled among them | precision | recall | F1 | seconds |")
print("|---|---|---|---|---|---|---|")
for name, label in [("0.9", "chunk-pair ≥ 0.9 (default)"), ("0.8", "chunk-pair ≥ 0.8"),
                    ("0.75", "chunk-pair ≥ 0.75"), ("0.7", "chunk-pair ≥ 0.7"),
                    ("learned", f"--pair-model (probability ≥ {threshold:.3f})"),
                    ("learned3", f"--pair-model of {models3} (probability ≥ {threshold3:.3f})")]:
    report = json.load(open(f"{work}/dedup-{name}.json"))
    pairs = [p for c in report["clusters"] for p in c["pairs"]]
    judged = [labels[p["a"][:-1]] for p in pairs
              if p["a"][:-1] == p["b"][:-1] and p["a"][:-1] in labels]
    p = sum(judged) / max(1, len(judged))
    r = sum(judged) / max(1, duplicates)
    f1 = 2 * p * r / (p + r) if p + r else 0.0
    print(f"| {label} | {len(pairs)} | {len(judged)} | {p:.3f} | {r:.3f} | {f1:.3f} | {report['seconds']:.2f} |")
EOF
  rm -rf "$work"
done
