#!/bin/bash
# degraded_raid10: a 4-member raid10 (near, 2 copies) with each member in turn failing every I/O,
# missing at start, or returning read errors: the array keeps serving correct data.
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
rk_init
rk_need nbdcopy mke2fs e2fsck qemu-img

rk_degraded_suite 4 $((62 * MiB)) --level raid10
echo PASS
