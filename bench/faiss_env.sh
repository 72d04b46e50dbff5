# Sourced by the benchmarks that run FAISS beside ckeep (hnsw.sh, quantize.sh, million.sh), from
# the repository's root: their own venv (bench/.venv-ann: faiss-cpu, numpy), made on first use,
# as $VENV; and `cpu_line`, the CPU and its vector level, printed beside the figures.
VENV=bench/.venv-ann
if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c "import faiss" 2>/dev/null; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet faiss-cpu numpy
fi

cpu_line() {
  echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-), $(nproc) cores; $(grep -qw avx512f /proc/cpuinfo && echo AVX-512 || echo AVX2)"
}
