#!/usr/bin/env bash
# Pairs per second on the 10,000 QQP dev pairs: `ckeep pairs` (no embedding cache) against the
# chunk-pair experiment's algorithm in Python with sentence-transformers — as written (a loop
# over pairs) and batched — with the same model files and thread count, in one run; checks the
# scores agree. Then `ckeep dedup` on 10,033 Wikipedia summaries (36,755 sentence chunks).
#
# Sets up its own venv (bench/.venv-torch, ~3 GB: torch + sentence-transformers) on first use.
# Usage: bench/pairs_speed.sh   (BENCH_PAIRS=N for fewer pairs; BENCH_THREADS, default 2)
set -euo pipefail
cd "$(dirname "$0")/.."
DATA="${CKEEP_DATA:-../shared/data}"
export BENCH_THREADS="${BENCH_THREADS:-2}"
export RAYON_NUM_THREADS="$BENCH_THREADS"
VENV=bench/.venv-torch
OUT=target/pairs-bench
mkdir -p "$OUT"
if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c "import sentence_transformers" 2>/dev/null; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet sentence-transformers
fi
cargo build --release --quiet -p ckeep
CKEEP=target/release/ckeep
$CKEEP --quiet model pull all-MiniLM-L6-v2
model_dir="${CKEEP_MODELS:-$HOME/.cache/ckeep/models}/all-MiniLM-L6-v2"
head -n "${BENCH_PAIRS:-10000}" "$DATA/qqp/dev.tsv" > "$OUT/pairs.tsv"
n=$(wc -l < "$OUT/pairs.tsv")

TIMEFORMAT=%R
ours=$( { time $CKEEP --quiet --no-cache pairs "$OUT/pairs.tsv" --out "$OUT/ckeep-scores.tsv" > /dev/null 2>&1; } 2>&1 )
"$VENV/bin/python" bench/pairs_original.py "$model_dir" "$OUT/pairs.tsv" > "$OUT/python.json" 2>/dev/null

python3 - "$OUT" "$ours" "$n" <<'PY'
import json, sys
out, ours, n = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
py = json.load(open(f"{out}/python.json"))
rows = [l.split("\t") for l in open(f"{out}/ckeep-scores.tsv").read().splitlines()[1:]]
diff = max(max(abs(float(r[2]) - s[0]), abs(float(r[3]) - s[1])) for r, s in zip(rows, py["scores"]))
print(f"{n} QQP pairs, all-MiniLM-L6-v2, whole-text and chunk-pair scores, {__import__('os').environ['BENCH_THREADS']} threads\n")
print("| implementation | seconds | pairs/s | ckeep speed-up |")
print("|---|---|---|---|")
for name, s in [("Python, as written (loop over pairs)", py["original_seconds"]),
                ("Python, batched encoding", py["batched_seconds"]),
                ("ckeep pairs (no cache, incl. start-up and model load)", ours)]:
    print(f"| {name} | {s:.1f} | {n / s:.0f} | {s / ours:.1f}x |")
print(f"\nlargest score difference, ckeep vs Python: {diff:.2e}")
PY

# Near-duplicate search over a 10k-document store (sentences, MiniLM; vectors cached after the
# first build, so only the search is timed).
python3 - "$DATA" > "$OUT/wiki.jsonl" <<'PY'
import json, sys
for k, v in json.load(open(f"{sys.argv[1]}/wiki_vital_summaries_en/summaries_en-us.json")).items():
    if v.get("extract", "").strip():
        print(json.dumps({"id": k, "title": v.get("title", ""), "text": v["extract"]}))
PY
rm -rf "$OUT/wiki-store"
$CKEEP --quiet --store "$OUT/wiki-store" add "$OUT/wiki.jsonl" --chunker sentences --model all-MiniLM-L6-v2
for level in doc chunk; do
  $CKEEP --quiet --store "$OUT/wiki-store" --json dedup --level $level > "$OUT/dedup-$level.json"
  python3 - "$OUT/dedup-$level.json" "$level" "$(wc -l < "$OUT/wiki.jsonl")" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
pairs = sum(len(c["pairs"]) for c in d["clusters"])
print(f"ckeep dedup --level {sys.argv[2]} on {sys.argv[3]} documents: {d['seconds']:.2f} s; "
      f"{len(d['clusters'])} clusters, {pairs} pairs at threshold {d['threshold']}")
PY
done
