#!/usr/bin/env bash
# Power-cut torture (docs/TORTURE.md) over a writeback cache on raid1: TORTURE_CUTS cycles
# (default 6) of random writes, FLUSHes and FUA writes through NBD, a power cut of the cache
# device and every member at a random device write (one power domain, each keeping a random subset
# of its unflushed 4 KiB blocks), SIGKILL, restart through the cache. The cache always loads;
# every flushed and FUA write reads back exactly, every block holds its old or a newer
# generation, also after failing a member and after detaching the cache (all written back).
. "$RAIDKIT_SOURCE_DIR/tests/lib/common.sh"
. "$RAIDKIT_SOURCE_DIR/tests/integration/manage_lib.bash"
. "$RAIDKIT_SOURCE_DIR/tests/lib/torture_lib.sh"
. "$RAIDKIT_SOURCE_DIR/tests/lib/cache_lib.sh"
rk_init
TORTURE_CACHE=writeback TORTURE_QUIET=${TORTURE_QUIET:-1} \
    torture_level "${TORTURE_LEVEL:-raid1}" "${TORTURE_CUTS:-6}" || rk_fail "$TORTURE_SUMMARY"
summary=$TORTURE_SUMMARY
echo "$summary" | grep -Eq " cuts=[1-9]" || rk_fail "no cycle cut the power: $summary"
echo "PASS: torture over a writeback cache"
