#!/usr/bin/env bash
# Installs what the benchmarks need beyond LMDB: SQLite's headers for GRDB.
set -euo pipefail

"$(dirname "$0")/install-lmdb.sh"

if pkg-config --exists sqlite3 2>/dev/null; then
    exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1; then sudo="sudo"; fi

if command -v apt-get >/dev/null 2>&1; then
    echo "Installing libsqlite3-dev with apt-get (GRDB needs it)..."
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq libsqlite3-dev >/dev/null
elif command -v brew >/dev/null 2>&1; then
    : # macOS ships SQLite.
else
    echo "The benchmarks compare with GRDB, which needs SQLite's development package (libsqlite3-dev on Debian/Ubuntu)." >&2
    exit 1
fi
