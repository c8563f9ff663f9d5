#!/usr/bin/env bash
# make hub-test: the hub's tests (Hub/Tests) against a throw-away PostgreSQL
# cluster, which this script starts and removes whatever the tests do. Each
# test makes a database of its own in it; HUB_TEST_CLUSTER names the folder,
# for the tests that restart PostgreSQL under a running hub.
set -euo pipefail
cd "$(dirname "$0")/.."

dir=$(mktemp -d /tmp/strata-hub-test.XXXXXX)
trap "\"$PWD/scripts/pg-cluster.sh\" stop \"$dir\"" EXIT
env_line=$(scripts/pg-cluster.sh start "$dir")
export $env_line
export HUB_TEST_CLUSTER="$dir"
export HUB_CLUSTER_SCRIPT="$PWD/scripts/pg-cluster.sh"
cd Hub
swift build --build-tests
export HUB_BINARY="$(swift build --show-bin-path)/strata-hub"
# Every test is Swift Testing's: XCTest's runner would only say "Executed 0 tests".
swift test --skip-build --disable-xctest "$@"
