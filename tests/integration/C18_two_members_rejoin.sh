#!/bin/bash
# C18: two members away, rejoined one after the other. RAID6 of 6 x 16 MiB: stamps (gen 1)
# everywhere, m1 and m4 fail, gen 2 stamps every 4 MiB; re-add m1 and wait, scrub, re-add m4
# and wait, scrub (0 mismatches), then fail m0 and m2 and read everything back: every stamp.
# The bytes resynced for m4 equal those for m1 (m1's catch-up cleared nothing m4 still
# needed) and neither is a full rebuild.
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/integration/manage_lib.bash"
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/integration/readd_lib.bash"
rk_init
mg_level_works 6 || rk_skip "raid6 not available in this build"
export RAIDKIT_BITMAP_IDLE_MS=300 # idle bits clear fast: only the degraded rule keeps them

# scrub_zero: an online scrub that must report 0 mismatches.
scrub_zero()
{
    OUT=$(timeout 60 "$RAIDKIT" scrub --control "$CTL" 2>&1) || rk_fail "scrub: $OUT"
    echo "$OUT" | grep -q "^scrub finished: 0 mismatches" || rk_fail "scrub after $1: $OUT"
}

rk_members 6 17M c18-
rk_create --level raid6 "${M[@]}"
CTL="$T/ctl"
rk_serve --control "$CTL" "${M[@]}"
size=$(rk_py size "$RK_URI") || rk_fail size
rk_stamp 1 0 "$size"
rk_stop
# A clean stop of the whole array clears the bits of gen 1: only what follows is marked.
rk_serve --control "$CTL" "${M[@]}"
mg_fail 1
mg_fail 4
STEP=$((4 * MiB)) LEN=$((64 * 1024))
ra_sparse 2 $STEP $LEN "$size"

ra_readd 1 "${M[1]}" --control "$CTL" --wait
echo "$OUT" | grep -q "resyncing only the regions the write-intent bitmap marks" ||
    rk_fail "m1 was not re-added from the bitmap: $OUT"
mg_status
[ "$(mg_q "s['job']['kind']")" = re-add ] || rk_fail "job kind: $(cat "$T/st.json")"
[ "$(mg_slot_state 1)" = active ] || rk_fail "slot 1 not active after its re-add"
b1=$(ra_job_bytes)
scrub_zero "the re-add of m1"
sleep 1 # several cleaner ticks with m4 still away: nothing may be cleared

ra_readd 4 "${M[4]}" --control "$CTL" --wait
echo "$OUT" | grep -q "resyncing only the regions" || rk_fail "m4 was not re-added from the bitmap: $OUT"
mg_status
b4=$(ra_job_bytes)
[ "$(mg_q "s['degraded']")" = False ] || rk_fail "still degraded: $(cat "$T/st.json")"
scrub_zero "the re-add of m4"
data=$((16 * MiB - MiB))
rk_log "resynced: m1 $b1 bytes, m4 $b4 bytes, of $data per member"
[ "$b1" -gt 0 ] && [ "$b1" -lt $((data / 2)) ] || rk_fail "m1 resynced $b1 bytes of $data"
[ "$b4" -ge $((b1 * 9 / 10)) ] && [ "$b4" -le $((b1 * 11 / 10)) ] ||
    rk_fail "m4 resynced $b4 bytes, m1 $b1: m1's catch-up cleared what m4 needed"

# Only the re-added members and two others: every stamp must come from them.
mg_fail 0
mg_fail 2
ra_verify 1 2 $STEP $LEN "$size"
rk_stop
echo PASS
