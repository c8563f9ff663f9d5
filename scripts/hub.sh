#!/usr/bin/env bash
# make hub: a development hub on a throw-away PostgreSQL cluster. Builds
# strata-hub, starts a cluster in a temporary folder, migrates it, adds a
# device to a tenant and serves; prints the URL, the device's token and
# the command that adds another device (the cluster's PG* variables set).
# Ctrl-C stops the hub and removes the cluster.
#
#   HUB_PORT (8080)   the port to serve on
#   HUB_TENANT        the tenant (dataset UUID); a new one by default
set -euo pipefail
cd "$(dirname "$0")/.."

port=${HUB_PORT:-8080}
tenant=${HUB_TENANT:-$(cat /proc/sys/kernel/random/uuid)}
(cd Hub && swift build -c release --product strata-hub)
hub=Hub/.build/release/strata-hub

dir=$(mktemp -d /tmp/strata-hub.XXXXXX)
trap 'scripts/pg-cluster.sh stop "$dir"' EXIT
env_line=$(scripts/pg-cluster.sh start "$dir")
export $env_line
"$hub" migrate
device=$("$hub" device add --tenant "$tenant" --name make-hub)

echo
echo "PostgreSQL: $dir (removed on exit)"
echo "tenant (the app's dataset): $tenant"
echo "$device"
echo "hub URL: http://127.0.0.1:$port"
echo
echo "Another device's token (in another terminal, while this one serves):"
echo "  $env_line $PWD/$hub device add --tenant $tenant --name NAME"
echo
"$hub" serve --port "$port"
