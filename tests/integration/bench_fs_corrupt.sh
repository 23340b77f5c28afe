#!/usr/bin/env bash
# A benchmark that corrupts its filesystem fails the run: with the debug hook
# RAIDKIT_BENCH_FS_CORRUPT the harness overwrites the start of the device (through the loop
# device and raidkit fuse, after the unmount) before e2fsck -fn; the check fails, the cell names
# it under "Failed:", the bench exits 1, and everything is torn down all the same. The same job
# without the hook passes on both the raidkit volume and the plain peer row.
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/bench_fs_lib.sh"
bench_fs_setup sqlite3
bench_fs_suite sqlite
bench_fs_run single,plain RAIDKIT_BENCH_FS_CORRUPT=1
[ "$BENCH_RC" -eq 1 ] || rk_fail "a corrupted filesystem: bench exited $BENCH_RC, not 1"
grep -q '^Failed:' "$T/stdout" || rk_fail "no Failed: section"
grep -q '^  single sqlite: filesystem check failed: e2fsck -fn exit [0-9]' "$T/stdout" || rk_fail "single: no e2fsck failure: $(cat "$T/stdout")"
grep -q '^  plain sqlite: filesystem check failed: e2fsck -fn' "$T/stdout" || rk_fail "plain: no e2fsck failure"
grep -q 'RAIDKIT_BENCH_FS_CORRUPT: overwrote' "$T/err" || rk_fail "the hook did not run"
grep -q 'filesystem check(s) failed' "$T/err" || rk_fail "no final message"
bench_fs_check_clean
bench_fs_run single,plain
[ "$BENCH_RC" -eq 0 ] || rk_fail "without the hook: bench exited $BENCH_RC: $(tail -n 3 "$T/err")"
grep -Eq '^plain loop file \. [0-9]+\.[0-9]{2} \|' "$T/stdout" || rk_fail "no plain row: $(cat "$T/stdout")"
bench_fs_check_clean
echo "PASS: bench_fs_corrupt"
