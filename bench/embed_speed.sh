#!/usr/bin/env bash
# all-MiniLM-L6-v2 throughput, ckeep (f32 and int8) vs sentence-transformers on PyTorch, side by side in one run
# on the same inputs (1,000 STS-B sentences, 200 SciFact abstracts of 200-256 tokens), model
# files and thread count; prints a table with ratios, tokens/s, the share of the machine's
# matrix-product peak, and the vectors' agreement.
#
# Every figure is printed beside the CPU's feature level and the instruction set each side's
# kernels actually run with: faer's f32 matrix products and PyTorch both use AVX-512 where the
# CPU has it, our own kernels (the int8 products, element-wise passes) AVX-512 VNNI/BW or AVX2.
# BENCH_ISA=avx2 caps PyTorch at AVX2 (ATEN_CPU_CAPABILITY, ONEDNN_MAX_CPU_ISA,
# MKL_ENABLE_INSTRUCTIONS) and our own kernels too (CKEEP_SIMD=avx2): how an AVX2-only host is
# measured on an AVX-512 one, except for faer, which has no such switch.
#
# Sets up its own venv (bench/.venv-torch, ~3 GB: torch + sentence-transformers) on first use.
# Usage: bench/embed_speed.sh      (BENCH_THREADS=N to change the thread count, default 2;
#                                   BENCH_ISA=avx2 to cap PyTorch and our own kernels at AVX2)
set -euo pipefail
cd "$(dirname "$0")/.."
export BENCH_THREADS="${BENCH_THREADS:-2}"
export RAYON_NUM_THREADS="$BENCH_THREADS"
VENV=bench/.venv-torch
if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c "import sentence_transformers" 2>/dev/null; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet sentence-transformers
fi
if [ "${BENCH_ISA:-}" = avx2 ]; then
  export CKEEP_SIMD=avx2
elif [ -n "${BENCH_ISA:-}" ]; then
  echo "BENCH_ISA: avx2 or unset, not ${BENCH_ISA}" >&2
  exit 2
fi
cargo build --release --quiet -p ckeep
target/release/ckeep --quiet model pull all-MiniLM-L6-v2
ours=$(cargo bench --quiet -p ckeep-embed --bench throughput 2>/dev/null | tail -1)
model_dir="${CKEEP_MODELS:-$HOME/.cache/ckeep/models}/all-MiniLM-L6-v2"
if [ "${BENCH_ISA:-}" = avx2 ]; then
  export ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2 MKL_ENABLE_INSTRUCTIONS=AVX2
fi
"$VENV/bin/python" bench/st_speed.py "$model_dir" target/embed-bench "$ours" 2>/dev/null
