#!/usr/bin/env bash
# HNSW recall@10 and queries/s against exact search, ckeep's graph and FAISS's side by side on the
# same vectors, queries and ground truth, same parameters (M 16, efConstruction 200):
# - uniformly random unit vectors, 384 dimensions (BENCH_N, default 1,000,000);
# - real vectors: SciFact abstracts and SQuAD long documents cut into sentences, embedded with
#   all-MiniLM-L6-v2 (the last 200 held out as queries);
# - with BENCH_MILLION=1, the million potion-base-8M vectors bench/million.sh prepares.
# Each graph is also walked with int8 codes of its rows (FAISS: IndexHNSWSQ), 2 x 10 rescored.
#
# Sets up its own venv (bench/.venv-ann: faiss-cpu, numpy) on first use.
# Usage: bench/hnsw.sh            (BENCH_N=100000 for a quicker run; CKEEP_DATA for the data)
set -euo pipefail
cd "$(dirname "$0")/.."
DATA="${CKEEP_DATA:-../shared/data}"
OUT="$PWD/target/hnsw-bench"
mkdir -p "$OUT"
source bench/faiss_env.sh
cargo build --release --quiet -p ckeep
target/release/ckeep --quiet model pull all-MiniLM-L6-v2
python3 - "$DATA" > "$OUT/sentences.txt" <<'PY'
import json, re, sys
data = sys.argv[1]
texts = [json.loads(l)["text"] for l in open(f"{data}/beir_scifact/corpus.jsonl")]
texts += [json.loads(l)["text"] for l in open(f"{data}/squad_dev/longdoc-v1.1.docs.jsonl")]
for text in texts:
    for s in re.split(r"(?<=[.!?])\s+", text):
        s = " ".join(s.split())
        if len(s) > 20:
            print(s)
PY
echo "$(wc -l < "$OUT/sentences.txt") sentences" >&2
target/release/ckeep --quiet embed --model all-MiniLM-L6-v2 --json - < "$OUT/sentences.txt" > "$OUT/real.json"
BENCH_VECTORS="$OUT/real.json" BENCH_DUMP="$OUT" cargo bench --quiet -p ckeep-index --bench hnsw
for name in $( [ "${BENCH_N:-1}" != 0 ] && echo random ) real; do
  "$VENV/bin/python" bench/hnsw_faiss.py "$OUT" "$name" 384
done
# The million potion-base-8M vectors of bench/million.sh, when it has made them.
if [ "${BENCH_MILLION:-0}" = 1 ]; then
  MILLION="$PWD/target/quantize-bench"
  [ -f "$MILLION/million.base.f32" ] || { echo "run bench/million.sh first" >&2; exit 2; }
  BENCH_RAW=million BENCH_RAW_DIR="$MILLION" BENCH_DIM=256 BENCH_DUMP="$OUT" \
    cargo bench --quiet -p ckeep-index --bench hnsw
  "$VENV/bin/python" bench/hnsw_faiss.py "$OUT" million 256
fi
