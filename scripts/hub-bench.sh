#!/usr/bin/env bash
# make hub-bench: the hub's targets (docs/Benchmarks.md, "Hub") on a
# throw-away PostgreSQL cluster with fsync on: release builds of strata-hub
# and strata-hub-bench, `strata-hub serve` processes in the background, the bench
# against it over HTTP; everything stopped and removed after.
# HUB_PROCESSES (default 2) hub processes serve the one database: the ingest
# and pull measures use the first, the load test's devices switch between
# them at random. HUB_BENCH_ARGS passes options (e.g. "--seconds 10";
# "--ingest-only --rounds 3": only ingest without and with sync rules, three
# pairs in alternating order); HUB_CONNECTIONS (default 8) is each
# process's pool of PostgreSQL connections; with HUB_METRICS_DIR, each
# process serves /metrics and its text is saved there (hubN.metrics) when
# the bench ends, with PostgreSQL's log. HUB_EXPLAIN_MS=N logs the plan
# (EXPLAIN ANALYZE, BUFFERS) of every statement that takes N ms or more to
# PostgreSQL's log (auto_explain); keep it with HUB_METRICS_DIR.
set -euo pipefail
cd "$(dirname "$0")/.."

(cd Hub && swift build -c release --product strata-hub && swift build -c release --product strata-hub-bench)
bin=$(cd Hub && swift build -c release --show-bin-path)

dir=$(mktemp -d /tmp/strata-hub-bench.XXXXXX)
hub_pids=()
cleanup() {
  if [[ -n "${HUB_METRICS_DIR:-}" ]]; then
    mkdir -p "$HUB_METRICS_DIR"
    for i in $(seq 1 "${#hub_pids[@]}"); do
      curl -s "http://127.0.0.1:$((metrics_base + i))/metrics" >"$HUB_METRICS_DIR/hub$i.metrics" || true
    done
    cp "$dir/postgres.log" "$HUB_METRICS_DIR/" 2>/dev/null || true
  fi
  for pid in "${hub_pids[@]}"; do kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true; done
  "$PWD/scripts/pg-cluster.sh" stop "$dir"
}
trap cleanup EXIT
env_line=$(scripts/pg-cluster.sh start "$dir")
export $env_line
"$bin/strata-hub" migrate >/dev/null
if [[ -n "${HUB_EXPLAIN_MS:-}" ]]; then
  # ALTER SYSTEM knows auto_explain's settings once the module is loaded.
  settings=(-c "LOAD 'auto_explain'")
  for setting in "session_preload_libraries = 'auto_explain'" \
    "auto_explain.log_min_duration = ${HUB_EXPLAIN_MS}" "auto_explain.log_analyze = on" \
    "auto_explain.log_buffers = on" "auto_explain.log_nested_statements = on"; do
    settings+=(-c "ALTER SYSTEM SET $setting")
  done
  psql -q "${settings[@]}" -c "SELECT pg_reload_conf()" >/dev/null
fi
processes=${HUB_PROCESSES:-2}
connections=${HUB_CONNECTIONS:-8}
metrics_base=9300
# A thousand devices are a thousand open files (and their locks) in the
# bench's process.
ulimit -n "$(ulimit -Hn)"

urls=()
listening=()
for i in $(seq 1 "$processes"); do
  metrics=()
  [[ -n "${HUB_METRICS_DIR:-}" ]] && metrics=(--metrics-port $((metrics_base + i)))
  "$bin/strata-hub" serve --port 0 --connections "$connections" "${metrics[@]}" >"$dir/hub$i.out" 2>"$dir/hub$i.err" &
  hub_pids+=($!)
  for _ in $(seq 1 100); do
    grep -q "listening on" "$dir/hub$i.out" 2>/dev/null && break
    sleep 0.1
  done
  url=$(sed -n 's/.*listening on \(http[^ ]*\).*/\1/p' "$dir/hub$i.out")
  [[ -n "$url" ]] || { cat "$dir/hub$i.err" >&2; exit 1; }
  urls+=(--url "$url")
  listening+=("$url")
done
echo "hubs: ${listening[*]} ($connections connections each), PostgreSQL $(postgres --version 2>/dev/null | awk '{print $3}') in $dir, fsync on"
"$bin/strata-hub-bench" "${urls[@]}" ${HUB_BENCH_ARGS:-}
