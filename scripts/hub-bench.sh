#!/usr/bin/env bash
# make hub-bench: the hub's targets (docs/Benchmarks.md, "Hub") on a
# throw-away PostgreSQL cluster with fsync on: release builds of strata-hub
# and strata-hub-bench, `strata-hub serve` in the background, the bench
# against it over HTTP; everything stopped and removed after.
# HUB_BENCH_ARGS passes options (e.g. "--seconds 10 --objects 20000").
set -euo pipefail
cd "$(dirname "$0")/.."

(cd Hub && swift build -c release --product strata-hub && swift build -c release --product strata-hub-bench)
bin=$(cd Hub && swift build -c release --show-bin-path)

dir=$(mktemp -d /tmp/strata-hub-bench.XXXXXX)
hub_pid=""
cleanup() {
  [[ -n "$hub_pid" ]] && kill "$hub_pid" 2>/dev/null && wait "$hub_pid" 2>/dev/null || true
  "$PWD/scripts/pg-cluster.sh" stop "$dir"
}
trap cleanup EXIT
env_line=$(scripts/pg-cluster.sh start "$dir")
export $env_line
"$bin/strata-hub" migrate >/dev/null
"$bin/strata-hub" serve --port 0 --connections 8 >"$dir/hub.out" 2>"$dir/hub.err" &
hub_pid=$!
for _ in $(seq 1 100); do
  grep -q "listening on" "$dir/hub.out" 2>/dev/null && break
  sleep 0.1
done
url=$(sed -n 's/.*listening on \(http[^ ]*\).*/\1/p' "$dir/hub.out")
[[ -n "$url" ]] || { cat "$dir/hub.err" >&2; exit 1; }
echo "hub: $url, PostgreSQL $(postgres --version 2>/dev/null | awk '{print $3}') in $dir, fsync on"
"$bin/strata-hub-bench" --url "$url" ${HUB_BENCH_ARGS:-}
