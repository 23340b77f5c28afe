#!/bin/bash
# level_raid10: raid10 (md near layout, 2 copies) over 4 and over 3 members end to end through the
# NBD server: nbdinfo, fio crc32c verify, ext4 image round trip across a shuffled restart, stamps.
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
rk_init
rk_need nbdinfo nbdcopy fio mke2fs e2fsck qemu-img

rk_members 4 32M
rk_level_case $((62 * MiB)) "2 0 3 1" --level raid10
# 3 members: 496 chunks of 64K each, 3 * 496 / 2 = 744 chunks = 46.5 MiB.
rk_members 3 32M n
rk_level_case $((744 * 64 * 1024)) "1 2 0" --level 10
echo PASS
