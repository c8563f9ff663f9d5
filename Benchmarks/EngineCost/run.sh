#!/usr/bin/env bash
# The engine's write path, per object: callgrind instruction counts (Ir)
# of each scenario's measured function, then release wall time, best of
# ROUNDS, for the Strata checkout STRATA_ROOT.
#
#   STRATA_ROOT=/work/base SCRATCH=/work/wt-cost/.build-before Benchmarks/EngineCost/run.sh
#   STRATA_ROOT=/work/main SCRATCH=/work/wt-cost/.build-after  Benchmarks/EngineCost/run.sh
#
# Environment (all optional):
#   STRATA_ROOT  the Strata checkout to build against (default: this one)
#   SCRATCH      swift build's scratch path; one per checkout, kept between
#                runs so that builds are incremental (default: .build-enginecost
#                at the root of this repository)
#   N            objects under callgrind (default 20000)
#   WALL_N       objects for the wall time (default 100000)
#   ROUNDS       wall-time rounds, the best is reported (default 5)
#   SCENARIOS    which scenarios, space-separated (default: all)
#   SKIP_CALLGRIND=1, SKIP_WALL=1  leave out one half
#   BASELINE     another build's EngineCost binary (the BEFORE one, e.g.
#                /work/wt-cost/.build-before/x86_64-unknown-linux-gnu/release/EngineCost):
#                the wall time then alternates the two, ROUNDS times two
#                rounds each, and prints both bests and their ratio, which
#                a shared, busy machine disturbs far less than two runs
#                made minutes apart
# Callgrind's files, callgrind_annotate of each (inclusive and self,
# demangled) are left in $SCRATCH/callgrind; TOP=K (default 20) prints the K
# costliest functions inclusive under each measured function, leaving out
# the measured function itself and its callers, then the K/2 costliest by
# self cost (TOP=0: neither).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
root=$(cd "${STRATA_ROOT:-$repo}" && pwd)
scratch=${SCRATCH:-$repo/.build-enginecost}
n=${N:-20000}
wall_n=${WALL_N:-100000}
rounds=${ROUNDS:-5}
scenarios=${SCENARIOS:-apply insert insert-synced insert-sync update-kept update-kept-sync migration scan scan-dynamic lookup lookup-dynamic}
top=${TOP:-20}

measured() {
    case $1 in
        apply) echo measuredApply ;;
        insert | insert-synced | insert-sync) echo measuredInsert ;;
        update-kept | update-kept-sync) echo measuredUpdateKept ;;
        migration) echo measuredMigration ;;
        scan) echo measuredScan ;;
        scan-dynamic) echo measuredDynamicScan ;;
        lookup) echo measuredLookups ;;
        lookup-dynamic) echo measuredDynamicLookups ;;
        *) echo "unknown scenario $1" >&2; exit 2 ;;
    esac
}

dirty=$(git -C "$root" status --porcelain --untracked-files=no -- Sources 2>/dev/null | awk 'END {print NR}')
echo "Strata: $root at $(git -C "$root" rev-parse HEAD 2>/dev/null || echo '?')$([ "${dirty:-0}" = 0 ] || echo ", with $dirty uncommitted files in Sources")"
echo "date: $(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -m), $(nproc) cores, $(swift --version 2>&1 | awk 'NR == 1')"

(cd "$here" && STRATA_ROOT="$root" swift build -c release --scratch-path "$scratch" >&2)
bin="$(cd "$here" && STRATA_ROOT="$root" swift build -c release --scratch-path "$scratch" --show-bin-path)/EngineCost"
out="$scratch/callgrind"
mkdir -p "$out"

