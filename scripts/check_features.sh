#!/usr/bin/env bash
# The slim builds a library user gets: the engine without PostgreSQL, tokio or llama.cpp, and the
# `ckeep` binary with no optional part; both warning-free (clippy compiles them; a code-generating
# build would add minutes of CI and check nothing more), and the engine's dependency tree
# checked for what it must not pull in.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo clippy --quiet -p ckeep-engine -p ckeep --no-default-features -- -D warnings
cargo clippy --quiet -p ckeep --no-default-features --features watch -- -D warnings
heavy=$(cargo tree -p ckeep-engine --no-default-features -e normal --prefix none \
  | grep -E '^(tokio|postgres|tokio-postgres|pgvector|llama-cpp-[a-z0-9-]+) ' | sort -u || true)
if [ -n "$heavy" ]; then
  echo "ckeep-engine --no-default-features still depends on:" >&2
  echo "$heavy" >&2
  exit 1
fi
echo "ckeep-engine --no-default-features: no tokio, postgres or llama.cpp"
