#!/usr/bin/env bash
# Benchmark demo: the quick suite (seed-000 workloads, short runs) over every RAID level on four
# emulated 2014 SATA SSDs (sata-ssd-2014 model), printing the seed-style tables and the report path.
#
# Usage: scripts/demo-bench.sh RAIDKIT_BINARY
# Environment: DEMO_DIR (default <repo>/demo-run), SUITE (quick), MODEL (sata-ssd-2014),
#              CONFIGS (single,linear,raid0,raid1,raid10,raid5,raid6), MEMBERS (4), TRIALS (unset:
#              the suite's rule).
# Budget: 8 configurations (with the noop ceiling) x 4 jobs x 3-4 trials x ~3.6 s: under 10 minutes
# on 2 cores. Exit status: raidkit bench's (0 ok, 130 interrupted, 1 failure, 2 misuse).
set -uo pipefail

if [ $# -ne 1 ] || [ ! -x "$1" ]; then
    echo "usage: $0 RAIDKIT_BINARY   (an executable raidkit, e.g. build/raidkit)" >&2
    exit 2
fi
RK=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
REPO=$(cd "$(dirname "$0")/.." && pwd)
DIR=${DEMO_DIR:-$REPO/demo-run}
OUT=$DIR/bench
command -v fio >/dev/null 2>&1 || { echo "demo-bench: fio is missing (scripts/install-deps.sh)" >&2; exit 1; }
export RAIDKIT_SUITES_DIR=$REPO/bench/suites

mkdir -p "$DIR"
rm -rf "$OUT"
T0=$(date +%s)
# Relative --out as the lead asked: run from the demo dir's parent so demo-run/bench lands there.
cd "$(dirname "$DIR")" || exit 1
# The seed-style tables go to report.txt (and $DIR/bench-stdout.txt); the terminal gets the
# seed | predicted | measured comparison, the "how to read this" paragraph and the paths.
"$RK" bench --suite "${SUITE:-quick}" --model "${MODEL:-sata-ssd-2014}" --members "${MEMBERS:-4}" \
    --configs "${CONFIGS:-single,linear,raid0,raid1,raid10,raid5,raid6}" ${TRIALS:+--trials "$TRIALS"} \
    --out "$(basename "$DIR")/bench" >"$DIR/bench-stdout.txt"
rc=$?
T1=$(date +%s)
echo
if [ -s "$OUT/report.json" ]; then
    /usr/bin/python3 "$REPO/scripts/demo-compare.py" "$OUT/report.json" || rc=1
else
    cat "$DIR/bench-stdout.txt" # no JSON: at least the text tables
fi
echo
echo "demo-bench: $((T1 - T0)) s; reports in $OUT:"
echo "  HTML report: $OUT/report.html"
echo "  seed-style text tables: $OUT/report.txt"
echo "  JSON $OUT/report.json, CSV $OUT/report.csv, SVG $OUT/*.svg"
exit $rc
