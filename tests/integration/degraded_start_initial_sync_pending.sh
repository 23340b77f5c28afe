#!/usr/bin/env bash
# A degraded start of a raid5/raid6 (partial parity log on, the default) whose initial sync has
# not finished: members full of random bytes that create could not zero (RAIDKIT_TEST_NO_ZERO=1),
# never served, so the whole initial sync is pending. The log covers only stripes written since,
# so without the missing member its chunks would be reconstructed from parity that was never
# valid. The start is refused without --force, naming the unsynced part and the advice; with
# --force it starts and warns. Started with every member it runs the sync as usual.
. "$RAIDKIT_SOURCE_DIR/tests/lib/common.sh"
. "$RAIDKIT_SOURCE_DIR/tests/lib/initial_sync_lib.sh"
rk_init

for level in raid5 raid6; do
    rk_log "=== $level, initial sync pending, one member missing"
    is_unsynced_array "$level" 4 8
    rk_serve_refused "initial sync .*has not finished.*re-add the missing member.*--force" \
        --degraded "${M[0]}" "${M[1]}" "${M[2]}"
    grep -q "bytes per member, 100%" "$RK_LOG_LAST" || rk_fail "refusal does not say how much is unsynced: $(cat "$RK_LOG_LAST")"
    rk_serve --degraded --force "${M[0]}" "${M[1]}" "${M[2]}"
    sleep 0.3
    grep -q "started degraded with --force although its initial sync" "$RK_LOG" ||
        rk_fail "$level: --force start did not warn: $(cat "$RK_LOG")"
    rk_stop
done
rm -f "$T"/r?
echo "PASS: a degraded start with the initial sync pending needs --force"
