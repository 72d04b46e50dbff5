#!/usr/bin/env bash
# Dense search under writes at 100k chunks (issue 23's live-index target): a store of the
# latency benchmark's collection — SciFact abstracts, the SQuAD articles, WikiText-2 and the
# Wikipedia summaries cut into sentences (102,853 chunks) — embedded with potion-base-8M, whose
# query embedding takes tens of microseconds, so a query's latency is the search's (plus HTTP).
# bench/serve_load.sh then runs BENCH_CLIENTS (default 2) clients of dense chunk search (top 10)
# for BENCH_SECONDS while one writer adds the SciFact abstracts again under new ids, 5 per
# request, as fast as the server takes them; BENCH_VISIBLE_AFTER seconds (default 1.5: the
# refresh interval, 1 s, plus the time to apply it) after each acknowledged write a dense search
# checks that it is found.
#
# Usage: bench/serve_live.sh   (CKEEP_DATA=DIR; BENCH_SECONDS, BENCH_CLIENTS, BENCH_STRATEGY,
#        BENCH_INGEST=0 for the same queries without writes,
#        BENCH_SERVE_FLAGS, e.g. "--index-interval 30"; BENCH_QUANTIZE=int8 for the vectors held
#        as int8 codes)
set -euo pipefail
cd "$(dirname "$0")/.."
DATA="${CKEEP_DATA:-$(cd .. && pwd)/shared/data}"
dir="$PWD/target/bench-serve-live"
mkdir -p "$dir"
python3 - "$DATA" "$dir" <<'PY'
import json, sys
data, out = sys.argv[1], sys.argv[2]
def lines(path, prefix, key):
    for line in open(f"{data}/{path}", encoding="utf-8"):
        d = json.loads(line)
        yield {"id": f"{prefix}/{d[key]}", "title": d.get("title", ""), "text": d["text"]}
with open(f"{out}/corpus-initial.jsonl", "w", encoding="utf-8") as f, \
     open(f"{out}/corpus-new.jsonl", "w", encoding="utf-8") as g:
    for d in lines("beir_scifact/corpus.jsonl", "scifact", "_id"):
        f.write(json.dumps(d) + "\n")
        g.write(json.dumps(dict(d, id="new-" + d["id"])) + "\n")
    for d in lines("squad_dev/longdoc-v1.1.docs.jsonl", "squad", "doc_id"):
        f.write(json.dumps(d) + "\n")
    for d in lines("wikitext2_test/articles.jsonl", "wikitext", "id"):
        f.write(json.dumps(d) + "\n")
    wiki = json.load(open(f"{data}/wiki_vital_summaries_en/summaries_en-us.json", encoding="utf-8"))
    for key, v in wiki.items():
        if (v.get("extract") or "").strip():
            f.write(json.dumps({"id": f"wiki/{key}", "title": v.get("title", ""), "text": v["extract"]}) + "\n")
PY
BENCH_DIR="$dir" BENCH_INITIAL_JSONL="$dir/corpus-initial.jsonl" BENCH_NEW_JSONL="$dir/corpus-new.jsonl" \
  BENCH_MODEL=potion-base-8M BENCH_CHUNKER=sentences BENCH_VARIANTS=batch \
  BENCH_CLIENTS="${BENCH_CLIENTS:-2}" BENCH_STRATEGY="${BENCH_STRATEGY:-mode=dense,k=10}" \
  BENCH_VISIBLE_AFTER="${BENCH_VISIBLE_AFTER:-1.5}" exec bash bench/serve_load.sh
