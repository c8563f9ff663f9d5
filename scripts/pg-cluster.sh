#!/usr/bin/env bash
# A throw-away PostgreSQL cluster for the hub (make hub, make hub-test):
#
#   scripts/pg-cluster.sh start DIR    initdb in DIR/data, start it on a Unix
#                                      socket in DIR (no TCP), create the
#                                      database `strata`; prints the PG*
#                                      variables that reach it
#   scripts/pg-cluster.sh stop DIR     stop it and remove DIR
#   scripts/pg-cluster.sh restart DIR  stop and start it again (data kept)
#   scripts/pg-cluster.sh pause DIR    stop it, keeping DIR (an outage)
#   scripts/pg-cluster.sh resume DIR   start it again after a pause
#
# initdb refuses to run as root, so where the shell is root the server runs
# as `nobody` (DIR is made mode 777 for it). fsync stays on (the default):
# what the hub measures is what a real server does.
set -euo pipefail

command=${1:?usage: pg-cluster.sh start|stop|restart|pause|resume DIR}
dir=${2:?usage: pg-cluster.sh start|stop|restart|pause|resume DIR}

bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
if [[ -z "$bin" || ! -x "$bin/initdb" ]]; then
  echo "PostgreSQL's server is not installed: apt-get install -y postgresql" >&2
  exit 1
fi

as_owner() {
  if [[ $(id -u) == 0 ]]; then
    setpriv --reuid=65534 --regid=65534 --clear-groups "$@"
  else
    "$@"
  fi
}

start_server() {
  as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/postgres.log" -w -t 60 \
    -o "-k $dir -c listen_addresses='' -p 5432 -c max_connections=200" start >/dev/null
}

case "$command" in
  start)
    mkdir -p "$dir"
    chmod 777 "$dir"
    as_owner "$bin/initdb" -D "$dir/data" -A trust -U strata --no-sync >"$dir/initdb.log" 2>&1 || {
      cat "$dir/initdb.log" >&2
      exit 1
    }
    start_server
    as_owner "$bin/psql" -h "$dir" -p 5432 -U strata -d postgres -q -c "CREATE DATABASE strata" >/dev/null
    echo "PGHOST=$dir PGPORT=5432 PGUSER=strata PGDATABASE=strata"
    ;;
  stop)
    if [[ -f "$dir/data/postmaster.pid" ]]; then
      as_owner "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
    fi
    rm -rf "$dir"
    ;;
  restart)
    as_owner "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null
    start_server
    ;;
  pause)
    as_owner "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null
    ;;
  resume)
    start_server
    ;;
  *)
    echo "usage: pg-cluster.sh start|stop|restart|pause|resume DIR" >&2
    exit 2
    ;;
esac
