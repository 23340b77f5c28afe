#!/bin/bash
# fuse_export: `raidkit fuse` exports a volume as one file (docs/CLI.md "fuse").
#  1. file mountpoint: size = array size; fio --verify=crc32c; fallocate punch-hole and
#     zero-range (aligned and unaligned) read back zeroes, bytes around them untouched; SIGTERM
#     with fio writes in flight -> exit 0, array clean.
#  2. directory mountpoint (root only): losetup --direct-io=on + mkfs.ext4 + mount + files +
#     sha256; a member failed mid-run through --control; files still intact after a remount;
#     e2fsck -fn clean; fusermount3 -u -> exit 0, array clean.
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
rk_init
[ -c /dev/fuse ] || rk_skip "/dev/fuse missing (no FUSE in this kernel/container)"
rk_need fio fusermount3 fallocate cmp
"$RAIDKIT" fuse --help >/dev/null 2>&1 || rk_fail "raidkit fuse --help failed"

FZ_LOOP=""
fz_cleanup_mounts()
{
    mountpoint -q "$T/fs" 2>/dev/null && umount "$T/fs"
    [ -n "$FZ_LOOP" ] && losetup -d "$FZ_LOOP" 2>/dev/null
    mountpoint -q "$T/mnt" 2>/dev/null && fusermount3 -u "$T/mnt" 2>/dev/null
    mountpoint -q "$T/vol" 2>/dev/null && fusermount3 -u "$T/vol" 2>/dev/null
}
trap 'fz_rc=$?; fz_cleanup_mounts; (exit $fz_rc); rk_cleanup' EXIT

# fz_start FILE ARGS...: start raidkit fuse (FILE is the exported file, ARGS the mountpoint,
# options and members); wait (10 s) until FILE has the array size $SIZE. Sets RK_PID, RK_LOG.
fz_start()
{
    local file=$1 i
    shift
    RK_LOG="$T/fuse.$RANDOM.log"
    rk_log "fuse $*"
    timeout -k 30 120 "$RAIDKIT" fuse "$@" 2>"$RK_LOG" &
    RK_PID=$!
    for i in $(seq 100); do
        [ "$(stat -c %s "$file" 2>/dev/null)" = "$SIZE" ] && return 0
        kill -0 "$RK_PID" 2>/dev/null || rk_fail "raidkit fuse $* exited before mounting"
        sleep 0.1
    done
    rk_fail "raidkit fuse $*: $file does not show the array size $SIZE within 10 s"
}

# fz_wait_exit: wait (20 s) for the fuse process, require status 0 and a clean array.
fz_wait_exit()
{
    local i rc
    for i in $(seq 200); do
        kill -0 "$RK_PID" 2>/dev/null || break
        sleep 0.1
    done
    kill -0 "$RK_PID" 2>/dev/null && rk_fail "raidkit fuse did not exit within 20 s"
    wait "$RK_PID"
    rc=$?
    RK_PID=""
    [ "$rc" -eq 0 ] || rk_fail "raidkit fuse exited with status $rc (want 0)"
    rk_no_sanitizer "$RK_LOG" "raidkit fuse"
    rk_info_json "${M[@]}" >"$T/info.json"
    [ "$(rk_info_get clean clean "$T/info.json")" = True ] || rk_fail "array not clean after stop"
}

# fz_zero_check FILE OFF LEN: bytes [OFF, OFF+LEN) of FILE are zero, the byte before and after
# are not (the pattern written first).
fz_zero_check()
{
    cmp -s -n "$3" <(dd if="$1" bs=1 skip="$2" count="$3" iflag=skip_bytes,count_bytes status=none) \
        /dev/zero || rk_fail "$1 [$2 +$3) does not read back zeroes"
    local before after
    before=$(dd if="$1" bs=1 skip=$(($2 - 1)) count=1 status=none | od -An -tx1 | tr -d ' ')
    after=$(dd if="$1" bs=1 skip=$(($2 + $3)) count=1 status=none | od -An -tx1 | tr -d ' ')
    [ "$before" = a5 ] && [ "$after" = a5 ] || rk_fail "$1 around [$2 +$3) changed: $before $after"
}

rk_members 2 80M
rk_create --level raid1 "${M[@]}"
SIZE=$(rk_array_size "${M[@]}")

# 1. A regular file as mountpoint.
touch "$T/vol"
fz_start "$T/vol" "$T/vol" --control "$T/ctl" "${M[@]}"
fio --name=verify --filename="$T/vol" --rw=randwrite --bs=16k --size=24M --direct=1 \
    --ioengine=libaio --iodepth=16 --verify=crc32c --verify_fatal=1 --output="$T/fio1.txt" ||
    rk_fail "fio verify on the FUSE file: $(tail -n 20 "$T/fio1.txt")"
