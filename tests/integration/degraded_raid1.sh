#!/bin/bash
# degraded_raid1: a 3-way raid1 with each member in turn failing every I/O, missing at start, or
# returning read errors: the array keeps serving correct data and records the failure.
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
rk_init
rk_need nbdcopy mke2fs e2fsck qemu-img

rk_degraded_suite 3 $((31 * MiB)) --level raid1
echo PASS
