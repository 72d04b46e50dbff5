#!/usr/bin/env bash
# Does a synthetic test set rank strategies as human judgments do? For every labelled set in
# ../shared/data (SciFact, SQuAD long documents, fastbook, CMRC 2018, DRCD), one grid of
# strategies is run three times with `ckeep eval run`: on the human queries and judgments, and on
# the sets `ckeep eval synth` makes from the same corpus with each LLM-free generator (ict,
# title; scored with their held-out text masked). bench/synth_validate.py then reports Kendall's
# tau-b between the human and the synthetic ranking, and the human score of the strategy each
# synthetic set recommends beside the best and the default.
#
# Nothing here is tuned on the human judgments: the grid, the generators' settings (defaults)
# and the seed (42) were fixed before the first run.
#   Documents (nDCG@10, level=doc): SciFact test (titles indexed), SQuAD v1.1 dev long documents,
#   CMRC 2018 dev, DRCD dev. Passages (contain@5, level=chunk): fastbook, all chapters.
# Long benchmark: about an hour on 2 cores. Results in bench/results/synth/.
# Usage: bench/synth_validate.sh [scifact|squad|fastbook|cmrc|drcd]...   (default: all)
# BENCH_SYNTH_GENERATORS picks the generators (default "ict title"); the llm generator with the
# local model, on 200 passages of two sets (several hours on 2 cores):
#   BENCH_SYNTH_GENERATORS=llm BENCH_SYNTH_COUNT=200 bench/synth_validate.sh scifact cmrc
# Answers are cached (the generation cache), so an interrupted run resumes where it stopped.
# BENCH_SYNTH_REUSE_HUMAN=1 keeps an existing human run of the same grid instead of redoing it.
set -euo pipefail
cd "$(dirname "$0")/.."
DATA="${CKEEP_DATA:-$(cd .. && pwd)/shared/data}"
# CKEEP_BIN runs another build, e.g. one with RUSTFLAGS="-C target-cpu=native", which runs
# the local language model three times faster.
if [ -n "${CKEEP_BIN:-}" ]; then
  ck=$CKEEP_BIN
else
  cargo build --release --quiet -p ckeep
  ck=target/release/ckeep
fi
OUT=bench/results/synth
mkdir -p "$OUT"
COUNT="${BENCH_SYNTH_COUNT:-300}"
read -r -a GENERATORS <<< "${BENCH_SYNTH_GENERATORS:-ict title}"
export BENCH_SYNTH_GENERATORS="${GENERATORS[*]}"

# Document-level grid: two chunkers, lexical, dense and four fusions, two aggregations.
DOC_GRID=(
  mode=bm25,level=doc
  mode=dense,level=doc
  mode=hybrid,level=doc
  mode=hybrid:linear=0.3,level=doc
  mode=hybrid:linear=0.5,level=doc
  mode=hybrid:linear=0.7,level=doc
  mode=bm25,level=doc,agg=mean:3
  mode=dense,level=doc,agg=mean:3
  chunker=sentences,mode=bm25,level=doc
  chunker=sentences,mode=dense,level=doc
  chunker=sentences,mode=hybrid,level=doc
  chunker=sentences,mode=hybrid:linear=0.5,level=doc
)
# Passage-level grid (context a reader gets): chunk sizes, modes and a sentence window.
CHUNK_GRID=(
  mode=bm25
  mode=hybrid
  chunker=paragraphs
  chunker=paragraphs:3
  chunker=paragraphs,mode=dense
  chunker=paragraphs:3,mode=dense
  chunker=paragraphs,mode=hybrid
  chunker=paragraphs:3,mode=hybrid
  chunker=paragraphs:3,mode=hybrid:linear=0.5
  chunker=paragraphs,mode=bm25,expand=window:2
  chunker=paragraphs,mode=hybrid,expand=window:2
)

# run_set NAME MODEL METRIC GRID SOURCE HUMAN EXTRA: SOURCE, HUMAN and EXTRA name arrays (where
# `eval synth` reads the corpus, the human set's flags for `eval run`, flags both runs share).
run_set() {
  local name=$1 model=$2 metric=$3
  local -n grid=$4 source=$5 human=$6 extra=$7
  local flags=()
  for s in "${grid[@]}"; do flags+=(--strategy "$s"); done
  if [ "${BENCH_SYNTH_REUSE_HUMAN:-0}" = 1 ] && [ -s "$OUT/$name-human.json" ]; then
    echo "== $name: human judgments (kept from an earlier run)" >&2
  else
    echo "== $name: human judgments" >&2
    $ck -q eval run "${human[@]}" "${extra[@]}" --model "$model" --metrics "$metric" "${flags[@]}" \
      --count-tokens none --json > "$OUT/$name-human.json"
  fi
  for gen in "${GENERATORS[@]}"; do
    echo "== $name: $gen" >&2
    local started=$SECONDS
    if ! $ck -q eval synth "${source[@]}" --out "$OUT/$name-$gen" --count "$COUNT" \
      --generator "$gen" --json > "$OUT/$name-$gen-synth.json"; then
      echo "   no $gen set for $name" >&2
      continue
    fi
    echo "   $gen set made in $((SECONDS - started)) s" >&2
    $ck -q eval run --dataset "$OUT/$name-$gen" "${extra[@]}" --model "$model" --metrics "$metric" \
      "${flags[@]}" --count-tokens none --json > "$OUT/$name-$gen.json"
  done
}

sets=("$@")
[ ${#sets[@]} -gt 0 ] || sets=(scifact squad fastbook cmrc drcd)
NONE=()
for set in "${sets[@]}"; do
  case $set in
    scifact)
      SRC=(--dataset "$DATA/beir_scifact"); HUMAN=("${SRC[@]}"); EXTRA=(--fields title,text)
      run_set scifact all-MiniLM-L6-v2 ndcg@10 DOC_GRID SRC HUMAN EXTRA ;;
    squad)
      SRC=(--docs "$DATA/squad_dev/longdoc-v1.1.docs.jsonl")
      HUMAN=(--docs "$DATA/squad_dev/longdoc-v1.1.docs.jsonl"
        --queries "$DATA/squad_dev/longdoc-v1.1.queries.jsonl")
      run_set squad all-MiniLM-L6-v2 ndcg@10 DOC_GRID SRC HUMAN NONE ;;
    fastbook)
      SRC=(--dataset "$DATA/fastbook_benchmark" --split all); HUMAN=("${SRC[@]}")
      run_set fastbook all-MiniLM-L6-v2 contain@5 CHUNK_GRID SRC HUMAN NONE ;;
    cmrc|drcd)
      dir="$DATA/zh/retrieval/$([ "$set" = cmrc ] && echo cmrc2018 || echo drcd)/dev"
      SRC=(--dataset "$dir"); HUMAN=("${SRC[@]}")
      run_set "$set" multilingual-e5-small ndcg@10 DOC_GRID SRC HUMAN NONE ;;
    *) echo "unknown set $set" >&2; exit 2 ;;
  esac
done
python3 bench/synth_validate.py "$OUT" "${sets[@]}" | tee "$OUT/table.md"
