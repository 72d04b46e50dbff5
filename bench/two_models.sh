#!/usr/bin/env bash
# What a second embedding model costs beside its gain (issue 46): on the same SciFact abstracts
# (title + text, one chunk each), the embedding time and stored bytes of all-MiniLM-L6-v2 and
# of multilingual-e5-small added to the same store (`ckeep add --model A --model B`, no
# embedding cache), and the query latency of one-model and two-model hybrid search on a warm
# server without the embedding cache (its Server-Timing header: query embedding and search
# apart), SciFact test queries.
#
# Usage: bench/two_models.sh   (CKEEP_DATA=DIR for the data; BENCH_DOCS=N abstracts, default
#        1000; BENCH_QUERIES=N queries per strategy, default 100)
set -euo pipefail
cd "$(dirname "$0")/.."
DATA="${CKEEP_DATA:-$(cd .. && pwd)/shared/data}"
DOCS="${BENCH_DOCS:-1000}"
QUERIES="${BENCH_QUERIES:-100}"
A=all-MiniLM-L6-v2
B=multilingual-e5-small
cargo build --release --quiet -p ckeep
ck=target/release/ckeep
$ck --quiet model pull "$A" "$B"
work=$(mktemp -d)
trap 'kill "${pid:-0}" 2>/dev/null || true; rm -rf "$work"' EXIT
head -n "$DOCS" "$DATA/beir_scifact/corpus.jsonl" > "$work/docs.jsonl"
$ck --quiet --no-cache --store "$work/s" add "$work/docs.jsonl" --chunker whole --fields title,text \
  --model "$A" --json > "$work/one.json"
$ck --quiet --store "$work/s" stats --json > "$work/one.stats.json"
$ck --quiet --no-cache --store "$work/s" add --model "$A" --model "$B" --json > "$work/two.json"
$ck --quiet --store "$work/s" stats --json > "$work/two.stats.json"
$ck --quiet --store "$work/s" check

port=$((20000 + RANDOM % 20000))
$ck --quiet --no-cache --store "$work/s" serve --addr "127.0.0.1:$port" --no-batch &
pid=$!
for _ in $(seq 300); do
  curl -sf "http://127.0.0.1:$port/health" > /dev/null && break
  sleep 0.2
done
python3 - "$work" "$port" "$DATA/beir_scifact" "$QUERIES" "$A" "$B" <<'PY'
import json, statistics, sys, urllib.request
work, port, data, n, a, b = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5], sys.argv[6]
load = lambda name: json.load(open(f"{work}/{name}"))
one, two = load("one.json"), load("two.json")
s1, s2 = load("one.stats.json")["stats"], load("two.stats.json")["stats"]
chunks = s2["leaf_chunks"]
def size(stats, name):
    return next((r["bytes"] for r in stats["representations"] if r["name"] == name), 0)
stage = next(s for s in two["derived"] if s["stage"].startswith("embedding stored chunks"))
# The first add embeds plain and title-prefixed text with A; the second embeds both with B.
print(f"SciFact: {s2['documents']} abstracts, {chunks} chunks (whole, title + text), no embedding cache\n")
print("| model | embedding seconds | texts/s (plain and title-prefixed) | stored bytes per chunk (plain + contextual:title) |")
print("|---|---|---|---|")
print(f"| {a} (the store's own, with chunking and BM25) | {one['seconds']:.1f} | {2*chunks/one['seconds']:.0f} | "
      f"{(size(s1, 'plain') + size(s1, 'contextual:title'))/chunks:,.0f} |")
print(f"| {b} (added) | {stage['seconds']:.1f} | {2*chunks/stage['seconds']:.0f} | "
      f"{(size(s2, 'plain|' + b) + size(s2, 'contextual:title|' + b))/chunks:,.0f} |")
queries = [json.loads(l)["text"] for l in open(f"{data}/queries.jsonl")]
qrels = {l.split()[0] for i, l in enumerate(open(f"{data}/qrels/test.tsv")) if i}
ids = [json.loads(l)["_id"] for l in open(f"{data}/queries.jsonl")]
queries = [q for q, i in zip(queries, ids) if i in qrels][:n]
strategies = {
    f"hybrid, {a}": f"model={a},mode=hybrid:linear=0.5,k1=1.2,b=0.75,title_weight=2,level=doc",
    f"hybrid, {a} + {b}": f"models={a}+{b},mode=hybrid:linear=0.35+0.2,k1=1.2,b=0.75,title_weight=2,level=doc",
}
def ask(query, strategy):
    body = json.dumps({"query": query, "strategy": strategy}).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{port}/search", body, {"content-type": "application/json"})
    with urllib.request.urlopen(req) as r:
        r.read()
        parts = dict(p.strip().split(";dur=") for p in r.headers["server-timing"].split(","))
        return float(parts["embed"]), float(parts["search"])
print(f"\n| strategy ({len(queries)} queries, one at a time, warm) | query embedding p50 ms | search p50 ms | total p50 ms |")
print("|---|---|---|---|")
for name, spec in strategies.items():
    ask(queries[0], spec)  # loads what the strategy needs
    times = [ask(q, spec) for q in queries]
    e, s = statistics.median(t[0] for t in times), statistics.median(t[1] for t in times)
    t = statistics.median(t[0] + t[1] for t in times)
    print(f"| {name} | {e:.2f} | {s:.2f} | {t:.2f} |")
PY
