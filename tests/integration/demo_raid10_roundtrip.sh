#!/usr/bin/env bash
# The end-to-end RAID10 job (scripts/demo-raid10.sh, `make demo-raid10`) as a test: four members,
# nbdinfo, an ext4 image through nbdcopy + e2fsck, fio --verify=crc32c, then a degraded restart
# that still reads the image back identical. Shorter fio run than the interactive job.
set -u
for t in fio nbdinfo nbdcopy mke2fs e2fsck /usr/bin/python3; do
    command -v "$t" >/dev/null 2>&1 || [ -x "$t" ] || PATH=$PATH:/usr/sbin command -v "$t" \
        >/dev/null 2>&1 || { echo "SKIP: $t not installed"; exit 77; }
done
dir=$(mktemp -d /tmp/rk-demo-test.XXXXXX)
trap 'rm -rf "$dir"' EXIT
DEMO_DIR=$dir/run FIO_RUNTIME=${FIO_RUNTIME:-5} MEMBER_SIZE=128M FIO_SIZE=48M \
    bash "$RAIDKIT_SOURCE_DIR/scripts/demo-raid10.sh" "$RAIDKIT"
