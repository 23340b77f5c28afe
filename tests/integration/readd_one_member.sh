#!/bin/bash
# Re-add of one member, offline and online. RAID5 of 4: gen 1 everywhere, a start without m2
# (--degraded) that writes gen 2 every 2 MiB, then `raidkit re-add --slot 2 m2 m0 m1 m3`
# offline: only the marked regions are resynced (far less than the member), said in the
# output. With m0 failed, m2 must serve its part: every stamp. Online: fail m3, gen 3 stamps,
# re-add m3 on the control socket; the status shows the job kind re-add and the bytes.
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/integration/manage_lib.bash"
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/integration/readd_lib.bash"
rk_init
mg_level_works 5 || rk_skip "raid5 not available in this build"
export RAIDKIT_BITMAP_IDLE_MS=300

rk_members 4 17M r1-
rk_create --level raid5 "${M[@]}"
CTL="$T/ctl"
rk_serve "${M[@]}"
size=$(rk_py size "$RK_URI") || rk_fail size
rk_stamp 1 0 "$size"
rk_stop
STEP=$((2 * MiB)) LEN=$((32 * 1024)) data=$((16 * MiB - MiB))

rk_log "=== offline: m2 missing for a while"
rk_serve --degraded "${M[0]}" "${M[1]}" "${M[3]}"
ra_sparse 2 $STEP $LEN "$size"
rk_stop
ra_readd 2 "${M[2]}" "${M[0]}" "${M[1]}" "${M[3]}"
echo "$OUT" | grep -q "resyncing only the regions the write-intent bitmap marks" ||
    rk_fail "offline re-add not from the bitmap: $OUT"
b=$(echo "$OUT" | sed -n 's/.*re-added .*, \([0-9]*\) bytes resynced$/\1/p')
[ -n "$b" ] && [ "$b" -gt 0 ] && [ "$b" -lt $((data / 4)) ] || rk_fail "offline re-add resynced '$b' bytes of $data"
rk_info_json "${M[@]}" >"$T/info.json"
[ "$(rk_info_get clean clean "$T/info.json")" = True ] || rk_fail "not clean after the offline re-add"
rk_serve --control "$CTL" "${M[@]}"
mg_status
[ "$(mg_q "s['degraded']")" = False ] || rk_fail "degraded after the offline re-add: $(cat "$T/st.json")"
mg_fail 0
ra_verify 1 2 $STEP $LEN "$size"
rk_stop

rk_log "=== online: m3 failed and back"
rk_serve --control "$CTL" --degraded "${M[1]}" "${M[2]}" "${M[3]}" "${M[0]}"
# m0 is stale (failed above): re-add it first, then take m3 away and back.
ra_readd 0 "${M[0]}" --control "$CTL" --wait
mg_fail 3
ra_sparse 3 $STEP $LEN "$size"
ra_readd 3 "${M[3]}" --control "$CTL" --wait
mg_status
[ "$(mg_q "s['job']['kind']")" = re-add ] || rk_fail "job kind: $(cat "$T/st.json")"
b3=$(ra_job_bytes)
[ "$b3" -gt 0 ] && [ "$b3" -lt $((data / 4)) ] || rk_fail "online re-add resynced $b3 bytes"
"$RAIDKIT" status --control "$CTL" >"$T/st.txt" || rk_fail "status text"
grep -q "re-add of slot 3 ($b3 bytes resynced) done" "$T/st.txt" || rk_fail "status text: $(cat "$T/st.txt")"
mg_fail 1
ra_verify 1 3 $STEP $LEN "$size"
rk_stop
echo PASS
