#!/usr/bin/env bash
# `ckeep mcp` driven by the reference Python MCP SDK (tests/mcp), in the Python test venv,
# against target/debug/ckeep (no second build).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
source scripts/test_venv.sh
test_venv "pytest, mcp" -- "pytest>=7" "mcp>=2.3,<3"
CKEEP_BIN="$PWD/target/debug/ckeep" "$venv/bin/python" -m pytest -q tests/mcp "$@"
