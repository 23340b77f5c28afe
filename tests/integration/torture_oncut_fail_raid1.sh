#!/usr/bin/env bash
# Power-cut torture on raid1 with on-cut=fail (docs/TORTURE.md): at the cut every member fails
# its I/O with EIO but the server keeps answering, so a write or FLUSH that lost one mirror is
# completed while the superblock write recording that member's failure fails too. The engine must
# then fail the request (EIO) instead of acknowledging it (docs/ARCHITECTURE.md "Durability",
# member failure): TORTURE_CUTS cycles (default 8), and no flushed or FUA block may be lost, no
# block may be garbage, before or after `fail --slot`. Scrub mismatches are not checked here:
# nothing resyncs the mirrors after a crash yet (issue 8, resync).
. "$RAIDKIT_SOURCE_DIR/tests/lib/common.sh"
. "$RAIDKIT_SOURCE_DIR/tests/lib/torture_lib.sh"
rk_init
TORTURE_ONCUT=fail TORTURE_QUIET=${TORTURE_QUIET:-1} torture_level raid1 "${TORTURE_CUTS:-8}"
summary=$TORTURE_SUMMARY
echo "$summary" | grep -Eq " cuts=[1-9]" || rk_fail "no cycle cut the power: $summary"
for k in lost_flush lost_fua garbage read_errors fail_verify failed_lost_flush failed_lost_fua \
    failed_garbage failed_read_errors fail_verify_failed; do
    echo "$summary" | grep -Eq " $k=0( |$)" || rk_fail "$k not 0: $summary"
done
echo "PASS: torture on-cut=fail raid1"
