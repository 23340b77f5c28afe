#!/bin/bash
# Re-add of a member that an online replace put in (F13): RAID5 of 4, gen 1 everywhere, slot 2
# failed and replaced online by a new file n2 (whole rebuild). Right after the rebuild (no write
# in between, so no bit changed), fail n2, write gen 2 every 2 MiB, re-add n2: the replaced
# member must carry the write-intent bitmap from the replace on, so only the marked regions are
# resynced (not a whole rebuild), and with another member failed n2 serves every stamp.
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/integration/manage_lib.bash"
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/integration/readd_lib.bash"
rk_init
mg_level_works 5 || rk_skip "raid5 not available in this build"
export RAIDKIT_BITMAP_IDLE_MS=300

rk_members 4 17M r1-
rk_create --level raid5 "${M[@]}"
CTL="$T/ctl"
rk_serve --control "$CTL" "${M[@]}"
size=$(rk_py size "$RK_URI") || rk_fail size
rk_stamp 1 0 "$size"
sleep 1 # idle: the cleaner clears every bit, so the replace starts from an empty bitmap
STEP=$((2 * MiB)) LEN=$((32 * 1024)) data=$((16 * MiB - MiB))

rk_log "=== slot 2 replaced online by a new member"
N2="$T/n2"
truncate -s 17M "$N2"
mg_fail 2
mg_replace 2 "$N2" 0
mg_wait_job 60
mg_status
[ "$(mg_slot_state 2)" = active ] || rk_fail "slot 2 not active after the replace: $(cat "$T/st.json")"

rk_log "=== the replaced member leaves at once and comes back"
mg_fail 2
ra_sparse 2 $STEP $LEN "$size"
ra_readd 2 "$N2" --control "$CTL" --wait
echo "$OUT" | grep -q "resyncing only the regions the write-intent bitmap marks" ||
    rk_fail "re-add of the replaced member not from the bitmap: $OUT"
mg_status
[ "$(mg_q "s['job']['kind']")" = re-add ] || rk_fail "job kind: $(cat "$T/st.json")"
b=$(ra_job_bytes)
[ "$b" -gt 0 ] && [ "$b" -lt $((data / 4)) ] || rk_fail "re-add resynced $b bytes of $data"
mg_fail 0
ra_verify 1 2 $STEP $LEN "$size"
rk_stop
echo PASS
