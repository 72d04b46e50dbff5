#!/usr/bin/env bash
# The representation comparison of the README, with `ckeep eval run` on SQuAD v1.1 dev as 48
# long articles (all 10,570 questions): document ranking (nDCG@1/5/10, MRR, MAP, recall@100 —
# the Gist experiment's columns) for paragraph and sentence chunks, and passage ranking with
# answer containment for paragraph chunks. Reports (table.md, results.json, TREC runs, plots)
# go to bench/results/represent-*/.
#
# LLM summaries (part `llm`) take about half a minute per article on 2 cores the first time;
# they are cached (~/.cache/ckeep/generations.sqlite), so later runs reuse them.
# Usage: bench/represent_eval.sh [paragraphs|sentences|passages|llm|all]...   (default: the first four;
#        BENCH_QUERIES=N runs the first N questions only)
set -euo pipefail
cd "$(dirname "$0")/.."
DATA="${CKEEP_DATA:-$(cd .. && pwd)/shared/data}/squad_dev"
cargo build --release --quiet -p ckeep
mkdir -p bench/results
ck=target/release/ckeep
$ck --quiet model pull all-MiniLM-L6-v2 qwen2.5-coder-0.5b-instruct
LLM=llm:qwen2.5-coder-0.5b-instruct
QUERIES="$DATA/longdoc-v1.1.queries.jsonl"
if [ -n "${BENCH_QUERIES:-}" ]; then
  head -n "$BENCH_QUERIES" "$QUERIES" > "bench/results/queries-$BENCH_QUERIES.jsonl"
  QUERIES="bench/results/queries-$BENCH_QUERIES.jsonl"
fi
doc_strategies() { # chunker
  local c="chunker=$1,mode=dense,level=doc,agg=max"
  echo "$c" "$c,repr=summary-avg:0.25,summarizer=extractive:128" \
    "$c,repr=summary-avg:0.5,summarizer=extractive:128" "$c,repr=summary-avg:0.75,summarizer=extractive:128" \
    "$c,repr=summary,summarizer=lead:128" "$c,repr=summary,summarizer=extractive:128" \
    "$c,repr=contextual:title,headings" "$c,repr=window-avg:1" "$c,repr=late" \
    "$c,repr=plain+summary,summarizer=extractive:128" "$c,repr=late+summary,summarizer=extractive:128"
}
run() { # name, extra args, strategies…
  local name=$1 extra=$2; shift 2
  local args=()
  for s in "$@"; do args+=(--strategy "$s"); done
  mkdir -p "bench/results/represent-$name"
  # shellcheck disable=SC2086
  $ck eval run --docs "$DATA/longdoc-v1.1.docs.jsonl" --queries "$QUERIES" \
    --model all-MiniLM-L6-v2 $extra --report "bench/results/represent-$name" "${args[@]}"
}
for what in "${@:-paragraphs sentences passages llm}"; do
  for w in $what; do
    case $w in
      paragraphs|sentences)
        # shellcheck disable=SC2046
        run "$w" "--metrics ndcg@1,ndcg@5,ndcg@10,mrr,map,recall@100" $(doc_strategies "$w") ;;
      passages)
        c="chunker=paragraphs,mode=dense,level=chunk"
        run passages "--relevance passage --metrics ndcg@1,ndcg@10,mrr,recall@100,contain@1,contain@5" \
          "$c" "$c,repr=summary-avg:0.25,summarizer=extractive:128" "$c,repr=summary-avg:0.5,summarizer=extractive:128" \
          "$c,repr=contextual:title,headings" "$c,repr=window-avg:1" "$c,repr=late" ;;
      all)
        # Paragraph chunks with every representation and all three summarizers in one table.
        c="chunker=paragraphs,mode=dense,level=doc,agg=max"
        # shellcheck disable=SC2046
        run all "--metrics ndcg@1,ndcg@5,ndcg@10,mrr,map,recall@100" $(doc_strategies paragraphs) \
          "$c,repr=summary,summarizer=$LLM" "$c,repr=summary-avg:0.25,summarizer=$LLM" ;;
      llm)
        c="chunker=paragraphs,mode=dense,level=doc,agg=max"
        run llm "--metrics ndcg@1,ndcg@5,ndcg@10,mrr,map,recall@100" "$c" \
          "$c,repr=summary,summarizer=$LLM" "$c,repr=summary-avg:0.25,summarizer=$LLM" \
          "$c,repr=summary-avg:0.5,summarizer=$LLM" "$c,repr=plain+summary,summarizer=$LLM" ;;
      *) echo "unknown part $w (paragraphs, sentences, passages, llm, all)" >&2; exit 2 ;;
    esac
  done
done
