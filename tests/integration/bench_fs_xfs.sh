#!/usr/bin/env bash
# Filesystem jobs on xfs (fs = xfs): made by mkfs.xfs on a raidkit volume through raidkit fuse + a
# loop device, checked with xfs_repair -n after the tool; a corrupted xfs fails the run.
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/bench_fs_lib.sh"
bench_fs_setup sqlite3 mkfs.xfs xfs_repair
bench_fs_suite sqlite fs=xfs fs_size=320M
bench_fs_run single
[ "$BENCH_RC" -eq 0 ] || rk_fail "bench exited $BENCH_RC: $(tail -n 3 "$T/err")"
grep -q 'trial 1: .* on xfs' "$T/err" || rk_fail "not run on xfs"
grep -q 'File System: xfs on 320MB' "$T/stdout" || rk_fail "heading without xfs"
bench_fs_check_clean
bench_fs_run single RAIDKIT_BENCH_FS_CORRUPT=1
[ "$BENCH_RC" -eq 1 ] || rk_fail "corrupted xfs: bench exited $BENCH_RC, not 1"
grep -q 'filesystem check failed: xfs_repair -n exit' "$T/stdout" || rk_fail "no xfs_repair failure: $(cat "$T/stdout")"
bench_fs_check_clean
echo "PASS: bench_fs_xfs"
