#!/bin/bash
# Re-add of two members with a restart between: RAID6 of 5, m1 and m3 missing from the start
# (--degraded), gen 2 stamps every 2 MiB; re-add m1 online, stop cleanly while m3 is still away,
# start again (m3 still missing), re-add m3: the bits m3 needs survived m1's catch-up and the
# restart (the bytes resynced for m3 equal m1's, far below a full rebuild). Then fail two
# others: every stamp.
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/integration/manage_lib.bash"
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/integration/readd_lib.bash"
rk_init
mg_level_works 6 || rk_skip "raid6 not available in this build"
export RAIDKIT_BITMAP_IDLE_MS=300

rk_members 5 17M r2-
rk_create --level raid6 "${M[@]}"
CTL="$T/ctl"
rk_serve "${M[@]}"
size=$(rk_py size "$RK_URI") || rk_fail size
rk_stamp 1 0 "$size"
rk_stop
STEP=$((2 * MiB)) LEN=$((16 * 1024)) data=$((16 * MiB - MiB))

rk_serve --control "$CTL" --degraded "${M[0]}" "${M[2]}" "${M[4]}"
ra_sparse 2 $STEP $LEN "$size"
ra_readd 1 "${M[1]}" --control "$CTL" --wait
echo "$OUT" | grep -q "resyncing only the regions" || rk_fail "m1 not re-added from the bitmap: $OUT"
mg_status
b1=$(ra_job_bytes)
sleep 1
rk_stop # clean, but m3 is still away: its bits stay on disk
rk_serve --control "$CTL" --degraded "${M[0]}" "${M[1]}" "${M[2]}" "${M[4]}"
ra_readd 3 "${M[3]}" --control "$CTL" --wait
echo "$OUT" | grep -q "resyncing only the regions" || rk_fail "m3 not re-added from the bitmap: $OUT"
mg_status
b3=$(ra_job_bytes)
rk_log "resynced: m1 $b1, m3 $b3 of $data"
[ "$b1" -gt 0 ] && [ "$b1" -lt $((data / 4)) ] || rk_fail "m1 resynced $b1 bytes"
[ "$b3" -ge $((b1 * 9 / 10)) ] && [ "$b3" -le $((b1 * 11 / 10)) ] ||
    rk_fail "m3 resynced $b3 bytes, m1 $b1: the record m3 needed was lost"
OUT=$(timeout 60 "$RAIDKIT" scrub --control "$CTL" 2>&1) || rk_fail "scrub: $OUT"
echo "$OUT" | grep -q "^scrub finished: 0 mismatches" || rk_fail "scrub: $OUT"
mg_fail 0
mg_fail 4
ra_verify 1 2 $STEP $LEN "$size"
rk_stop
echo PASS
