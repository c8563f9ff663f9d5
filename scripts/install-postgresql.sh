#!/usr/bin/env bash
# Installs PostgreSQL's server (for the hub's throw-away clusters) when it is
# missing. The hub needs PostgreSQL 13 or newer; Debian 12 ships 15.
set -euo pipefail

if ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
    exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1; then sudo="sudo"; fi

if command -v apt-get >/dev/null 2>&1; then
    echo "Installing postgresql with apt-get..."
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq postgresql >/dev/null
    # The package starts a cluster of its own; the hub uses throw-away ones.
    if command -v pg_ctlcluster >/dev/null 2>&1; then
        for cluster in /etc/postgresql/*/main; do
            [ -d "$cluster" ] && $sudo pg_ctlcluster "$(basename "$(dirname "$cluster")")" main stop 2>/dev/null || true
        done
    fi
else
    echo "The hub needs PostgreSQL's server: install it (postgresql on Debian/Ubuntu), then run make again." >&2
    exit 1
fi
