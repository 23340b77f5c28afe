#!/usr/bin/env bash
# Power-cut torture, many cuts per level (docs/TORTURE.md): the cycle of tests/lib/torture_lib.sh
# (random writes/FLUSH/FUA through NBD, one shared power cut of every member at a random member
# write keeping a random subset of each member's unflushed 4 KiB blocks, SIGKILL, restart,
# verify, scrub, fail a member, verify again), CUTS times per level.
#
# Usage: bench/torture.sh RAIDKIT_BINARY [CUTS]      CUTS per level, default 10000
# Environment: LEVELS [linear,raid0,raid1,raid10,raid5,raid6], TORTURE_SEED [1] (first seed;
#   cycle k uses seed TORTURE_SEED+k, so any cycle can be replayed alone), TORTURE_CUTMAX [1500],
#   TORTURE_OPS [3000], TORTURE_FAIL [1], TORTURE_QUIET [1].
# Prints one "torture LEVEL: cycles=.. cuts=.. old=.. new=.. lost_flush=.. lost_fua=.. garbage=..
# read_errors=.. scrub_mismatches=.. fail_verify=.. fail_scrub=.. failed_*=.." line per level on
# stdout (counts in 4 KiB blocks; fail_* count cycles). A cycle takes about 3 s.
# Exit 0 when every level passed every check, 1 otherwise.
set -uo pipefail

if [ $# -lt 1 ] || [ ! -x "$1" ]; then
    echo "usage: $0 RAIDKIT_BINARY [CUTS]" >&2
    exit 2
fi
REPO=$(cd "$(dirname "$0")/.." && pwd)
RAIDKIT=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
CUTS=${2:-10000}
export RAIDKIT RAIDKIT_SOURCE_DIR=$REPO TORTURE_QUIET=${TORTURE_QUIET:-1}
rc=0
for level in $(echo "${LEVELS:-linear,raid0,raid1,raid10,raid5,raid6}" | tr , ' '); do
    echo "[bench $(date +%H:%M:%S)] torture $level: $CUTS cuts" >&2
    # Each level in its own process: its own temp dir and cleanup.
    bash "$REPO/tests/lib/torture_run.sh" "$level" "$CUTS" | grep '^torture ' || rc=1
done
exit $rc
