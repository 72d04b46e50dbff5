#!/usr/bin/env bash
# Chinese retrieval with `ckeep eval run` on the passage-QA sets in ../shared/data/zh/retrieval
# (CMRC 2018 dev, DRCD dev in Traditional and in Simplified characters), beside a Python
# reference on the same paragraphs, questions and metrics (bench/zh_reference.py: bm25s over
# jieba tokens, sentence-transformers on the same multilingual-e5-small weights).
#
# Every article is stored whole and cut at its paragraphs (`chunker=paragraphs`, one chunk per
# passage). Documents: nDCG@10 and MRR@10 of the question's article, ranked by its best
# paragraph (level=doc, agg=max). Passages: contain@k, a gold answer in one of the top k
# paragraphs (level=chunk). Each strategy after the first gets a paired randomisation test
# against BM25 with the cjk analyzer. Reports go to bench/results/zh-<set>/.
#
# Sets up bench/.venv-torch (torch, sentence-transformers, bm25s, jieba) on first use.
# Usage: bench/zh_eval.sh [cmrc2018|drcd|drcd_hans]...   (default: all three;
#        BENCH_QUERIES=N runs the first N questions only; BENCH_NO_REFERENCE=1 skips Python)
set -euo pipefail
cd "$(dirname "$0")/.."
DATA="${CKEEP_DATA:-$(cd .. && pwd)/shared/data}/zh/retrieval"
export BENCH_THREADS="${BENCH_THREADS:-2}"
export RAYON_NUM_THREADS="$BENCH_THREADS"
cargo build --release --quiet -p ckeep
ck=target/release/ckeep
$ck --quiet model pull multilingual-e5-small
MODEL=multilingual-e5-small
VENV=bench/.venv-torch
if [ -z "${BENCH_NO_REFERENCE:-}" ]; then
  if ! "$VENV/bin/python" -c "import sentence_transformers, bm25s, jieba" 2>/dev/null; then
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install --quiet sentence-transformers bm25s jieba
  fi
  HF=bench/results/multilingual-e5-small-f32
  "$VENV/bin/python" bench/e5_hf.py "${CKEEP_MODELS:-$HOME/.cache/ckeep/models}/$MODEL" "$HF"
fi
mkdir -p bench/results
sets=("$@")
[ ${#sets[@]} -gt 0 ] || sets=(cmrc2018 drcd drcd_hans)
for set in "${sets[@]}"; do
  split="$DATA/$set/dev"
  queries="$split/queries.jsonl"
  if [ -n "${BENCH_QUERIES:-}" ]; then
    head -n "$BENCH_QUERIES" "$queries" > "bench/results/zh-$set-queries.jsonl"
    queries="bench/results/zh-$set-queries.jsonl"
  fi
  args=()
  for level in doc chunk; do
    for s in analyzer=cjk,mode=bm25 analyzer=jieba,mode=bm25 analyzer=standard,mode=bm25 \
      analyzer=jieba,model=$MODEL,mode=dense analyzer=jieba,model=$MODEL,mode=hybrid \
      analyzer=jieba,model=$MODEL,mode=hybrid:linear=0.5; do
      args+=(--strategy "chunker=paragraphs,$s,level=$level")
    done
  done
  echo "== $set: ckeep eval run" >&2
  mkdir -p "bench/results/zh-$set"
  $ck eval run --docs "$split/docs.jsonl" --queries "$queries" \
    --metrics ndcg@10,mrr@10,contain@1,contain@3,contain@5 \
    --report "bench/results/zh-$set" "${args[@]}" | tee "bench/results/zh-$set/ckeep.txt"
  if [ -z "${BENCH_NO_REFERENCE:-}" ]; then
    echo "== $set: Python reference" >&2
    ref_split="$split"
    if [ -n "${BENCH_QUERIES:-}" ]; then
      ref_split="bench/results/zh-$set-split"
      mkdir -p "$ref_split"
      cp "$split/docs.jsonl" "$ref_split/"
      cp "$queries" "$ref_split/queries.jsonl"
    fi
    "$VENV/bin/python" bench/zh_reference.py "$ref_split" "$HF" bm25 dense \
      | tee "bench/results/zh-$set/reference.jsonl"
  fi
done
