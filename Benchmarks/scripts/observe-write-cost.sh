#!/usr/bin/env bash
# The cost of a write that no one observes, against the revision before
# observation (BASELINE, default dd07614): the WriteCost package built
# against each revision from one source, then run in turn. Prints wall-clock
# medians and, when valgrind is installed, callgrind's exact instruction
# counts of the timed part alone.
#   N        objects per workload (default 100000)
#   ROUNDS   wall-clock rounds per revision and workload (default 7)
#   BASELINE the revision to compare with; checked out with `git worktree`
#            under .build-writecost/baseline (BASELINE_TREE: another checkout)
#   WRITECOST_BUILD_PATH  the build folder (default .build-writecost/build)
set -euo pipefail
SWIFT=${SWIFT:-swift}
N=${N:-100000}
ROUNDS=${ROUNDS:-7}
BASELINE=${BASELINE:-dd07614}
here=$(cd "$(dirname "$0")/.." && pwd)
root=$(cd "$here/.." && pwd)
work="$here/.build-writecost"
baseline=${BASELINE_TREE:-$work/baseline}
build=${WRITECOST_BUILD_PATH:-$work/build}
mkdir -p "$work"
if [ ! -d "$baseline" ]; then
    git -C "$root" worktree add --detach "$baseline" "$BASELINE" >/dev/null
fi
git -C "$baseline" checkout -q --detach "$BASELINE"

# One build path for both revisions, so that swift-syntax is built once;
# each binary is copied out after its build.
for side in before after; do
    if [ "$side" = before ]; then strata="$baseline"; else strata="$root"; fi
    STRATA_ROOT="$strata" "$SWIFT" build -c release --package-path "$here/WriteCost" \
        --build-path "$build" 2>&1 | grep -v -e '^\[' -e 'DecodingError' || true
    cp "$build/release/ObservationWriteCost" "$work/ObservationWriteCost-$side"
done
# The binaries must be of the two revisions: only the new one has a commit feed.
if nm "$work/ObservationWriteCost-before" | grep -q CommitFeed \
    || ! nm "$work/ObservationWriteCost-after" | grep -q CommitFeed; then
    echo "The two builds are not of the two revisions." >&2
    exit 1
fi

median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

echo "Unobserved writes, $N objects; before = $BASELINE, after = $(git -C "$root" rev-parse --short HEAD)"
printf '%-8s %14s %14s %8s' workload "before ns/op" "after ns/op" change
if command -v valgrind >/dev/null; then printf ' %16s %16s %8s' "before instr/op" "after instr/op" change; fi
printf '\n'
for mode in each bulk update; do
    : >"$work/wall-$mode-before"
    : >"$work/wall-$mode-after"
    for _ in $(seq "$ROUNDS"); do
        for side in before after; do
            "$work/ObservationWriteCost-$side" "$mode" "$N" "$work/files-$side" | awk '{ print $3 }' >>"$work/wall-$mode-$side"
        done
    done
    before=$(median <"$work/wall-$mode-before")
    after=$(median <"$work/wall-$mode-after")
    printf '%-8s %14.1f %14.1f %+7.2f%%' "$mode" "$(echo "$before / $N" | bc -l)" "$(echo "$after / $N" | bc -l)" \
        "$(echo "($after - $before) * 100 / $before" | bc -l)"
    if command -v valgrind >/dev/null; then
        # The timed function alone, by its mangled name's ends: its closures'
        # names begin alike but end otherwise, and would toggle collection
        # off again.
        case $mode in each) timed=9timedEach ;; bulk) timed=9timedBulk ;; update) timed=11timedUpdate ;; esac
        for side in before after; do
            valgrind --tool=callgrind --collect-atstart=no "--toggle-collect=\$s20ObservationWriteCost$timed*KF" \
                --callgrind-out-file="$work/callgrind-$mode-$side.out" \
                "$work/ObservationWriteCost-$side" "$mode" "$N" "$work/files-$side" >/dev/null 2>&1 &
        done
        wait
        before=$(awk '/^totals:/ { print $2 }' "$work/callgrind-$mode-before.out")
        after=$(awk '/^totals:/ { print $2 }' "$work/callgrind-$mode-after.out")
        printf ' %16.0f %16.0f %+7.3f%%' "$(echo "$before / $N" | bc -l)" "$(echo "$after / $N" | bc -l)" \
            "$(echo "($after - $before) * 100 / $before" | bc -l)"
    fi
    printf '\n'
done
