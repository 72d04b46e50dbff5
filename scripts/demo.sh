#!/usr/bin/env bash
# The main job on the embedded default store: build ckeep, add the bundled corpus, search it.
# Usage: scripts/demo.sh [QUERY]   (store: $CKEEP_STORE, default ./.ckeep-demo)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet -p ckeep
ckeep=target/release/ckeep
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
