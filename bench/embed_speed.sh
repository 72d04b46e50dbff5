#!/usr/bin/env bash
# Encoder throughput, ckeep (f32 and int8) beside sentence-transformers on PyTorch and ONNX
# Runtime (f32 exported from the same weights, and its dynamic int8 quantisation), side by side
# in one run on the same inputs, weights, prompts and thread count, for all-MiniLM-L6-v2 (1,000
# STS-B sentences, 200 SciFact abstracts of 200-256 tokens) and multilingual-e5-small (1,000
# LCQMC questions as queries, 200 DRCD paragraphs of 200-256 tokens as passages; PyTorch and ONNX
# Runtime run our 4-bit image dequantised by bench/e5_hf.py). Prints per model a table with
# tokens/s, ratios to PyTorch, the share of the machine's matrix-product peak, query latency and
# the vectors' agreement.
#
# Every figure is printed beside the CPU's feature level and the instruction set each side's
# kernels actually run with: faer's f32 matrix products and PyTorch both use AVX-512 where the
# CPU has it, our own kernels (the int8 products, element-wise passes) AVX-512 VNNI/BW or AVX2.
# BENCH_ISA=avx2 caps PyTorch at AVX2 (ATEN_CPU_CAPABILITY, ONEDNN_MAX_CPU_ISA,
# MKL_ENABLE_INSTRUCTIONS) and our own kernels too (CKEEP_SIMD=avx2): how an AVX2-only host is
# measured on an AVX-512 one, except for faer and ONNX Runtime, which have no such switch.
#
# Sets up its own venv (bench/.venv-torch, ~3 GB: torch, sentence-transformers, onnxruntime)
# on first use, and keeps the ONNX exports under bench/results/onnx/.
# Usage: bench/embed_speed.sh      (BENCH_THREADS=N to change the thread count, default 2;
#                                   BENCH_ISA=avx2 to cap PyTorch and our own kernels at AVX2;
#                                   BENCH_MODELS="all-MiniLM-L6-v2" for one model)
set -euo pipefail
cd "$(dirname "$0")/.."
export BENCH_THREADS="${BENCH_THREADS:-2}"
export RAYON_NUM_THREADS="$BENCH_THREADS"
VENV=bench/.venv-torch
if ! "$VENV/bin/python" -c "import sentence_transformers, onnxruntime, onnx" 2>/dev/null; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet sentence-transformers onnxruntime onnx
fi
if [ "${BENCH_ISA:-}" = avx2 ]; then
  export CKEEP_SIMD=avx2
elif [ -n "${BENCH_ISA:-}" ]; then
  echo "BENCH_ISA: avx2 or unset, not ${BENCH_ISA}" >&2
  exit 2
fi
cargo build --release --quiet -p ckeep
models="${CKEEP_MODELS:-$HOME/.cache/ckeep/models}"
for model in ${BENCH_MODELS:-all-MiniLM-L6-v2 multilingual-e5-small}; do
  target/release/ckeep --quiet model pull "$model"
  ours=$(CKEEP_BENCH_MODEL="$model" cargo bench --quiet -p ckeep-embed --bench throughput 2>/dev/null | tail -1)
  model_dir="$models/$model"
  if [ "$model" = multilingual-e5-small ]; then
    model_dir=bench/results/multilingual-e5-small-f32
    "$VENV/bin/python" bench/e5_hf.py "$models/$model" "$model_dir" 2>/dev/null
  fi
  (
    if [ "${BENCH_ISA:-}" = avx2 ]; then
      export ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2 MKL_ENABLE_INSTRUCTIONS=AVX2
    fi
    "$VENV/bin/python" bench/st_speed.py "$model_dir" "target/embed-bench/$model" "$ours" 2>/dev/null
  )
  echo
done
