#!/usr/bin/env bash
# Long libFuzzer runs (bench/RESULTS.md "Fuzzing"): every harness of fuzz/ for SECONDS each
# (default 900: four harnesses, one CPU-hour), one after the other, each over a corpus kept in
# BUILD/fuzz/corpus-NAME (seeded from fuzz/corpus/NAME, growing from run to run). Prints one summary
# line per harness (executions, coverage, corpus size, peak RSS) for RESULTS.md. A crash stops the
# script with status 1; its reproducer is in BUILD/fuzz/crashes and belongs in fuzz/corpus/NAME.
#
# Usage: bench/fuzz.sh BUILD_DIR [SECONDS]   Environment: HARNESSES ["fuzz_superblock ..."]
set -uo pipefail
if [ $# -lt 1 ] || [ ! -d "$1" ]; then
    echo "usage: $0 BUILD_DIR [SECONDS]" >&2
    exit 2
fi
B=$(cd "$1" && pwd)
SECS=${2:-900}
HARNESSES=${HARNESSES:-fuzz_superblock fuzz_handshake fuzz_request fuzz_control}
TOP=$(cd "$(dirname "$0")/.." && pwd)
. "$TOP/bench/lib.sh"
log "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
for h in $HARNESSES; do
    mkdir -p "$B/fuzz/corpus-$h"
    bash "$TOP/fuzz/run.sh" "$B" "$h" "$SECS" "$B/fuzz/corpus-$h" 2>"$B/fuzz/$h.long.log"
    rc=$?
    [ $rc -eq 77 ] && { cat "$B/fuzz/$h.long.log" >&2; exit 77; }
    done_line=$(grep -E "DONE" "$B/fuzz/$h.long.log" | tail -n 1)
    printf '%-16s %ss: %s corpus %s files\n' "$h" "$SECS" "${done_line:-no DONE line}" \
        "$(ls "$B/fuzz/corpus-$h" | wc -l)"
    [ $rc -eq 0 ] || { tail -n 40 "$B/fuzz/$h.long.log" >&2; exit 1; }
done
log "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
