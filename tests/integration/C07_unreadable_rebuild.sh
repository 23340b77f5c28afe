#!/bin/bash
# C07 unreadable sector during rebuild: RAID1 of 16 MiB; fail m1, replace it with m2 while m0
# returns EIO on sectors 30000-30007: the rebuild finishes, the range is recorded, reads of it
# return EIO (never zeros), no endless retry. Variant: m0 disappears halfway: the array goes
# offline cleanly (EIO), the half-built member never serves, no crash. The recorded range is
# durable: after a restart it is read from m0 when m0 is back, and gives EIO when only m2 is left.
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/integration/manage_lib.bash"
rk_init

# expect_eio OFF LEN: reading [OFF, OFF+LEN) fails with EIO, 10 times in a row.
expect_eio()
{
    "$RK_PY" - "$RK_URI" "$1" "$2" <<'PY' || rk_fail "read of [$1 +$2) did not fail with EIO"
import errno, sys, nbd
h = nbd.NBD()
h.connect_uri(sys.argv[1])
off, n = int(sys.argv[2]), int(sys.argv[3])
for i in range(10):
    try:
        b = h.pread(n, off)
    except nbd.Error as e:
        if e.errno != errno.EIO and "EIO" not in str(e):
            sys.exit("read %d: %s (want EIO)" % (i, e))
        continue
    sys.exit("read %d succeeded (%s)" % (i, "zeros" if not any(b) else "data"))
PY
}

SIZE=$((16 * MiB))
BAD=$((30000 * 512))
rk_members 3 17M
rk_create --level raid1 "${M[0]}" "${M[1]}"
rk_serve "${M[0]}" "${M[1]}"
rk_stamp 1 0 $SIZE
rk_stop
CTL="$T/ctl"
rk_serve --control "$CTL" --debug-fault "0:read-eio=$((MiB + BAD))+4096" "${M[0]}" "${M[1]}"
mg_fail 1
timeout 60 "$RAIDKIT" replace --slot 1 --with "${M[2]}" --wait --control "$CTL" >/dev/null \
    2>"$T/rep.err" || rk_fail "replace did not finish cleanly: $(cat "$T/rep.err")"
mg_status
[ "$(mg_q "s['job']['state']")" = done ] || rk_fail "rebuild state: $(cat "$T/st.json")"
[ "$(mg_slot_state 1)" = active ] || rk_fail "slot 1 not active after the rebuild"
[ "$(mg_q "len([b for b in s['bad_ranges'] if b['slot'] == 1 and b['offset'] <= $BAD and b['offset'] + b['len'] >= $BAD + 4096])")" = 1 ] ||
    rk_fail "unreadable range not recorded: $(mg_q "s['bad_ranges']")"
grep -q "unreadable" <<<"$("$RAIDKIT" status --control "$CTL")" || rk_fail "status text does not show the range"
expect_eio $BAD 4096
expect_eio $((BAD + 1024)) 512
rk_verify 0 $BAD 1 $((BAD + 4096)) $((SIZE - BAD - 4096)) 1
grep -c "rebuild of slot 1" "$RK_LOG" | grep -qv '^[0-9]\{3,\}' || rk_fail "rebuild log loops"
rk_stop

rk_log "=== the recorded range survives a restart (superblock bad-range table)"
M0=${M[0]} M2=${M[2]}
rk_info_json "$M0" "$M2" >"$T/info.json"
read -r BOFF BLEN < <("$RK_PY" - "$T/info.json" <<'PY') || rk_fail "info shows no bad range: $(cat "$T/info.json")"
import json, sys
b = [x for x in json.load(open(sys.argv[1]))["array"]["bad_ranges"] if x["slot"] == 1]
sys.exit(1) if len(b) != 1 else print(b[0]["offset"], b[0]["len"])
PY
[ "$BOFF" -le $BAD ] && [ $((BOFF + BLEN)) -ge $((BAD + 4096)) ] ||
    rk_fail "bad range [$BOFF +$BLEN) does not cover the unreadable sectors"
grep -q "slot 1  \[$BOFF, " <<<"$("$RAIDKIT" info "$M2")" || rk_fail "info text does not show the range"
# (a) m0 readable again: the range comes from m0 (correct data), never from m2's hole.
rk_serve --control "$CTL" "$M0" "$M2"
mg_status
[ "$(mg_q "[(b['slot'], b['offset'], b['len']) for b in s['bad_ranges']] == [(1, $BOFF, $BLEN)]")" = True ] ||
    rk_fail "restart did not load the bad range: $(mg_q "s['bad_ranges']")"
for i in 1 2 3 4; do rk_verify $BOFF $BLEN 1; done
rk_verify 0 $SIZE 1
rk_stop
# (b) m0 fails every I/O: only m2 is left, and it has no data there -> EIO, never zeros.
rk_serve --control "$CTL" --debug-fault "0:fail-all" "$M0" "$M2"
expect_eio $BAD 4096
expect_eio $BOFF $BLEN
rk_verify 0 $BOFF 1 $((BOFF + BLEN)) $((SIZE - BOFF - BLEN)) 1
mg_status
[ "$(mg_slot_state 0)" = failed ] || rk_fail "slot 0 not failed: $(cat "$T/st.json")"
[ "$(mg_q "len(s['bad_ranges'])")" = 1 ] || rk_fail "bad ranges after the failure: $(mg_q "s['bad_ranges']")"
rk_stop
# (c) m0 left out (--degraded): the range is still known from m2's own superblock.
rk_serve --degraded "$M2"
expect_eio $((BAD + 1024)) 512
expect_eio $BOFF 4096
rk_verify 0 $BOFF 1 $((BOFF + BLEN)) $((SIZE - BOFF - BLEN)) 1
rk_stop

rk_log "=== variant: the only source disappears halfway"
rk_members 3 17M v
rk_create --level raid1 "${M[0]}" "${M[1]}"
rk_serve --control "$CTL" "${M[0]}" "${M[1]}"
rk_stamp 1 0 $SIZE
mg_fail 1
mg_replace 1 "${M[2]}" 4
sleep 1.5
truncate -s 0 "${M[0]}" # the disk is gone: every read fails
mg_wait_job 30
[ "$(mg_q "s['job']['state']")" = failed ] || rk_fail "rebuild should fail: $(cat "$T/st.json")"
[ "$(mg_slot_state 1)" = rebuilding ] || rk_fail "the half-built member was promoted"
expect_eio 0 4096
expect_eio $((12 * MiB)) 4096
kill -0 "$RK_PID" || rk_fail "server died"
kill -TERM "$RK_PID"
for i in $(seq 100); do kill -0 "$RK_PID" 2>/dev/null || break; sleep 0.1; done
kill -0 "$RK_PID" 2>/dev/null && rk_fail "server does not stop"
wait "$RK_PID"
rc=$?
RK_PID=""
[ $rc -lt 128 ] || rk_fail "server crashed (status $rc)"
rk_no_sanitizer "$RK_LOG" "raidkit serve"
echo PASS
