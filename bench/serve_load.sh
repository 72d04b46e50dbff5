#!/usr/bin/env bash
# Load test of `ckeep serve` on SciFact (../shared/data/beir_scifact): a store of the first
# BENCH_INITIAL abstracts (default 4,000; paragraph chunks, all-MiniLM-L6-v2); then 32 clients
# send the SciFact queries (hybrid, documents, k=10) for BENCH_SECONDS (default 60) while one
# more client adds the remaining abstracts 5 per request (then adds them again under new ids, so
# it writes for the whole run). Reports throughput, p50/p90/p99 latency, failed requests, the
# server's resident memory and, from each answer's Server-Timing header, the search's own time
# apart from the query's embedding and the wait for a reader; afterwards every acknowledged
# document is read back and `ckeep check` runs on the store.
#
# Each variant runs on a fresh copy of the same store: `batch` (concurrent queries share model
# calls, the default) and `nobatch` (--no-batch), side by side.
#
# Usage: bench/serve_load.sh   (CKEEP_DATA=DIR; BENCH_SECONDS, BENCH_CLIENTS, BENCH_INITIAL,
#        BENCH_VARIANTS="batch nobatch"; BENCH_STRATEGY (default mode=hybrid,level=doc,k=10);
#        BENCH_SERVE_FLAGS, e.g. "--no-cache --readers 16" so every query runs the model;
#        BENCH_INGEST=0 for queries only; BENCH_MODEL (all-MiniLM-L6-v2), BENCH_CHUNKER
#        (paragraphs); BENCH_INITIAL_JSONL and BENCH_NEW_JSONL: other documents for the store and
#        for the writer than SciFact's split; BENCH_VISIBLE_AFTER=SECONDS: that long after each
#        acknowledged write, a dense search checks the write is found — see bench/serve_live.sh;
#        BENCH_QUANTIZE=int8|binary: the store's vectors held as those codes, as
#        `ckeep add --quantize KIND` records)
#
# Batching where it matters (every query embedded by the model, dense search, no writes):
#   BENCH_INGEST=0 BENCH_SECONDS=20 BENCH_STRATEGY=mode=dense,k=10 \
#     BENCH_SERVE_FLAGS="--no-cache --readers 16" bench/serve_load.sh
set -euo pipefail
cd "$(dirname "$0")/.."
DATA="${CKEEP_DATA:-$(cd .. && pwd)/shared/data}"
SECONDS_RUN="${BENCH_SECONDS:-60}"
CLIENTS="${BENCH_CLIENTS:-32}"
INITIAL="${BENCH_INITIAL:-4000}"
VARIANTS="${BENCH_VARIANTS:-batch nobatch}"
STRATEGY="${BENCH_STRATEGY:-mode=hybrid,level=doc,k=10}"
read -r -a SERVE_FLAGS <<< "${BENCH_SERVE_FLAGS:-}"
INGEST="${BENCH_INGEST:-1}"
MODEL="${BENCH_MODEL:-all-MiniLM-L6-v2}"
CHUNKER="${BENCH_CHUNKER:-paragraphs}"
visible=()
[ -n "${BENCH_VISIBLE_AFTER:-}" ] && visible=(--visible-after "$BENCH_VISIBLE_AFTER")
cargo build --release --quiet -p ckeep
cargo build --release --quiet -p ckeep-server --example load
ck=target/release/ckeep
load=target/release/examples/load
$ck --quiet model pull "$MODEL"
base="${BENCH_DIR:-target/bench-serve}"
mkdir -p "$base" bench/results
corpus="$DATA/beir_scifact/corpus.jsonl"
if [ -n "${BENCH_INITIAL_JSONL:-}" ]; then
  cp "$BENCH_INITIAL_JSONL" "$base/initial.jsonl"
else
  head -n "$INITIAL" "$corpus" > "$base/initial.jsonl"
fi
if [ "$INGEST" != 1 ]; then
  : > "$base/new.jsonl"
elif [ -n "${BENCH_NEW_JSONL:-}" ]; then
  cp "$BENCH_NEW_JSONL" "$base/new.jsonl"
else
  tail -n +"$((INITIAL + 1))" "$corpus" > "$base/new.jsonl"
