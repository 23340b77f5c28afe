#!/bin/bash
# level_linear: linear (concatenation) arrays of 2 equal and 3 unequal members end to end through
# the NBD server: nbdinfo, fio crc32c verify, ext4 image round trip across a shuffled restart.
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
rk_init
rk_need nbdinfo nbdcopy fio mke2fs e2fsck qemu-img

rk_members 2 32M
rk_level_case $((62 * MiB)) "1 0" --level linear

# Unequal members concatenate: 31 + 47 + 39 MiB of data.
rk_members 3 32M n
truncate -s 48M "${M[1]}"
truncate -s 40M "${M[2]}"
rk_level_case $((117 * MiB)) "2 0 1" --level linear
echo PASS
