#!/usr/bin/env bash
# Indexing cost of each representation and summarizer, side by side in one run on the same
# documents: SQuAD v1.1 dev as 48 long articles (../shared/data/squad_dev), paragraph chunks,
# all-MiniLM-L6-v2, no embedding cache. Prints seconds, chunks/s and bytes per chunk for each
# representation relative to plain, and the LLM summarizer's throughput in generated tokens/s.
#
# Usage: bench/represent_cost.sh   (CKEEP_DATA=DIR for the data; BENCH_LLM_DOCS=N summarises
#        the first N articles with the LLM, default 8; BENCH_CHUNKER=sentences to change chunks)
set -euo pipefail
cd "$(dirname "$0")/.."
DATA="${CKEEP_DATA:-$(cd .. && pwd)/shared/data}"
CHUNKER="${BENCH_CHUNKER:-paragraphs}"
LLM_DOCS="${BENCH_LLM_DOCS:-8}"
cargo build --release --quiet -p ckeep
ck=target/release/ckeep
$ck --quiet model pull all-MiniLM-L6-v2 qwen2.5-coder-0.5b-instruct
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
docs="$DATA/squad_dev/longdoc-v1.1.docs.jsonl"
head -n "$LLM_DOCS" "$docs" > "$work/llm-docs.jsonl"
# One stage per run, each on a copy of the plain store, so every figure is that stage alone.
$ck --quiet --no-cache --store "$work/plain" add "$docs" --chunker "$CHUNKER" --model all-MiniLM-L6-v2 --json > "$work/plain.json"
stage() { # name, args…
  local name=$1; shift
  cp -r "$work/plain" "$work/$name"
  $ck --quiet --no-cache --store "$work/$name" add "$@" --json > "$work/$name.json"
  $ck --quiet --store "$work/$name" stats --json > "$work/$name.stats.json"
}
stage late --repr late
stage contextual --repr contextual:title,headings
stage lead --summarizer lead:128
stage extractive --summarizer extractive:128
$ck --quiet --no-cache --store "$work/llm" add "$work/llm-docs.jsonl" --chunker "$CHUNKER" --model all-MiniLM-L6-v2 --summarizer llm:qwen2.5-coder-0.5b-instruct --json > "$work/llm.json"
$ck --quiet --store "$work/plain" stats --json > "$work/plain.stats.json"
python3 - "$work" <<'PY'
import json, sys
w = sys.argv[1]
def load(n):
    j = json.load(open(f"{w}/{n}"))
    return j["stats"] if n.endswith(".stats.json") else j
plain, pstats = load("plain.json"), load("plain.stats.json")
chunks = pstats["leaf_chunks"]
def repr_bytes(stats, name):
    return next((r["bytes"] for r in stats["representations"] if r["name"] == name), 0)
print(f"SQuAD v1.1 dev: {pstats['documents']} articles, {chunks:,} chunks ({plain['chunker']}), all-MiniLM-L6-v2, no cache\n")
print("| representation | seconds | chunks/s | vs plain (time) | bytes/chunk stored |")
print("|---|---|---|---|---|")
base = plain["seconds"]
print(f"| plain (chunk, lexical, vectors) | {base:.1f} | {chunks/base:,.0f} | 1.00× | {repr_bytes(pstats, 'plain')/chunks:,.0f} |")
rows = [("late", "late", "late"), ("contextual", "contextual:title,headings", "contextual:title,headings"),
        ("lead", "summary lead:128", "summary:lead:128"), ("extractive", "summary extractive:128", "summary:extractive:128")]
for run, label, name in rows:
    r, st = load(f"{run}.json"), load(f"{run}.stats.json")
    secs = sum(s["seconds"] for s in r.get("derived", []))
    print(f"| {label} | {secs:.1f} | {chunks/max(secs,1e-9):,.0f} | {secs/base:.2f}× | {repr_bytes(st, name)/chunks:,.1f} |")
print("| summary-avg:A, window-avg:W | derived at the first query | | | 0 |")
llm = load("llm.json")
st = next(s for s in llm["derived"] if s["stage"].startswith("summaries llm"))
print(f"\nLLM summaries (qwen2.5-coder-0.5b-instruct Q4_K_M, llama.cpp, CPU): {st['documents']} documents in {st['seconds']:.1f} s, "
      f"{st['seconds']/max(st['documents'],1):.1f} s per document, {st['generated_tokens']} tokens generated, "
      f"{st['generated_tokens']/max(st['seconds'],1e-9):.1f} generated tokens/s (prompt prefill included)")
PY
