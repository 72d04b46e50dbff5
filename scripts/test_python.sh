#!/usr/bin/env bash
# The Python package's tests (python/tests) against the module the workspace's debug build made
# (scripts/build.sh, a no-op after scripts/test.sh ran it). target/debug/lib_ckeep.so is what maturin would put in the wheel; it is
# copied beside the Python layer (as `maturin develop` does), and pytest runs in a venv under
# target/ with numpy, langchain-core and llama-index-core (the adapters are tested against the
# real packages). The tests compare against target/debug/ckeep and use the real models in
# $CKEEP_MODELS (installed by scripts/test.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
source scripts/test_venv.sh
test_venv "numpy, pandas, pytest, langchain_core, llama_index.core" -- \
  "numpy>=1.21" "pandas>=1.5" "pytest>=7" "langchain-core>=0.3" "llama-index-core>=0.12"
cp target/debug/lib_ckeep.so python/ckeep/_ckeep.abi3.so
# The workspace build links llama.cpp into the module (the CLI's `llm` feature): its shared
# libraries go beside it, where its rpath looks (python/build.rs); .gitignore keeps them out.
cp target/debug/lib*.so.0 python/ckeep/
CKEEP_BIN="$PWD/target/debug/ckeep" PYTHONPATH="$PWD/python" "$venv/bin/python" -m pytest -q python/tests "$@"
