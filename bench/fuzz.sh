#!/usr/bin/env bash
# Long libFuzzer runs (bench/RESULTS.md "Fuzzing"): every harness of fuzz/ for SECONDS each
# (default 900: four harnesses, one CPU-hour on an idle machine), one after the other (or all at
# once with PARALLEL=1), each over a corpus kept in BUILD/fuzz/corpus-NAME (seeded from
# fuzz/corpus/NAME, growing from run to run). SECONDS are wall-clock seconds (libFuzzer's
# -max_total_time), so on a loaded machine or under NICE the CPU time is less: each summary line
# says the CPU seconds the harness really got, beside executions, coverage, corpus size. A crash
# makes the script exit 1; its reproducer is in BUILD/fuzz/crashes and belongs in
# fuzz/corpus/NAME.
#
# Usage: bench/fuzz.sh BUILD_DIR [SECONDS]
# Environment: HARNESSES ["fuzz_superblock ..."]  PARALLEL [0]  NICE [0] (nice level, 0..19)
set -uo pipefail
if [ $# -lt 1 ] || [ ! -d "$1" ]; then
    echo "usage: $0 BUILD_DIR [SECONDS]" >&2
    exit 2
fi
B=$(cd "$1" && pwd)
SECS=${2:-900}
HARNESSES=${HARNESSES:-fuzz_superblock fuzz_handshake fuzz_request fuzz_control}
PARALLEL=${PARALLEL:-0}
NICE=${NICE:-0}
if ! [[ "$SECS" =~ ^[0-9]+$ ]] || ! [[ "$NICE" =~ ^[0-9]+$ ]] || [ "$NICE" -gt 19 ]; then
    echo "bench: bad SECONDS '$SECS' or NICE '$NICE' (0..19)" >&2
    exit 2
fi
TOP=$(cd "$(dirname "$0")/.." && pwd)
. "$TOP/bench/lib.sh"

# one NAME: run harness NAME, its CPU seconds (user+system of the run) into BUILD/fuzz/NAME.cpu.
one() {
    local TIMEFORMAT='%U %S'
    mkdir -p "$B/fuzz/corpus-$1"
    { time nice -n "$NICE" bash "$TOP/fuzz/run.sh" "$B" "$1" "$SECS" "$B/fuzz/corpus-$1" >/dev/null \
        2>"$B/fuzz/$1.long.log"; } 2>"$B/fuzz/$1.cpu"
}

# report NAME RC: the summary line of harness NAME; 0, 77 (skipped) or 1 (crash/failure).
report() {
    [ "$2" -eq 77 ] && { cat "$B/fuzz/$1.long.log" >&2; return 77; }
    local done_line cpu
    done_line=$(grep -E "DONE" "$B/fuzz/$1.long.log" | tail -n 1)
    cpu=$(awk '{ printf "%.0f", $1 + $2 }' "$B/fuzz/$1.cpu" 2>/dev/null)
    printf '%-16s %ss wall, %s CPU s: %s corpus %s files\n' "$1" "$SECS" "${cpu:-?}" \
        "${done_line:-no DONE line}" "$(ls "$B/fuzz/corpus-$1" | wc -l)"
    [ "$2" -eq 0 ] || { tail -n 40 "$B/fuzz/$1.long.log" >&2; return 1; }
}

log "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
status=0
if [ "$PARALLEL" = 1 ]; then
    # Build once first (run.sh serializes the build, but four at once would all wait for it).
    bash "$TOP/fuzz/run.sh" "$B" "${HARNESSES%% *}" 1 >/dev/null 2>&1
    declare -A PIDS
    for h in $HARNESSES; do
        one "$h" &
        PIDS[$h]=$!
    done
    for h in $HARNESSES; do
        wait "${PIDS[$h]}"
        report "$h" $? || status=$?
    done
else
    for h in $HARNESSES; do
        one "$h"
        report "$h" $? || { status=$?; break; }
    done
fi
log "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
exit $status
