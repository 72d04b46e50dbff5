#!/usr/bin/env bash
# Shards a Context Keeper store by document across PostgreSQL servers, behind one coordinator
# (the recipe of docs/postgres.md, as a script):
#
#   scripts/pg_shard.sh COORDINATOR_URL SHARD_URL [SHARD_URL ...] [--hnsw REPR:DIM ...]
#
# Each shard gets the store's tables (crates/store/src/pg/schema.sql) and, per --hnsw, the HNSW
# index of a representation (e.g. plain:384 for all-MiniLM-L6-v2). The coordinator gets
# postgres_fdw and the six document tables as hash partitions (by document key) on foreign
# tables, one per shard; `ckeep --store COORDINATOR_URL add …` then creates the rest (metadata,
# sequences, lexical statistics) on the coordinator itself. All servers need pgvector; the
# coordinator connects to the shards as the user in each SHARD_URL (add a password there if the
# shards ask for one). Run it on empty databases.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
coordinator=""
shards=()
hnsw=()
while [ $# -gt 0 ]; do
  case "$1" in
    --hnsw) hnsw+=("$2"); shift 2 ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) if [ -z "$coordinator" ]; then coordinator="$1"; else shards+=("$1"); fi; shift ;;
  esac
done
if [ -z "$coordinator" ] || [ ${#shards[@]} -lt 1 ]; then
  sed -n '2,13p' "$0" >&2
  exit 2
fi
psql="$(command -v psql || echo "$("$here/pg.sh" bin -)/psql")"
run() { "$psql" -X -q -v ON_ERROR_STOP=1 "$@"; }

# URL parts, for CREATE SERVER and USER MAPPING.
part() { python3 -c 'import sys, urllib.parse as u; p = u.urlparse(sys.argv[1]); print({"host": p.hostname or "localhost", "port": p.port or 5432, "db": (p.path or "/postgres")[1:] or "postgres", "user": u.unquote(p.username or ""), "password": u.unquote(p.password or "")}[sys.argv[2]])' "$1" "$2"; }

for shard in "${shards[@]}"; do
  run "$shard" -f "$here/../crates/store/src/pg/schema.sql"
  for spec in "${hnsw[@]}"; do
    repr="${spec%:*}"; dim="${spec##*:}"
    name="vectors_hnsw_$(python3 -c 'import sys; h = 0xcbf29ce484222325
for b in sys.argv[1].encode(): h = ((h ^ b) * 0x100000001b3) % 2**64
print(f"{h:016x}")' "$repr")"
    run "$shard" -c "CREATE INDEX IF NOT EXISTS $name ON ckeep.vectors USING hnsw ((vec::vector($dim)) vector_cosine_ops) WHERE repr = '${repr//\'/\'\'}'"
  done
done

n=${#shards[@]}
sql="CREATE EXTENSION IF NOT EXISTS vector;
CREATE EXTENSION IF NOT EXISTS postgres_fdw;
CREATE SCHEMA ckeep;
CREATE TABLE ckeep.documents (key bigint NOT NULL, id text NOT NULL, title text NOT NULL, text bytea NOT NULL, metadata text, source text NOT NULL, hash text NOT NULL) PARTITION BY HASH (key);
CREATE TABLE ckeep.chunks (id bigint NOT NULL, doc bigint NOT NULL, ordinal integer NOT NULL, depth integer NOT NULL, parent integer, leaf boolean NOT NULL, start_byte bigint NOT NULL, end_byte bigint NOT NULL, headings text) PARTITION BY HASH (doc);
CREATE TABLE ckeep.lex_docs (field text NOT NULL, chunk bigint NOT NULL, doc bigint NOT NULL, len integer NOT NULL, terms text NOT NULL) PARTITION BY HASH (doc);
CREATE TABLE ckeep.postings (field text NOT NULL, term text NOT NULL, chunk bigint NOT NULL, doc bigint NOT NULL, tf integer NOT NULL, len integer NOT NULL) PARTITION BY HASH (doc);
CREATE TABLE ckeep.vectors (repr text NOT NULL, chunk bigint NOT NULL, doc bigint NOT NULL, vec vector NOT NULL) PARTITION BY HASH (doc);
CREATE TABLE ckeep.summaries (doc bigint NOT NULL, name text NOT NULL, text text NOT NULL) PARTITION BY HASH (doc);
"
for i in $(seq 0 $((n - 1))); do
  s="${shards[$i]}"
  password="$(part "$s" password)"
  sql+="CREATE SERVER ckeep_shard_$i FOREIGN DATA WRAPPER postgres_fdw
  OPTIONS (host '$(part "$s" host)', port '$(part "$s" port)', dbname '$(part "$s" db)', extensions 'vector', fetch_size '10000', batch_size '1000', async_capable 'true');
CREATE USER MAPPING FOR PUBLIC SERVER ckeep_shard_$i OPTIONS (user '$(part "$s" user)'${password:+, password '$password'});
"
  for table in documents chunks lex_docs postings vectors summaries; do
    sql+="CREATE FOREIGN TABLE ckeep.${table}_shard_$i PARTITION OF ckeep.$table FOR VALUES WITH (MODULUS $n, REMAINDER $i) SERVER ckeep_shard_$i OPTIONS (schema_name 'ckeep', table_name '$table');
"
  done
done
run "$coordinator" -1 -c "$sql"
echo "sharded across $n servers: ckeep --store '$coordinator' add …" >&2
