#!/usr/bin/env bash
# Filesystem jobs with btrfs: fs = btrfs on a raidkit raid1 volume (2 members) through raidkit
# fuse, and the peer row btrfs-raid1 (native btrfs RAID-1 over two loop devices, which makes
# btrfs whatever the job's fs); checked with btrfs check --readonly; a corrupted btrfs fails.
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/bench_fs_lib.sh"
bench_fs_setup sqlite3 mkfs.btrfs btrfs
bench_fs_suite sqlite fs=btrfs fs_size=160M
bench_fs_run raid1,btrfs-raid1
[ "$BENCH_RC" -eq 0 ] || rk_fail "bench exited $BENCH_RC: $(tail -n 3 "$T/err")"
grep -Eq '^RAID 1 \(2\) \.* [0-9]+\.[0-9]{2} \|' "$T/stdout" || rk_fail "no RAID 1 row: $(cat "$T/stdout")"
grep -Eq '^btrfs raid1 \(2\) \.* [0-9]+\.[0-9]{2} \|' "$T/stdout" || rk_fail "no btrfs raid1 row"
[ "$(grep -c 'trial 1: .* on btrfs' "$T/err")" -eq 2 ] || rk_fail "not both on btrfs"
bench_fs_check_clean
bench_fs_run btrfs-raid1 RAIDKIT_BENCH_FS_CORRUPT=1
[ "$BENCH_RC" -eq 1 ] || rk_fail "corrupted btrfs: bench exited $BENCH_RC, not 1"
grep -q 'filesystem check failed: btrfs check exit' "$T/stdout" || rk_fail "no btrfs check failure: $(cat "$T/stdout")"
bench_fs_check_clean
echo "PASS: bench_fs_btrfs"
