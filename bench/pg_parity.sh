#!/usr/bin/env bash
# Parity of the PostgreSQL store with the embedded SQLite store on BEIR SciFact (test, 300
# queries): the same strategies, indexed and run by `ckeep eval` once per store.
#
#   bench/pg_parity.sh            # CKEEP_DATA (default ../shared/data) holds beir_scifact
#
# Checks, and prints:
#   1. exact search: every query's top 10 is identical on both stores, and every metric agrees
#      within 1e-6;
#   2. HNSW inside PostgreSQL (the same dense strategies without `exact`): recall@10 of the
#      approximate top 10 against the exact top 10, per strategy.
# A throwaway PostgreSQL 18 + pgvector comes from scripts/pg.sh; the model is all-MiniLM-L6-v2
# (`ckeep model pull all-MiniLM-L6-v2`), its embeddings cached after the first run.
set -euo pipefail
cd "$(dirname "$0")/.."
data="${CKEEP_DATA:-../shared/data}"
cargo build --release -q -p ckeep
ckeep="$PWD/target/release/ckeep"
work="$(mktemp -d /tmp/ckeep-parity-XXXXXX)"
chmod 755 "$work"
url="$(scripts/pg.sh start "$work/pg")"
trap 'scripts/pg.sh stop "$work/pg" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT

model=all-MiniLM-L6-v2
exact=(
  --strategy chunker=markdown:256,level=doc
  --strategy "chunker=whole,level=doc,mode=dense,model=$model,exact=true"
  --strategy "chunker=sentences:3,level=doc,mode=dense,model=$model,exact=true,agg=mean:3"
  --strategy "chunker=sentences:3,level=chunk,mode=dense,model=$model,exact=true"
  --strategy "chunker=markdown:256,level=doc,mode=hybrid,model=$model,exact=true"
)
approximate=(
  --strategy "chunker=whole,level=doc,mode=dense,model=$model"
  --strategy "chunker=sentences:3,level=doc,mode=dense,model=$model,agg=mean:3"
  --strategy "chunker=sentences:3,level=chunk,mode=dense,model=$model"
  --strategy "chunker=markdown:256,level=doc,mode=hybrid,model=$model"
)
run() { # name, work dir, strategies...
  local name="$1" where="$2"
  shift 2
  local started=$SECONDS
  "$ckeep" -q eval run --dataset "$data/beir_scifact" --split test "$@" \
    --metrics ndcg@10,mrr@10,map,recall@100 --work-dir "$where" --report "$work/$name" > /dev/null
  echo "$name: $((SECONDS - started)) s" >&2
}
run sqlite "$work/sqlite" "${exact[@]}"
run postgres "$url" "${exact[@]}"
run postgres-hnsw "$url" "${approximate[@]}"

python3 - "$work" <<'PY'
import json, sys, collections
work = sys.argv[1]

def runs(report, n):
    out = []
    for i in range(1, n + 1):
        per_query = collections.defaultdict(list)
        for line in open(f"{work}/{report}/run-{i}.trec"):
            q, _, doc, rank, score, _ = line.split()
            per_query[q].append((int(rank), doc))
        out.append({q: [d for _, d in sorted(v)][:10] for q, v in per_query.items()})
    return out

a = json.load(open(f"{work}/sqlite/results.json"))
b = json.load(open(f"{work}/postgres/results.json"))
names = [s["strategy"] for s in a["strategies"]]
ra, rb = runs("sqlite", len(names)), runs("postgres", len(names))
ok = True
print("| strategy (exact) | nDCG@10 SQLite | nDCG@10 PostgreSQL | max metric diff | queries with a different top 10 |")
print("|---|---|---|---|---|")
for i, name in enumerate(names):
    ma = a["strategies"][i]["evaluation"]["means"]
    mb = b["strategies"][i]["evaluation"]["means"]
    diff = max(abs(x - y) for x, y in zip(ma, mb))
    differ = sum(1 for q in ra[i] if ra[i][q] != rb[i].get(q))
    ok &= diff <= 1e-6 and differ == 0
    print(f"| {name} | {ma[0]:.4f} | {mb[0]:.4f} | {diff:.1e} | {differ} of {len(ra[i])} |")
h = json.load(open(f"{work}/postgres-hnsw/results.json"))
rh = runs("postgres-hnsw", len(h["strategies"]))
print()
print("| strategy (HNSW in PostgreSQL) | recall@10 vs exact | nDCG@10 exact | nDCG@10 HNSW |")
print("|---|---|---|---|")
for i, s in enumerate(h["strategies"]):
    exact_i = i + 1  # the approximate list mirrors the exact list after BM25
    hits = sum(len(set(rh[i][q]) & set(rb[exact_i][q])) for q in rb[exact_i])
    total = sum(len(rb[exact_i][q]) for q in rb[exact_i])
    recall = hits / max(total, 1)
    ok &= recall >= 0.95
    print(f"| {s['strategy']} | {recall:.4f} | {b['strategies'][exact_i]['evaluation']['means'][0]:.4f} | {s['evaluation']['means'][0]:.4f} |")
print()
print("PARITY OK" if ok else "PARITY FAILED")
sys.exit(0 if ok else 1)
PY