if [ "${SKIP_CALLGRIND:-0}" != 1 ]; then
    echo
    echo "callgrind, N = $n (the measured function only)"
    printf '%-14s %16s %14s\n' scenario "Ir" "Ir per object"
    for scenario in $scenarios; do
        fn=$(measured "$scenario")
        # The toggle matches every symbol holding the name: exactly one must.
        symbols=$(nm "$bin" | awk '$2 ~ /^[Tt]$/ {print $3}' | grep -c "$fn" || true)
        if [ "$symbols" != 1 ]; then
            echo "warning: $symbols symbols match $fn; the toggle may not count the whole function" >&2
        fi
        file="$out/$scenario.callgrind"
        # A fixed hash seed: Set and Dictionary then probe alike in every
        # run, which keeps the counts of one revision within a few Ir.
        SWIFT_DETERMINISTIC_HASHING=1 valgrind --tool=callgrind --collect-atstart=no --toggle-collect="*$fn*" \
            --callgrind-out-file="$file" "$bin" "$scenario" "$n" 1 >/dev/null 2>"$out/$scenario.valgrind.log"
        ir=$(awk '/^(totals|summary):/ {print $2; exit}' "$file")
        callgrind_annotate --inclusive=yes "$file" 2>/dev/null | swift demangle --simplified \
            >"$out/$scenario.inclusive.txt" || true
        callgrind_annotate "$file" 2>/dev/null | swift demangle --simplified >"$out/$scenario.self.txt" || true
        printf '%-14s %16s %14.0f\n' "$scenario" "$ir" "$(echo "$ir / $n" | bc -l)"
    done
    if [ "$top" -gt 0 ]; then
        for scenario in $scenarios; do
            echo
            echo "$scenario: the $top costliest functions, inclusive (Ir per object, share)"
            # Lines: "IR (SHARE%)  FILE:FUNCTION [OBJECT]". Left out: the
            # frames from the process's start to the measured function, this
            # file's helpers and closures, and thunks (each repeats the cost
            # of the function it calls); a function listed twice (under two
            # source files, when code of one is inlined into another) once.
            grep -E '^ *[0-9,]+ \( *[0-9.]+%\)  ' "$out/$scenario.inclusive.txt" \
                | grep -v -E 'PROGRAM TOTALS|libc_start|below main|EngineCost_main|ld-linux' \
                | grep -v -E '(measured[A-Za-z]*|run[A-Za-z]*|insertAll|updateAll|sumOf[A-Za-z]*)\(_:' \
                | grep -v -E 'partial apply for|reabstraction thunk' \
                | sed -E 's/ \[[^]]*\]$//; s/  [^ :]*:/  /' \
                | awk -v n="$n" -v top="$top" '{
                    ir = $1; gsub(",", "", ir); $1 = ""
                    name = substr($0, index($0, "%)") + 3)
                    if (!seen[name]++ && ++shown <= top) printf "%10.0f %s\n", ir / n, $0
                }' || true
            echo "$scenario: the $((top / 2)) costliest functions, self cost (Ir per object, share)"
            grep -E '^ *[0-9,]+ \( *[0-9.]+%\)  ' "$out/$scenario.self.txt" \
                | grep -v 'PROGRAM TOTALS' \
                | sed -E 's/ \[([^]]*)\]$/ [\1]/; s/  [^ :]*:/  /; s#\[[^]]*/([^]/]*)\]$#[\1]#' \
                | awk -v n="$n" -v top="$((top / 2))" '{
                    ir = $1; gsub(",", "", ir); $1 = ""
                    if (++shown <= top) printf "%10.0f %s\n", ir / n, $0
                }' || true
        done
    fi
fi

if [ "${SKIP_WALL:-0}" != 1 ] && [ -n "${BASELINE:-}" ]; then
    echo
    echo "wall time, release, N = $wall_n, alternating with BASELINE $BASELINE, best of $((2 * rounds)) each"
    printf '%-14s %12s %12s %18s\n' scenario "ms" "baseline ms" "baseline / this"
    for scenario in $scenarios; do
        # Lines: SCENARIO N NANOSECONDS [FIELD CHANGES]; two rounds a process.
        results=$(for _ in $(seq "$rounds"); do
            "$bin" "$scenario" "$wall_n" 2 | sed 's/^/this /'
            "$BASELINE" "$scenario" "$wall_n" 2 | sed 's/^/baseline /'
        done)
        echo "$results" | awk -v s="$scenario" -v n="$wall_n" '
            $1 == "this" && (a == "" || $4 < a) { a = $4; fa = $5 }
            $1 == "baseline" && (b == "" || $4 < b) { b = $4; fb = $5 }
            END {
                printf "%-14s %12.1f %12.1f %17.2fx", s, a / 1e6, b / 1e6, b / a
                if (fa != "") printf "   %.0f vs %.0f field changes/s", fa * 1e9 / a, fb * 1e9 / b
                printf "\n"
            }'
    done
elif [ "${SKIP_WALL:-0}" != 1 ]; then
    echo
    echo "wall time, release, N = $wall_n, best of $rounds"
    printf '%-14s %12s %14s %14s\n' scenario "ms" "ns per object" "objects/s"
    for scenario in $scenarios; do
        # Lines: SCENARIO N NANOSECONDS [FIELD CHANGES]
        best=$("$bin" "$scenario" "$wall_n" "$rounds" | sort -n -k3 | awk 'NR == 1')
        ns=$(echo "$best" | awk '{print $3}')
        printf '%-14s %12.1f %14.0f %14.0f' "$scenario" "$(echo "$ns / 1000000" | bc -l)" \
            "$(echo "$ns / $wall_n" | bc -l)" "$(echo "$wall_n * 1000000000 / $ns" | bc -l)"
        fields=$(echo "$best" | awk '{print $4}')
        if [ -n "$fields" ]; then
            printf '   %.0f field changes/s' "$(echo "$fields * 1000000000 / $ns" | bc -l)"
        fi
        echo
    done
fi
