#!/bin/bash
# level_raid0: a 3-member raid0 (default 64K chunk, and 16K) end to end through the NBD server:
# nbdinfo, fio crc32c verify, ext4 image round trip across a shuffled restart, stamps.
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
rk_init
rk_need nbdinfo nbdcopy fio mke2fs e2fsck qemu-img

rk_members 3 32M
rk_level_case $((93 * MiB)) "2 0 1" --level raid0
rk_members 3 32M n
rk_level_case $((93 * MiB)) "1 2 0" --level 0 --chunk 16K
echo PASS
