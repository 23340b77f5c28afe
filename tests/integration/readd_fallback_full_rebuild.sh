#!/bin/bash
# Re-add falls back to a full rebuild, and says so, when the bitmap cannot prove what changed:
# (1) RAID1: a copy of m1 taken while the array was whole, then more writes and a clean stop
# (the bitmap cleared bits after the copy's event): re-adding the copy rebuilds it whole, the
# output and status name the reason, and with m0 failed the copy serves current data.
# (2) An array created with --bitmap none: a re-add is a full rebuild too.
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/integration/manage_lib.bash"
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/integration/readd_lib.bash"
rk_init
export RAIDKIT_BITMAP_IDLE_MS=300

rk_log "=== events older than the bitmap's last clear"
rk_members 2 17M f-
rk_create --level raid1 "${M[@]}"
CTL="$T/ctl"
rk_serve "${M[@]}"
size=$(rk_py size "$RK_URI") || rk_fail size
rk_stamp 1 0 "$size"
rk_stop
cp "${M[1]}" "$T/m1.old"
rk_serve "${M[@]}"
rk_stamp 2 0 $((4 * MiB))
rk_stop # whole array: the bits of gen 2 are cleared, at a later event than the copy's
rk_serve --control "$CTL" --degraded "${M[0]}"
ra_readd 1 "$T/m1.old" --control "$CTL" --wait
echo "$OUT" | grep -q "full rebuild, the bitmap cannot prove what changed: its event [0-9]* is older than the bitmap's last clear" ||
    rk_fail "no fallback message: $OUT"
mg_status
[ "$(mg_q "s['job']['kind']")" = rebuild ] || rk_fail "job kind: $(cat "$T/st.json")"
[ "$(mg_q "'full rebuild' in s['slots'][1]['rejoin']")" = True ] || rk_fail "status rejoin: $(cat "$T/st.json")"
[ "$(ra_job_bytes)" -eq "$(mg_q "s['slots'][1]['data_size']")" ] || rk_fail "not a whole rebuild: $(ra_job_bytes) bytes"
mg_fail 0
rk_verify 0 $((4 * MiB)) 2 $((4 * MiB)) $((size - 4 * MiB)) 1
rk_stop

rk_log "=== no bitmap"
rk_members 3 17M n-
rk_create --level raid5 --bitmap none "${M[@]}"
rk_serve --control "$CTL" "${M[@]}"
rk_stamp 1 0 $((8 * MiB))
mg_fail 2
rk_stamp 2 0 $((1 * MiB))
ra_readd 2 "${M[2]}" --control "$CTL" --wait
echo "$OUT" | grep -q "full rebuild, the bitmap cannot prove what changed: the array has no write-intent bitmap" ||
    rk_fail "no fallback message without a bitmap: $OUT"
mg_fail 0
rk_verify 0 $((1 * MiB)) 2 $((1 * MiB)) $((7 * MiB)) 1
rk_stop
echo PASS
