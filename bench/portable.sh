#!/usr/bin/env bash
# Portable builds against the old AVX2/FMA/F16C baseline, paired on the same inputs in one run:
# two release builds (target/bench-portable: no CPU flags, as shipped; target/bench-avx2:
# RUSTFLAGS=-C target-feature=+avx2,+fma,+f16c, the old default), then, alternating between them
# round by round:
#   - embedding: `ckeep embed --no-cache` of 1,000 STS-B sentences and 200 SciFact abstracts
#     (all-MiniLM-L6-v2), best of 3 rounds each;
#   - search: crates/engine/benches/latency (query embedding, BM25, dense HNSW and exact scan
#     with its GB/s), two rounds alternating between the builds;
#   - the LLM summarizer: one SQuAD article summarised by qwen2.5-coder-0.5b-instruct with no
#     generation cache, generated tokens/s as `ckeep add` reports it;
#   - the portable release binary on an emulated CPU without AVX2 (QEMU's Nehalem model): the
#     real-tier test crates/cli/tests/integration/portable.rs pointed at it.
# Output: bench/results/portable/{summary.md,*.log}.
set -euo pipefail
cd "$(dirname "$0")/.."
DATA="${CKEEP_DATA:-$(cd .. && pwd)/shared/data}"
out=bench/results/portable
mkdir -p "$out"
declare -A flags=([portable]="" [avx2]="-C target-feature=+avx2,+fma,+f16c")
for b in portable avx2; do
  RUSTFLAGS="${flags[$b]}" CARGO_TARGET_DIR="target/bench-$b" \
    cargo build --release --quiet -p ckeep
  RUSTFLAGS="${flags[$b]}" CARGO_TARGET_DIR="target/bench-$b" \
    cargo bench --quiet -p ckeep-engine --bench latency --no-run 2> "$out/build-$b.log"
done
ck() { "target/bench-$1/release/ckeep" "${@:2}"; }
ck portable --quiet model pull all-MiniLM-L6-v2 qwen2.5-coder-0.5b-instruct
sentences="$out/sentences.txt"
passages="$out/passages.txt"
cut -f6 "$DATA/stsb/sts-test.csv" | sed -n 1,1000p > "$sentences"  # sed reads all: no SIGPIPE under pipefail
python3 -c "import json,sys; [print(json.loads(l)['text'].replace('\n',' ')) for _,l in zip(range(200),open(sys.argv[1]))]" \
  "$DATA/beir_scifact/corpus.jsonl" > "$passages"
secs() { local t0 t1; t0=$(date +%s.%N); "$@" > /dev/null; t1=$(date +%s.%N); echo "$t1 - $t0" | bc; }
declare -A best
for round in 1 2 3; do
  for b in portable avx2; do
    for input in sentences passages; do
      s=$(secs ck "$b" --quiet embed --no-cache --model all-MiniLM-L6-v2 - < "$out/$input.txt")
      echo "round $round $b $input $s s" | tee -a "$out/embed.log"
      key="$b-$input"
      if [ -z "${best[$key]:-}" ] || (( $(echo "$s < ${best[$key]}" | bc) )); then best[$key]=$s; fi
    done
  done
done
for round in 1 2; do
  for b in portable avx2; do
    bench=$(ls -t target/bench-$b/release/deps/latency-* | grep -v '\.d$' | head -1)
    "$bench" > "$out/latency-$b-$round.log" 2>&1
  done
done
for b in portable avx2; do
  head -n 1 "$DATA/squad_dev/longdoc-v1.1.docs.jsonl" > "$out/article.jsonl"
  rm -rf "$out/llm-store-$b"
  CKEEP_CACHE_DIR="$out/llm-cache-$b" ck "$b" --store "$out/llm-store-$b" add "$out/article.jsonl" \
    --summarizer llm:qwen2.5-coder-0.5b-instruct > "$out/llm-$b.log" 2>&1
  rm -rf "$out/llm-cache-$b" "$out/llm-store-$b"
done
CKEEP_PORTABLE_BIN="$PWD/target/bench-portable/release/ckeep" \
  cargo test -p ckeep --test integration portable -- --include-ignored > "$out/nehalem.log" 2>&1 || true
{
  echo "| measure | portable | avx2 baseline | portable ÷ avx2 |"
  echo "|---|---|---|---|"
  for input in sentences passages; do
    p=${best[portable-$input]} a=${best[avx2-$input]}
    echo "| embed 1,000 sentences / 200 passages: $input, best of 3 (s) | $p | $a | $(echo "scale=3; $a / $p" | bc) speed |"
  done
  for b in portable avx2; do
    for round in 1 2; do
      echo "latency bench ($b, round $round):"
      grep -E "^\| |exact scan" "$out/latency-$b-$round.log" | sed 's/^/    /'
    done
    echo "LLM ($b): $(grep -o '[0-9]* tokens generated ([0-9.]* tokens/s)' "$out/llm-$b.log")"
  done
  echo "portable release binary on QEMU's Nehalem CPU (no AVX2): $(grep -o 'test result: [a-zA-Z]*' "$out/nehalem.log")"
} | tee "$out/summary.md"
