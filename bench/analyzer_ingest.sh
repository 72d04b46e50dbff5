#!/usr/bin/env bash
# BM25 ingest speed per analyzer: `ckeep add` (no model) of English (BEIR SciFact corpus, 5,183
# abstracts) and Chinese text (CMRC 2018 dev and DRCD dev articles) into fresh stores, paragraph
# chunks, best of three; prints MB/s of stored text per analyzer and corpus.
# Usage: bench/analyzer_ingest.sh
set -euo pipefail
cd "$(dirname "$0")/.."
DATA="${CKEEP_DATA:-$(cd .. && pwd)/shared/data}"
cargo build --release --quiet -p ckeep
ck=target/release/ckeep
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Chinese docs files carry a `paragraphs` field: the loader keeps it as metadata, as it would for
# any user's JSONL.
echo "| corpus | analyzer | MB | best s | MB/s |"
echo "|---|---|---|---|---|"
for corpus in "scifact:$DATA/beir_scifact/corpus.jsonl" "cmrc2018:$DATA/zh/retrieval/cmrc2018/dev/docs.jsonl" \
  "drcd:$DATA/zh/retrieval/drcd/dev/docs.jsonl"; do
  name=${corpus%%:*}; file=${corpus#*:}
  for analyzer in standard cjk jieba; do
    best=""; bytes=0
    for _ in 1 2 3; do
      rm -rf "$work/s"
      out=$($ck --quiet --json --store "$work/s" add "$file" --chunker paragraphs --analyzer "$analyzer")
      read -r s b < <(echo "$out" | python3 -c 'import json,sys; r=json.load(sys.stdin); print(r["seconds"], r["bytes"])')
      bytes=$b
      if [ -z "$best" ] || (( $(echo "$s < $best" | bc) )); then best=$s; fi
    done
    python3 -c "b=$bytes/1e6; s=$best; print(f'| $name | $analyzer | {b:.1f} | {s:.2f} | {b/s:.1f} |')"
  done
done
