#!/usr/bin/env bash
# The end-to-end RAID10 job (scripts/demo-raid10.sh, `make demo-raid10`) as a test: four members,
# nbdinfo, an ext4 image through nbdcopy + e2fsck, fio --verify=crc32c, then a degraded restart
# that still reads the image back identical. Shorter fio run than the interactive job.
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
for t in fio nbdinfo nbdcopy mke2fs e2fsck /usr/bin/python3; do
    command -v "$t" >/dev/null 2>&1 || [ -x "$t" ] || PATH=$PATH:/usr/sbin command -v "$t" \
        >/dev/null 2>&1 || rk_skip "$t not installed"
done
rk_init_tmp rk-demo-test
DEMO_DIR=$T/run FIO_RUNTIME=${FIO_RUNTIME:-5} MEMBER_SIZE=128M FIO_SIZE=48M \
    bash "$RAIDKIT_SOURCE_DIR/scripts/demo-raid10.sh" "$RAIDKIT"
