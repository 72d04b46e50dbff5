#!/usr/bin/env bash
# Answers end to end. Three answerers run on the same questions:
#   - `ckeep eval answers` with context assembly and checked citations;
#   - ckeep's extractive answer;
#   - the usual Python pipeline (bench/answers_anchor.py: LangChain's splitter, rank_bm25, the
#     top chunks pasted into a "cite [n]" prompt).
# The two that generate use the same Qwen2.5-Coder 0.5B GGUF on one llama.cpp server
# (scripts/llama_server.sh), two threads, a 1,500-token context budget, greedy decoding.
# Sets: SQuAD v1.1 and v2.0 long documents, CMRC 2018 dev (BENCH_SETS picks some:
# "squad-v1.1 cmrc2018"), the first BENCH_LIMIT questions by id (default 30, and as many
# unanswerable ones for SQuAD v2.0).
# Output: bench/results/answers/{summary.md,*.json}, with paired bootstrap intervals of ckeep
# minus the anchor. A long benchmark (about 15 minutes per 30 questions and set): not run in CI.
# CKEEP_BIN=PATH uses that binary instead of a release build.
set -euo pipefail
cd "$(dirname "$0")/.."
DATA="${CKEEP_DATA:-$(cd .. && pwd)/shared/data}"
LIMIT="${BENCH_LIMIT:-30}"
SETS="${BENCH_SETS:-squad-v1.1 squad-v2.0 cmrc2018}"
out=bench/results/answers
mkdir -p "$out"
scripts/build_deps.sh
ck="${CKEEP_BIN:-target/release/ckeep}"
[ -n "${CKEEP_BIN:-}" ] || cargo build --release --quiet -p ckeep
"$ck" --quiet model pull qwen2.5-coder-0.5b-instruct
model="${CKEEP_MODELS:-$HOME/.cache/ckeep/models}/qwen2.5-coder-0.5b-instruct/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
scripts/llama_server.sh
source scripts/test_venv.sh
test_venv "rank_bm25, langchain_text_splitters" -- "rank_bm25>=0.2" "langchain-text-splitters>=0.3"

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
target/llama-server/bin/llama-server --host 127.0.0.1 --port "$port" --threads 2 \
  --ctx-size 4096 --parallel 1 --no-webui --model "$model" > "$out/server.log" 2>&1 &
server=$!
trap 'kill $server 2> /dev/null' EXIT
url="http://127.0.0.1:$port"
until curl -sf "$url/health" > /dev/null; do
  kill -0 $server || { tail "$out/server.log"; exit 1; }
  sleep 0.2
done

while read -r name docs queries; do
  [[ " $SETS " == *" $name "* ]] || continue
  echo "== $name" >&2
  CKEEP_CACHE_DIR="$(mktemp -d)" "$ck" --quiet --json eval answers --docs "$DATA/$docs" \
    --queries "$DATA/$queries" --llm none --llm "$url/v1#qwen" --limit "$LIMIT" --per-question \
    > "$out/$name.ckeep.json"
  "$venv/bin/python" bench/answers_anchor.py --docs "$DATA/$docs" --queries "$DATA/$queries" \
    --server "$url" --limit "$LIMIT" --out "$out/$name.anchor.json"
done << SETS
squad-v1.1 squad_dev/longdoc-v1.1.docs.jsonl squad_dev/longdoc-v1.1.queries.jsonl
squad-v2.0 squad_dev/longdoc-v2.0.docs.jsonl squad_dev/longdoc-v2.0.queries.jsonl
cmrc2018 zh/retrieval/cmrc2018/dev/docs.jsonl zh/retrieval/cmrc2018/dev/queries.jsonl
SETS

"$venv/bin/python" - "$out" > "$out/summary.md" << 'PY'
import json, random, sys
from pathlib import Path
out = Path(sys.argv[1])

def ci(a, b, rounds=10_000):
    """95 % paired bootstrap interval of mean(b) - mean(a), fixed seed."""
    rng, n = random.Random(7), len(a)
    diffs = sorted(sum(b[i] - a[i] for i in (rng.randrange(n) for _ in range(n))) / n
                   for _ in range(rounds))
    return diffs[int(0.025 * rounds)], diffs[int(0.975 * rounds) - 1]

print("| set | system | accuracy | F1 | context recall | abstains (unanswerable) | false abstention | s / question |")
print("|---|---|---|---|---|---|---|---|")
notes = []
for name in ("squad-v1.1", "squad-v2.0", "cmrc2018"):
    if not (out / f"{name}.anchor.json").exists():
        continue
    ck = json.loads((out / f"{name}.ckeep.json").read_text())
    anchor = json.loads((out / f"{name}.anchor.json").read_text())
    rows = [(s["system"].split(" · ")[1], s["per_question"]) for s in ck["systems"]]
    rows.append(("Python anchor (top chunks, cite [n])", anchor))
    for label, qs in rows:
        ans = [q for q in qs if not q["unanswerable"]]
        imp = [q for q in qs if q["unanswerable"]]
        mean = lambda v, k: sum(float(q[k]) for q in v) / max(len(v), 1)
        abst = f"{100 * mean(imp, 'abstained'):.1f}" if imp else "–"
        print(f"| {name} | {'extractive' if label == 'none' else label} | {100 * mean(ans, 'accuracy'):.1f} | "
              f"{100 * mean(ans, 'f1'):.1f} | {100 * mean(ans, 'context_recall'):.1f} | {abst} | "
              f"{100 * mean(ans, 'abstained'):.1f} | {mean(qs, 'seconds'):.1f} |")
    model = {q["qid"]: q for q in rows[1][1] if not q["unanswerable"]}
    base = [q for q in anchor if not q["unanswerable"]]
    for metric in ("accuracy", "f1", "context_recall"):
        lo, hi = ci([float(q[metric]) for q in base], [float(model[q["qid"]][metric]) for q in base])
        notes.append(f"{name}, ckeep − anchor, {metric}: [{100 * lo:+.1f}, {100 * hi:+.1f}] points")
print()
print("95 % paired bootstrap intervals (answerable questions):")
print()
for n in notes:
    print(f"- {n}")
PY
cat "$out/summary.md"
