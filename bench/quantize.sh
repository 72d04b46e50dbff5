#!/usr/bin/env bash
# Quantised vectors against exact float32 search, ckeep's codes and FAISS's side by side on the
# same vectors, queries and exact top-10: recall@10 after rescoring the best oversample x 10
# candidates, queries/s on 1 thread and on all, bytes per vector; int8 and binary codes.
# Real vectors: sentences of SQuAD's long documents (the set the default oversampling was chosen
# on) and of SciFact's abstracts (the set we report), embedded with all-MiniLM-L6-v2; 200
# sentences of each held out of the collection as queries.
#
# Sets up its own venv (bench/.venv-ann: faiss-cpu, numpy) on first use.
# Usage: bench/quantize.sh      (CKEEP_DATA for the data)
set -euo pipefail
cd "$(dirname "$0")/.."
DATA="${CKEEP_DATA:-../shared/data}"
OUT="$PWD/target/quantize-bench"
mkdir -p "$OUT"
source bench/faiss_env.sh
cargo build --release --quiet -p ckeep
target/release/ckeep --quiet model pull all-MiniLM-L6-v2
cpu_line >&2
for set in squad scifact; do
  [ -f "$OUT/$set.base.f32" ] && continue
  case $set in
    squad) file="$DATA/squad_dev/longdoc-v1.1.docs.jsonl" ;;
    scifact) file="$DATA/beir_scifact/corpus.jsonl" ;;
  esac
  python3 - "$file" > "$OUT/$set.txt" <<'PY'
import json, re, sys
seen = set()
for line in open(sys.argv[1]):
    for s in re.split(r"(?<=[.!?])\s+", json.loads(line)["text"]):
        s = " ".join(s.split())
        if len(s) > 20 and s not in seen:
            seen.add(s)
            print(s)
PY
  echo "$set: $(wc -l < "$OUT/$set.txt") sentences" >&2
  target/release/ckeep --quiet embed --model all-MiniLM-L6-v2 --json - < "$OUT/$set.txt" > "$OUT/$set.json"
  "$VENV/bin/python" - "$OUT" "$set" <<'PY'
import json, sys
import numpy as np
out, name = sys.argv[1], sys.argv[2]
v = np.asarray(json.load(open(f"{out}/{name}.json"))["vectors"], dtype="<f4")
v /= np.linalg.norm(v, axis=1, keepdims=True)
# A fixed-seed sample of 200 rows held out as queries.
rng = np.random.default_rng(7)
held = np.zeros(len(v), bool)
held[rng.choice(len(v), 200, replace=False)] = True
v[~held].tofile(f"{out}/{name}.base.f32")
v[held].tofile(f"{out}/{name}.queries.f32")
PY
done
BENCH_DIR="$OUT" BENCH_SETS="squad scifact" cargo bench --quiet -p ckeep-index --bench quantize
for set in squad scifact; do
  "$VENV/bin/python" bench/quantize_faiss.py "$OUT" "$set" 384
done
