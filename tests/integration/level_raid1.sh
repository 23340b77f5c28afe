#!/bin/bash
# level_raid1: 2- and 3-way raid1 mirrors end to end through the NBD server: nbdinfo, fio crc32c
# verify, ext4 image round trip across a shuffled restart, stamps.
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
rk_init
rk_need nbdinfo nbdcopy fio mke2fs e2fsck qemu-img

rk_members 2 32M
rk_level_case $((31 * MiB)) "1 0" --level raid1
rk_members 3 32M n
rk_level_case $((31 * MiB)) "2 0 1" --level 1
echo PASS