fi
key="$(cat "$base/initial.jsonl" | cksum) $MODEL $CHUNKER"
if [ ! -f "$base/store.count" ] || [ "$(cat "$base/store.count")" != "$key" ]; then
  rm -rf "$base/store"
  $ck --store "$base/store" add "$base/initial.jsonl" --chunker "$CHUNKER" --model "$MODEL"
  echo "$key" > "$base/store.count"
fi
port=$((20000 + RANDOM % 20000))
for variant in $VARIANTS; do
  rm -rf "$base/run"
  cp -r "$base/store" "$base/run"
  [ -n "${BENCH_QUANTIZE:-}" ] && $ck --quiet --store "$base/run" add --quantize "$BENCH_QUANTIZE"
  flags=("${SERVE_FLAGS[@]}")
  [ "$variant" = nobatch ] && flags+=(--no-batch)
  $ck --quiet --store "$base/run" serve --addr "127.0.0.1:$port" "${flags[@]}" &
  pid=$!
  for _ in $(seq 100); do
    curl -sf "http://127.0.0.1:$port/health" > /dev/null && break
    sleep 0.2
  done
  status=0
  $load --url "http://127.0.0.1:$port" --queries "$DATA/beir_scifact/queries.jsonl" \
    --docs "$base/new.jsonl" --clients "$CLIENTS" --seconds "$SECONDS_RUN" --pid "$pid" --strategy "$STRATEGY" \
    "${visible[@]}" > "bench/results/serve_load_$variant.json" || status=$?
  curl -sf "http://127.0.0.1:$port/stats" | python3 -c 'import json,sys; b=json.load(sys.stdin)["query_batches"]; print("query model calls:", b and b["model_calls"], "queries embedded:", b and b["queries"])'
  stopping=$(date +%s.%N)
  kill -TERM "$pid"
  wait "$pid"
  # Stopping includes saving the vector index as updated in place.
  echo "== $variant (load exit $status; server stopped cleanly in $(python3 -c "import time; print(f'{time.time() - $stopping:.1f}')") s)"
  cat "bench/results/serve_load_$variant.json"
  $ck --store "$base/run" check
  $ck --store "$base/run" stats --json | python3 -c 'import json,sys; s=json.load(sys.stdin); print("documents after the run:", s["stats"]["documents"], "chunks:", s["stats"]["chunks"])'
  [ "$status" = 0 ] || exit "$status"
done
python3 - $VARIANTS <<'PY'
import json, sys
rows = []
for v in sys.argv[1:]:
    r = json.load(open(f"bench/results/serve_load_{v}.json"))
    l, m = r["latency_ms"], r["server_rss_mib"] or {}
    rows.append((v, r["queries"], r["queries_per_second"], l["p50"], l["p90"], l["p99"], r["failed_requests"],
                 r["ingest"]["documents_acknowledged"], r["ingest"]["missing_after_run"], m.get("first"), m.get("max"), m.get("last")))
print("| variant | queries | q/s | p50 ms | p90 ms | p99 ms | failed | docs added | missing | RSS MiB first / max / last |")
print("|---|---|---|---|---|---|---|---|---|---|")
for r in rows:
    print(f"| {r[0]} | {r[1]} | {r[2]:.1f} | {r[3]:.1f} | {r[4]:.1f} | {r[5]:.1f} | {r[6]} | {r[7]} | {r[8]} | {r[9]:.0f} / {r[10]:.0f} / {r[11]:.0f} |")
for v in sys.argv[1:]:
    s = json.load(open(f"bench/results/serve_load_{v}.json")).get("server_ms")
    if s:
        print(f"{v}, the server's Server-Timing p50 / p99 ms: search (without embedding or waiting) "
              f"{s['search']['p50']:.2f} / {s['search']['p99']:.2f}, query embedding "
              f"{s['embed']['p50']:.2f} / {s['embed']['p99']:.2f}, wait for a reader "
              f"{s['wait']['p50']:.2f} / {s['wait']['p99']:.2f}")
    f = json.load(open(f"bench/results/serve_load_{v}.json")).get("dense_freshness")
    if f:
        print(f"{v}: {f['found']} of {f['checked']} acknowledged writes found by dense search "
              f"{f['seconds_after_acknowledgement']} s after acknowledgement")
if len(rows) == 2:
    print(f"\nthroughput {rows[0][0]} / {rows[1][0]}: {rows[0][2] / rows[1][2]:.2f}x; p50 ratio {rows[0][3] / rows[1][3]:.2f}")
PY
