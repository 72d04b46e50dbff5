#!/usr/bin/env bash
# What the Python binding costs over the CLI: 10,000 QQP questions embedded with
# all-MiniLM-L6-v2 (no cache) by `ckeep embed --json` (whole process: model load, embedding,
# JSON out) and by `ckeep.Embedder(...).embed()` (model load, embedding, the NumPy matrix), in
# alternating rounds on the same inputs; prints the times, the ratio and whether the vectors are
# bit-identical. Builds the release CLI and the release wheel (maturin) into bench/.venv-python.
# Usage: bench/python_overhead.sh   (BENCH_TEXTS=N for another count, BENCH_ROUNDS=N rounds)
set -euo pipefail
cd "$(dirname "$0")/.."
DATA="${CKEEP_DATA:-$(cd .. && pwd)/shared/data}"
VENV=bench/.venv-python
if [ ! -x "$VENV/bin/maturin" ]; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet "maturin>=1.9,<2" "numpy>=1.21"
fi
cargo build --release --quiet -p ckeep
"$VENV/bin/maturin" build --quiet --release -m python/Cargo.toml -o target/wheels
"$VENV/bin/pip" install --quiet --force-reinstall --no-deps target/wheels/ckeep-*-abi3-*.whl
target/release/ckeep --quiet model pull all-MiniLM-L6-v2
cd bench && "../$VENV/bin/python" - "$DATA/qqp/dev.tsv" <<'PY'
import json, os, subprocess, sys, time
import numpy as np
import ckeep

n = int(os.environ.get("BENCH_TEXTS", "10000"))
rounds = int(os.environ.get("BENCH_ROUNDS", "2"))
texts, seen = [], set()
for line in open(sys.argv[1], encoding="utf-8", errors="replace"):  # a few bytes are not UTF-8
    for q in line.rstrip("\n").split("\t")[1:3]:
        q = q.replace("\r", " ")
        if q and q not in seen:
            seen.add(q)
            texts.append(q)
texts = texts[:n]
stdin = "\n".join(texts) + "\n"
cli_times, py_times = [], []
for r in range(rounds):
    t = time.perf_counter()
    out = subprocess.run(["../target/release/ckeep", "--quiet", "--no-cache", "--json", "embed",
                          "--model", "all-MiniLM-L6-v2", "-"], input=stdin, capture_output=True,
                         text=True, check=True).stdout
    cli_times.append(time.perf_counter() - t)
    t = time.perf_counter()
    got = ckeep.Embedder("all-MiniLM-L6-v2", cache=False).embed(texts)
    py_times.append(time.perf_counter() - t)
want = np.array(json.loads(out)["vectors"], dtype=np.float32)
print(f"{len(texts)} QQP questions, all-MiniLM-L6-v2, {rounds} alternating rounds")
print(f"ckeep embed --json (process): {', '.join(f'{x:.2f}' for x in cli_times)} s")
print(f"ckeep.Embedder.embed:          {', '.join(f'{x:.2f}' for x in py_times)} s")
print(f"Python / CLI, best of each: {min(py_times) / min(cli_times):.3f}")
print(f"vectors bit-identical: {np.array_equal(got, want)}, shape {got.shape}, {got.dtype}")
PY
