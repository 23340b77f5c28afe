#!/bin/bash
# C07 unreadable sector during rebuild: RAID1 of 16 MiB; fail m1, replace it with m2 while m0
# returns EIO on sectors 30000-30007: the rebuild finishes, the range is recorded, reads of it
# return EIO (never zeros), no endless retry. Variant: m0 disappears halfway: the array goes
# offline cleanly (EIO), the half-built member never serves, no crash.
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
"$RAIDKIT" fail --slot 1 --control "$CTL" >/dev/null || rk_fail "fail slot 1"
timeout 60 "$RAIDKIT" replace --slot 1 --with "${M[2]}" --wait --control "$CTL" >/dev/null \
    2>"$T/rep.err" || rk_fail "replace did not finish cleanly: $(cat "$T/rep.err")"
mg_status
[ "$(mg_q "s['job']['state']")" = done ] || rk_fail "rebuild state: $(cat "$T/st.json")"
[ "$(mg_slot_state 1)" = active ] || rk_fail "slot 1 not active after the rebuild"
[ "$(mg_q "len([b for b in s['bad_ranges'] if b['slot'] == 1 and b['offset'] <= $BAD and b['offset'] + b['len'] >= $BAD + 4096])")" = 1 ] ||
    rk_fail "unreadable range not recorded: $(mg_q "s['bad_ranges']")"
"$RAIDKIT" status --control "$CTL" | grep -q "unreadable" || rk_fail "status text does not show the range"
expect_eio $BAD 4096
expect_eio $((BAD + 1024)) 512
rk_verify 0 $BAD 1 $((BAD + 4096)) $((SIZE - BAD - 4096)) 1
grep -c "rebuild of slot 1" "$RK_LOG" | grep -qv '^[0-9]\{3,\}' || rk_fail "rebuild log loops"
rk_stop

rk_log "=== variant: the only source disappears halfway"
rk_members 3 17M v
rk_create --level raid1 "${M[0]}" "${M[1]}"
rk_serve --control "$CTL" "${M[0]}" "${M[1]}"
rk_stamp 1 0 $SIZE
"$RAIDKIT" fail --slot 1 --control "$CTL" >/dev/null || rk_fail "fail slot 1"
"$RAIDKIT" replace --slot 1 --with "${M[2]}" --rate 4 --control "$CTL" >/dev/null 2>"$T/err" ||
    rk_fail "replace: $(cat "$T/err")"
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
