#!/usr/bin/env bash
# Evaluation cost: scoring 10,000 queries x 100 results, `ckeep eval metrics` beside
# pytrec_eval (trec_eval's C code behind Python) on the same files, in one run.
# Both sides read the TREC files and compute the same metrics (nDCG@10, MRR, MAP, recall@100,
# P@10); best of 5 runs each. Sets up its own venv in bench/.venv on first use.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=bench/.venv
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet pytrec-eval-terrier==0.5.11
fi
cargo build --release --quiet -p ckeep
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
"$venv/bin/python" - "$work" <<'PY'
import random, sys
rng = random.Random(7)
with open(f"{sys.argv[1]}/qrels", "w") as q, open(f"{sys.argv[1]}/run", "w") as r:
    for i in range(10_000):
        for d in rng.sample(range(5000), 8):
            q.write(f"q{i} 0 d{d} {rng.choice([0, 1, 1, 2])}\n")
        for rank, d in enumerate(rng.sample(range(5000), 100)):
            r.write(f"q{i} Q0 d{d} {rank + 1} {100 - rank + rng.random():.6f} bench\n")
PY
best() { # best wall time of 5 runs of a command, in seconds
  local b=999
  for _ in 1 2 3 4 5; do
    local s=$(date +%s.%N); "$@" >/dev/null; local e=$(date +%s.%N)
    b=$(echo "t=$e-$s; if (t<$b) t else $b" | bc -l)
  done
  echo "$b"
}
ck=$(best target/release/ckeep eval metrics --qrels "$work/qrels" --run "$work/run" --metrics ndcg@10,mrr,map,recall@100,p@10)
py=$(best "$venv/bin/python" -c "
import pytrec_eval, sys
with open('$work/qrels') as f: qrels = pytrec_eval.parse_qrel(f)
with open('$work/run') as f: run = pytrec_eval.parse_run(f)
ev = pytrec_eval.RelevanceEvaluator(qrels, {'ndcg_cut.10', 'recip_rank', 'map', 'recall.100', 'P.10'})
res = ev.evaluate(run)
")
printf "10,000 queries x 100 results, 5 metrics, files in and means out, best of 5\n"
printf "%-28s %8.3f s  %10.0f queries/s\n" "ckeep eval metrics" "$ck" "$(echo "10000/$ck" | bc -l)"
printf "%-28s %8.3f s  %10.0f queries/s\n" "pytrec_eval (parse+eval)" "$py" "$(echo "10000/$py" | bc -l)"
printf "ratio pytrec_eval / ckeep: %.2fx\n" "$(echo "$py/$ck" | bc -l)"
