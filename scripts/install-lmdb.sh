#!/usr/bin/env bash
# Installs LMDB's headers and library (and pkg-config) when they are missing.
set -euo pipefail

if command -v pkg-config >/dev/null 2>&1 && pkg-config --exists lmdb; then
    exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1; then sudo="sudo"; fi

if command -v apt-get >/dev/null 2>&1; then
    echo "Installing liblmdb-dev and pkg-config with apt-get..."
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq liblmdb-dev pkg-config >/dev/null
elif command -v brew >/dev/null 2>&1; then
    echo "Installing lmdb and pkg-config with Homebrew..."
    brew install lmdb pkg-config
else
    echo "Strata needs LMDB: install your system's LMDB development package" >&2
    echo "(liblmdb-dev on Debian/Ubuntu, lmdb-devel on Fedora, lmdb on Homebrew) and pkg-config, then run make again." >&2
    exit 1
fi
