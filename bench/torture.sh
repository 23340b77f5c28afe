#!/usr/bin/env bash
# Power-cut torture, many cuts per level (docs/TORTURE.md).
#
# Default: the fast in-process driver (build/rk_torture, bench/torture/): per level and variant
# CUTS cycles of a fresh array over small tmpfs members and fault members in one power domain,
# random stamped writes / FUA writes / FLUSHes from several threads, one power cut at a random
# member write keeping a random subset of each member's unflushed 4 KiB blocks, restart, checks:
#   fail   - verify with every member, resync, scrub (0 wanted), fail one slot, verify again;
#   remove - restart dirty and degraded without one slot, verify, replace + rebuild, scrub,
#            verify again.
# The levels run in parallel processes (nice 10), each bounded by TORTURE_TIMEOUT seconds.
#
# Usage: bench/torture.sh BUILD_DIR|RAIDKIT_BINARY [CUTS]      CUTS per level and variant [10000]
# Environment: LEVELS [raid1,raid10,raid5,raid6], VARIANTS [fail,remove], TORTURE_SEED [1]
#   (cycle k uses seed TORTURE_SEED+k: replay one with rk_torture --levels L --variants V
#   --seed S --cuts 1 -v), TORTURE_PATH [dev] (dev: the volume's rk_dev from 4 threads; nbd: the
#   real NBD server in-process over a socketpair), TORTURE_MEMBER_MIB [3], TORTURE_TIMEOUT
#   [3600] (seconds per level and variant: the driver then stops and reports the cycles done),
#   TORTURE_JOBS [8] (level/variant processes at once), OUT_DIR [mktemp] (one log each).
#   TORTURE_DRIVER=nbd runs the old external cycle instead (tests/lib/torture_run.sh: a real
#   `raidkit serve` and the Python NBD client per cycle, about 3 s a cycle; LEVELS then may also
#   name linear and raid0).
# Prints one "torture-fast LEVEL VARIANT: cycles=.. cuts=.. failed=.. old=.. new=.. lost_flush=..
# lost_fua=.. garbage=.. read_errors=.. scrub_mismatches=.. after_*=.. seconds=.." line per level
# and variant, the FAIL lines (seed, cut point, what was wrong) and a table. Exit 0 when every
# cycle passed, 1 otherwise.
set -uo pipefail

if [ $# -lt 1 ]; then
    sed -n '2,27p' "$0" >&2
    exit 2
fi
REPO=$(cd "$(dirname "$0")/.." && pwd)
CUTS=${2:-10000}

if [ "${TORTURE_DRIVER:-fast}" = nbd ]; then
    [ -x "$1" ] || { echo "$0: $1: not an executable raidkit binary" >&2; exit 2; }
    RAIDKIT=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
    export RAIDKIT RAIDKIT_SOURCE_DIR=$REPO TORTURE_QUIET=${TORTURE_QUIET:-1}
    rc=0
    for level in $(echo "${LEVELS:-linear,raid0,raid1,raid10,raid5,raid6}" | tr , ' '); do
        echo "[bench $(date +%H:%M:%S)] torture $level: $CUTS cuts" >&2
        bash "$REPO/tests/lib/torture_run.sh" "$level" "$CUTS" | grep '^torture ' || rc=1
    done
    exit $rc
fi

if [ -d "$1" ]; then DRIVER=$1/rk_torture; else DRIVER=$(dirname "$1")/rk_torture; fi
[ -x "$DRIVER" ] || { echo "$0: no rk_torture next to $1 (build it: cmake --build build)" >&2; exit 2; }
OUT=${OUT_DIR:-$(mktemp -d /tmp/rk-torture-bench.XXXXXX)}
mkdir -p "$OUT"
LEVELS=${LEVELS:-raid1,raid10,raid5,raid6}
VARIANTS=${VARIANTS:-fail,remove}
JOBS=${TORTURE_JOBS:-8}
echo "[bench $(date -u +%H:%M:%S)] torture: $CUTS cuts per level and variant ($VARIANTS), levels $LEVELS, logs in $OUT; load: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
start=$(date +%s)
running=0
TMO=${TORTURE_TIMEOUT:-3600}
for level in $(echo "$LEVELS" | tr , ' '); do
    for variant in $(echo "$VARIANTS" | tr , ' '); do
        # --deadline: the driver stops cycling in time and still prints its counts.
        timeout $((TMO + 120)) nice -n 10 "$DRIVER" --levels "$level" --variants "$variant" \
            --cuts "$CUTS" --seed "${TORTURE_SEED:-1}" --path "${TORTURE_PATH:-dev}" \
            --member-mib "${TORTURE_MEMBER_MIB:-3}" --max-fail 0 --deadline "$TMO" \
            >"$OUT/$level-$variant.log" 2>&1 &
        running=$((running + 1))
        if [ "$running" -ge "$JOBS" ]; then
            wait -n
            running=$((running - 1))
        fi
    done
done
wait
end=$(date +%s)
rc=0
grep -h '^FAIL' "$OUT"/*.log | head -40
[ "$(grep -hc '^FAIL' "$OUT"/*.log | paste -sd+ | bc)" -gt 40 ] && echo "(more FAIL lines in $OUT/*.log)"
grep -h '^torture-fast\|^deadline' "$OUT"/*.log
echo
echo "| level | variant | cycles (cut) | failed cycles | refused starts | lost flushed / FUA | garbage | read errors | scrub mismatches | after fail/rebuild: lost / garbage | seconds |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for level in $(echo "$LEVELS" | tr , ' '); do
    for variant in $(echo "$VARIANTS" | tr , ' '); do
        line=$(grep -h "^torture-fast $level $variant:" "$OUT/$level-$variant.log")
        if [ -z "$line" ]; then
            echo "| $level | $variant | (no result: timed out or crashed, see $OUT/$level-$variant.log) |"
            rc=1
            continue
        fi
        f() { echo "$line" | tr ' ' '\n' | sed -n "s/^$1=//p"; }
        [ "$(f failed)" = 0 ] || rc=1
        echo "| $level | $variant | $(f cycles) ($(f cuts)) | $(f failed) | $(f refused) | $(f lost_flush) / $(f lost_fua) | $(f garbage) | $(f read_errors) | $(f scrub_mismatches) | $(f after_lost) / $(f after_garbage) | $(f seconds) |"
    done
done
echo
echo "wall time $((end - start)) s; load at end: $(cut -d' ' -f1-3 /proc/loadavg)"
exit $rc
