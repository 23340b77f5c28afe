#!/usr/bin/env bash
# Power-cut torture on linear (docs/TORTURE.md): TORTURE_CUTS cycles (default 8) of random writes,
# FLUSHes and FUA writes through NBD, a power cut of every member at a random member write with
# each member keeping a random subset of its unflushed 4 KiB blocks, SIGKILL, restart. Every
# flushed and FUA write must read back exactly, every block must hold its old or a newer
# generation (keyed BLAKE2b stamps), and scrub must find nothing. This checks the engine's
# flush/FUA ordering; the levels with redundancy need resync (issue 8) and run by hand:
# tests/lib/torture_run.sh LEVEL, bench/torture.sh.
. "$RAIDKIT_SOURCE_DIR/tests/lib/common.sh"
. "$RAIDKIT_SOURCE_DIR/tests/lib/torture_lib.sh"
rk_init
torture_teeth
TORTURE_QUIET=${TORTURE_QUIET:-1} torture_level linear "${TORTURE_CUTS:-8}" || rk_fail "$TORTURE_SUMMARY"
summary=$TORTURE_SUMMARY
echo "$summary" | grep -Eq " cuts=[1-9]" || rk_fail "no cycle cut the power: $summary"
echo "PASS: torture linear"
