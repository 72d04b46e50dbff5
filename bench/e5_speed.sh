#!/usr/bin/env bash
# multilingual-e5-small throughput, ckeep vs sentence-transformers on PyTorch, in one run on the
# same texts, weights (ckeep's 4-bit image dequantised for PyTorch by bench/e5_hf.py), prompts
# and thread count: 300 DRCD paragraphs (Traditional Chinese passages, `passage: `) and 2,000
# LCQMC questions (short Simplified Chinese, `query: `). ckeep is timed as a whole process
# (`ckeep --no-cache embed`, model loading included), best of three; PyTorch's `encode` alone,
# best of three; then ckeep again with --precision int8. Prints both, the ratios, tokens/s, and
# the vectors' agreement.
# Sets up bench/.venv-torch on first use. BENCH_THREADS=N (default 2).
set -euo pipefail
cd "$(dirname "$0")/.."
DATA="${CKEEP_DATA:-$(cd .. && pwd)/shared/data}/zh"
export BENCH_THREADS="${BENCH_THREADS:-2}"
export RAYON_NUM_THREADS="$BENCH_THREADS"
VENV=bench/.venv-torch
if ! "$VENV/bin/python" -c "import sentence_transformers" 2>/dev/null; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet sentence-transformers bm25s jieba
fi
cargo build --release --quiet -p ckeep
ck=target/release/ckeep
$ck --quiet model pull multilingual-e5-small
HF=bench/results/multilingual-e5-small-f32
"$VENV/bin/python" bench/e5_hf.py "${CKEEP_MODELS:-$HOME/.cache/ckeep/models}/multilingual-e5-small" "$HF" 2>/dev/null
work=bench/results/e5-speed
mkdir -p "$work"
python3 - "$DATA" "$work" <<'PY'
import json, sys
data, work = sys.argv[1], sys.argv[2]
paras = []
for line in open(f"{data}/retrieval/drcd/dev/docs.jsonl", encoding="utf-8"):
    d = json.loads(line)
    paras += [d["text"][p["start"]:p["end"]] for p in d["paragraphs"]]
open(f"{work}/passages.txt", "w", encoding="utf-8").write("\n".join(paras[:300]) + "\n")
qs = [l.split("\t")[1] for l in open(f"{data}/pairs/lcqmc/dev.tsv", encoding="utf-8")][:2000]
open(f"{work}/questions.txt", "w", encoding="utf-8").write("\n".join(qs) + "\n")
PY
declare -A seconds
for precision in f32 int8; do
  for set in passages questions; do
    flag=""; [ "$set" = questions ] && flag="--query"
    out="$work/$set.ckeep.json"; [ "$precision" = int8 ] && out="$work/$set.int8.json"
    best=""
    for _ in 1 2 3; do
      start=$(date +%s.%N)
      $ck --quiet --no-cache --json embed --model multilingual-e5-small --precision $precision $flag - < "$work/$set.txt" > "$out"
      t=$(echo "$(date +%s.%N) - $start" | bc)
      if [ -z "$best" ] || (( $(echo "$t < $best" | bc) )); then best=$t; fi
    done
    seconds[$set.$precision]=$best
  done
done
"$VENV/bin/python" bench/e5_speed.py "$HF" "$work" 2>/dev/null > "$work/pytorch.jsonl"
echo "| input | texts | tokens | PyTorch encode s | ckeep whole process s | ratio | ckeep tokens/s | worst cosine |"
echo "|---|---|---|---|---|---|---|---|"
while read -r line; do
  set=$(echo "$line" | python3 -c 'import json,sys; print(json.load(sys.stdin)["set"])')
  echo "$line" | python3 -c "
import json, sys
r = json.load(sys.stdin); ours = float('${seconds[$set.f32]}')
print(f\"| {r['set']} | {r['texts']:,} | {r['tokens']:,} | {r['seconds']:.2f} | {ours:.2f} | {r['seconds']/ours:.2f}x | {r['tokens']/ours:,.0f} | {r['worst_cosine_to_ckeep']:.6f} |\")"
done < "$work/pytorch.jsonl"
echo
echo "ckeep --precision int8 on the same texts (its vectors against ckeep's f32 ones):"
echo
echo "| input | ckeep int8 s | int8 / PyTorch | int8 / ckeep f32 | worst cosine to f32 |"
echo "|---|---|---|---|---|"
while read -r line; do
  set=$(echo "$line" | python3 -c 'import json,sys; print(json.load(sys.stdin)["set"])')
  echo "$line" | python3 -c "
import json, sys
import math
r = json.load(sys.stdin); f32, int8 = float('${seconds[$set.f32]}'), float('${seconds[$set.int8]}')
vectors = lambda name: [v['vector'] if isinstance(v, dict) else v for v in json.load(open(f'$work/{r[\"set\"]}.{name}.json'))['vectors']]
cos = lambda a, b: sum(x * y for x, y in zip(a, b)) / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))
worst = min(cos(a, b) for a, b in zip(vectors('ckeep'), vectors('int8')))
print(f\"| {r['set']} | {int8:.2f} | {r['seconds']/int8:.2f}x | {f32/int8:.2f}x | {worst:.4f} |\")"
done < "$work/pytorch.jsonl"
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); flags: $(grep -o -w -m1 'avx512f\|avx2\|avx512_vnni' /proc/cpuinfo | sort -u | xargs); threads: $BENCH_THREADS"
