#!/usr/bin/env bash
# Run the power-cut torture by hand on any level (docs/TORTURE.md):
#   RAIDKIT=build/raidkit bash tests/lib/torture_run.sh LEVEL [CUTS]
# LEVEL: linear raid0 raid1 raid10 raid5 raid6; CUTS default 20. Prints one summary line
# "torture LEVEL: cycles=.. cuts=.. lost_flush=.. garbage=.. scrub_mismatches=.. ..." and exits
# 0 when every cycle passed every check, 1 otherwise (raid5/6 may still fail where the write
# hole is open). make check runs linear, raid0, raid1 and raid10.
RAIDKIT_SOURCE_DIR=${RAIDKIT_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$RAIDKIT_SOURCE_DIR/tests/lib/common.sh"
. "$RAIDKIT_SOURCE_DIR/tests/lib/torture_lib.sh"
[ $# -ge 1 ] || {
    sed -n '2,8p' "$0" >&2
    exit 2
}
rk_init
torture_level "$1" "${2:-20}"
