#!/usr/bin/env bash
# The PostgreSQL store beside the SQLite store on 100k+ chunks: ingest, and query latency and
# throughput per mode (crates/engine/benches/stores.rs). Starts a throwaway PostgreSQL 18 with
# pgvector (scripts/pg.sh) and removes it afterwards. Needs `ckeep model pull all-MiniLM-L6-v2`
# and the data in CKEEP_DATA (default ../shared/data); the first run fills the embedding cache.
set -euo pipefail
cd "$(dirname "$0")/.."
work="$(mktemp -d /tmp/ckeep-pgbench-XXXXXX)"
chmod 755 "$work"
url="$(scripts/pg.sh start "$work/pg")"
trap 'scripts/pg.sh stop "$work/pg" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
CKEEP_BENCH_POSTGRES="$url" cargo bench -q -p ckeep-engine --bench stores
