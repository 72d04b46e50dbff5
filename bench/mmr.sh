#!/usr/bin/env bash
# Does diversify=mmr cut near duplicates from the top 10 without losing answers?
#
# bench/mmr_dups.py injects perturbed near copies into BEIR SciFact (every judged-relevant
# abstract twice, one in ten of the others once) and into CMRC 2018 dev (every article twice),
# with families.tsv naming each copy's original. `ckeep eval run` then reports nDCG@10 (copies
# of an answer count as answers), alpha-nDCG@10 (Clarke et al. 2008, alpha 0.5: a second copy
# of an answer earns half, a third a quarter), alpha-nDCG:1@10 (alpha 1: each family counted
# once, a copy earns nothing) and dup@10 (the share of the top 10 that repeats a family above it).
#
# λ is chosen on SciFact's train queries (best alpha-nDCG:1@10 of 0.3, 0.5, 0.7, 0.9), once for
# BM25 and once for hybrid RRF with all-MiniLM-L6-v2, and only then run on the test queries, on
# CMRC (BM25 with jieba; CMRC has no train split, so it takes SciFact's λ) and on SciFact
# without copies (what MMR costs where there is nothing to remove). Nothing else is tuned.
# Long benchmark: about 20 minutes on 2 cores. Results in bench/results/mmr/.
set -euo pipefail
cd "$(dirname "$0")/.."
DATA="${CKEEP_DATA:-$(cd .. && pwd)/shared/data}"
if [ -n "${CKEEP_BIN:-}" ]; then
  ck=$CKEEP_BIN
else
  cargo build --release --quiet -p ckeep
  ck=target/release/ckeep
fi
out=bench/results/mmr
sets=target/bench
mkdir -p "$out" "$sets"
python3 bench/mmr_dups.py "$DATA/beir_scifact" "$sets/scifact-dups"
python3 bench/mmr_dups.py "$DATA/zh/retrieval/cmrc2018/dev" "$sets/cmrc-dups"
metrics=ndcg@10,alpha-ndcg@10,alpha-ndcg:1@10,dup@10
bm25="mode=bm25,level=doc"
hybrid="mode=hybrid,level=doc"

run() { # report name, dataset, split, extra flags, strategies…
  local name=$1 dataset=$2 split=$3 extra=$4; shift 4
  local args=()
  for s in "$@"; do args+=(--strategy "$s"); done
  echo "== $name" >&2
  # shellcheck disable=SC2086
  "$ck" eval run --dataset "$dataset" --split "$split" --metrics "$metrics" $extra \
    --report "$out/$name" "${args[@]}" > /dev/null
}

grid() { # base strategy → the base and MMR at each λ
  echo "$1"
  for l in 0.3 0.5 0.7 0.9; do echo "$1,diversify=mmr:$l"; done
}

best() { # report name → the strategy with the best alpha-nDCG@10 counting a family once
  python3 - "$out/$1/results.json" <<'EOF'
import json, sys
c = json.load(open(sys.argv[1]))
m = c["metrics"].index("alpha-ndcg:1@10")
print(max(c["strategies"], key=lambda s: s["evaluation"]["means"][m])["strategy"])
EOF
}

mapfile -t grid_bm25 < <(grid "$bm25")
mapfile -t grid_hybrid < <(grid "$hybrid")
run train-bm25 "$sets/scifact-dups" train "" "${grid_bm25[@]}"
run train-hybrid "$sets/scifact-dups" train "--model all-MiniLM-L6-v2" "${grid_hybrid[@]}"
# The λ each train run chose (none when no λ beat the plain ranking).
mmr_of() { best "$1" | grep -o ',diversify=mmr:[0-9.]*' || true; }
pick_bm25=$(mmr_of train-bm25)
pick_hybrid=$(mmr_of train-hybrid)
echo "chosen on SciFact train: BM25 ${pick_bm25:-none}, hybrid ${pick_hybrid:-none}" | tee "$out/chosen.txt"
run test-bm25 "$sets/scifact-dups" test "" "$bm25" "$bm25$pick_bm25"
run test-hybrid "$sets/scifact-dups" test "--model all-MiniLM-L6-v2" "$hybrid" "$hybrid$pick_hybrid"
run clean-hybrid "$DATA/beir_scifact" test "--model all-MiniLM-L6-v2" "$hybrid" "$hybrid$pick_hybrid"
run cmrc-bm25 "$sets/cmrc-dups" test "" "$bm25" "$bm25$pick_bm25"
for r in train-bm25 train-hybrid test-bm25 test-hybrid clean-hybrid cmrc-bm25; do
  echo "### $r"
  cat "$out/$r/table.md"
done
# The same runs on the test queries that have two or more relevant documents, where a copy can
# push a second answer out of the top 10 (read from the per-query values; nothing is re-run).
python3 - "$out" "$sets/scifact-dups/qrels/test.tsv" "$sets/scifact-dups/families.tsv" <<'EOF'
import json, sys
from collections import defaultdict
out, qrels, families = sys.argv[1:]
family = dict(l.split("\t") for l in open(families).read().splitlines() if not l.startswith("#"))
answers = defaultdict(set)
for line in open(qrels).read().splitlines()[1:]:
    q, d, g = line.split("\t")
    if int(g) > 0:
        answers[q].add(family.get(d, d))
for run in ("test-bm25", "test-hybrid"):
    c = json.load(open(f"{out}/{run}/results.json"))
    queries = c["strategies"][0]["evaluation"]["queries"]
    several = [i for i, q in enumerate(queries) if len(answers[q]) >= 2]
    print(f"{run}, the {len(several)} queries with two or more answers:")
    for s in c["strategies"]:
        values = s["evaluation"]["per_query"]
        means = [sum(values[i][m] for i in several) / len(several) for m in range(len(c["metrics"]))]
        print("  " + s["strategy"] + ": " + ", ".join(f"{n} {v:.4f}" for n, v in zip(c["metrics"], means)))
EOF