fsync_ok=$("$RK_PY" -c 'import os,sys; fd=os.open(sys.argv[1], os.O_RDWR); os.fsync(fd); print("ok")' "$T/vol")
[ "$fsync_ok" = ok ] || rk_fail "fsync of the FUSE file failed"
OFF=$((40 << 20))
"$RK_PY" -c 'import sys; f=open(sys.argv[1],"r+b"); f.seek(int(sys.argv[2])); f.write(b"\xa5"*(2<<20))' \
    "$T/vol" "$OFF" || rk_fail "pattern write failed"
fallocate --punch-hole --keep-size -o $((OFF + 65536)) -l 131072 "$T/vol" || rk_fail "punch-hole failed"
fz_zero_check "$T/vol" $((OFF + 65536)) 131072
fallocate --punch-hole --keep-size -o $((OFF + 300001)) -l 10007 "$T/vol" || rk_fail "unaligned punch failed"
fz_zero_check "$T/vol" $((OFF + 300001)) 10007
fallocate --zero-range --keep-size -o $((OFF + 1048576 + 123)) -l 70000 "$T/vol" || rk_fail "zero-range failed"
fz_zero_check "$T/vol" $((OFF + 1048576 + 123)) 70000
truncate -s 1M "$T/vol" 2>/dev/null && rk_fail "truncate of the FUSE file to another size succeeded"
# SIGTERM with writes in flight: in-flight requests finish, the array is marked clean.
fio --name=busy --filename="$T/vol" --rw=randwrite --bs=64k --size=32M --time_based --runtime=20 \
    --direct=1 --ioengine=libaio --iodepth=32 --output="$T/fio2.txt" 2>/dev/null &
FIO=$!
sleep 2
kill -TERM "$RK_PID"
fz_wait_exit
wait "$FIO" 2>/dev/null
rk_log "SIGTERM under load: clean stop"

# 2. A directory as mountpoint, a filesystem through a loop device.
if [ "$(id -u)" != 0 ] || ! command -v losetup >/dev/null || ! command -v mkfs.ext4 >/dev/null; then
    rk_log "note: not root or no losetup/mkfs.ext4; the filesystem part is skipped"
    echo PASS
    exit 0
fi
mkdir -p "$T/mnt" "$T/fs"
fz_start "$T/mnt/volume" "$T/mnt" --control "$T/ctl" --threads 8 "${M[@]}"
FZ_LOOP=$(losetup --direct-io=on -f --show "$T/mnt/volume") || rk_fail "losetup failed"
mkfs.ext4 -q -F "$FZ_LOOP" || rk_fail "mkfs.ext4 on $FZ_LOOP failed"
mount "$FZ_LOOP" "$T/fs" || rk_fail "mount failed"
head -c 6M /dev/urandom >"$T/fs/a.bin"
cp "$RAIDKIT" "$T/fs/raidkit.bin"
dd if=/dev/urandom of="$T/fs/b.bin" bs=1M count=12 status=none &
DD=$!
"$RAIDKIT" fail --slot 1 --control "$T/ctl" >/dev/null 2>"$T/fail.err" ||
    rk_fail "raidkit fail --slot 1: $(cat "$T/fail.err")"
wait "$DD" || rk_fail "writing b.bin while slot 1 failed"
sync
(cd "$T/fs" && sha256sum a.bin raidkit.bin b.bin) >"$T/sums"
umount "$T/fs" || rk_fail "umount failed"
echo 3 >/proc/sys/vm/drop_caches 2>/dev/null
mount "$FZ_LOOP" "$T/fs" || rk_fail "remount failed"
(cd "$T/fs" && sha256sum -c --quiet "$T/sums") || rk_fail "files differ after the remount"
umount "$T/fs" || rk_fail "umount failed"
e2fsck -fn "$FZ_LOOP" >"$T/fsck.txt" 2>&1 || rk_fail "e2fsck -fn: $(tail -n 20 "$T/fsck.txt")"
grep -q '"failed"' <<<"$("$RAIDKIT" status --json --control "$T/ctl")" ||
    rk_fail "status does not show the failed slot"
losetup -d "$FZ_LOOP"
FZ_LOOP=""
fusermount3 -u "$T/mnt" || rk_fail "fusermount3 -u failed"
fz_wait_exit
echo PASS
