#!/bin/bash
# rbd_member_reconnect: a failed rbd member comes back and is re-added through the bitmap. A raid1
# of an RBD image and a local file on a one-node cluster whose OSD is bluestore on a file
# (scripts/ceph-one-node.sh, CEPH_OBJECTSTORE=bluestore: unlike memstore, its objects survive an
# OSD restart).
# (1) fio --verify=crc32c runs while the OSD is SIGKILLed: the member's requests time out
#     (rados_osd_op_timeout 3 s), it is failed and recorded in the file's superblock, the volume
#     keeps serving, fio sees no error; the watcher tries to reconnect (status reconnect object).
# (2) The OSD restarts on the same file: the remote-member watcher of `serve` reopens `rbd:rk/a`
#     (backoff) and re-adds it through the write-intent bitmap by itself, resyncing only what was
#     written while it was away (status: job re-add, resynced bytes <= the 4 MiB fio wrote).
# (3) scrub: 0 mismatches; then the RBD member alone returns every byte fio wrote.
# Every wait is bounded (each step its own limit, the whole script RR_BUDGET_S, default 200 s,
# under ctest's TIMEOUT); running over says which step hung.
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
. "$RAIDKIT_SOURCE_DIR/tests/integration/manage_lib.bash"
. "$RAIDKIT_SOURCE_DIR/tests/integration/remote_lib.bash"
. "$RAIDKIT_SOURCE_DIR/tests/lib/rbd_lib.sh"
rk_init
rk_need fio
export RK_SERVE_TIMEOUT=${RR_BUDGET_S:-200}
export CEPH_OBJECTSTORE=bluestore CEPH_OSD_BLOCK_SIZE=$((2 * 1024 * 1024 * 1024))

# rr_step WHAT: log the step and remember it for the watchdog's message.
rr_step()
{
    rk_log "=== $*"
    echo "$*" >"$T/step"
}
# The watchdog: past the budget, name the step that hung and end the script (its exit trap
# stops the server and the cluster) and the bounded command it waits for.
RR_TEST_PID=$$
(
    trap 'kill "$s" 2>/dev/null; exit 0' TERM
    sleep "${RR_BUDGET_S:-200}" >/dev/null 2>&1 &
    s=$!
    wait "$s"
    echo "FAIL: rbd_member_reconnect: timed out after ${RR_BUDGET_S:-200} s in step: $(cat "$T/step" 2>/dev/null)" >&2
    kill -TERM "$RR_TEST_PID" 2>/dev/null
    for c in $(ps -o pid= --ppid "$RR_TEST_PID"); do
        [ "$c" = "$BASHPID" ] || kill -TERM "$c" 2>/dev/null
    done
) &
RR_WATCHDOG=$!

rr_step "one-node Ceph cluster (bluestore)"
rbd_cluster
# rbd_cluster's exit trap, the watchdog stopped first (whatever ends the script).
trap 'rc=$?; kill "$RR_WATCHDOG" 2>/dev/null; (exit $rc); rbd_cleanup' EXIT
export CEPH_ARGS="--rados_osd_op_timeout=3"
export RAIDKIT_NBD_RECONNECT_MS=300 RAIDKIT_NBD_RECONNECT_MAX_MS=1000

# rr_fio SECONDS NAME ARGS...: rk_fio bounded to SECONDS (fio through the served volume).
rr_fio()
{
    local s=$1 name=$2
    shift 2
    (cd "$T" && timeout -k 5 "$s" fio --name="$name" --ioengine=nbd --uri="$RK_URI" \
        --randseed=4242 --verify_state_save=0 --output="$T/fio.$name.out" "$@" \
        >/dev/null 2>"$T/fio.$name.err")
    local rc=$?
    [ "$rc" != 124 ] && [ "$rc" != 137 ] || rk_fail "fio $name did not finish within $s s (timeout)"
    [ "$rc" = 0 ] || rk_fail "fio $name failed ($rc): $(tail -n 20 "$T/fio.$name.err" "$T/fio.$name.out")"
    grep -q "err= 0" "$T/fio.$name.out" || rk_fail "fio $name reported errors: $(cat "$T/fio.$name.out")"
    ! grep -qi "verify: bad\|crc32c: verify failed\|bad magic" "$T/fio.$name.out" "$T/fio.$name.err" ||
        rk_fail "fio $name verify errors: $(cat "$T/fio.$name.out")"
}

truncate -s 64M "$T/local"
rbd_image a 64M
R="rbd:rk/a"
rk_create --level raid1 "$R" "$T/local"
CTL="$T/ctl.sock"
rk_serve --control "$CTL" "$R" "$T/local"
mg_status
S0=$(rm_slot 0)
[ "$(mg_q "$S0['kind']")" = rbd ] || rk_fail "slot 0 kind: $(cat "$T/st.json")"
[ "$(mg_q "$S0['reconnect']['state']")" = none ] || rk_fail "reconnect state: $(cat "$T/st.json")"

FILL=(--rw=write --bs=1M --size=8M --verify=crc32c)
KILLJOB=(--rw=randwrite --bs=4k --offset=8M --size=4M --iodepth=16 --verify=crc32c)
rr_step "fill 8 MiB, wait for the bitmap to clear"
rr_fio 60 fill "${FILL[@]}" --do_verify=0
# The fill's bits are cleared once idle (5 s): from then on the bitmap marks only new writes.
rm_wait_q 30 "s['bitmap']['set'] == 0" "the bitmap did not clear the fill's bits"

rr_step "(1) the OSD SIGKILLed during fio verify"
(rr_fio 60 kill "${KILLJOB[@]}" --rate=1m --do_verify=1 --verify_fatal=1) &
FIO=$!
sleep 1.5
kill -KILL "$(cat "$RBD_DIR/run/osd.0.pid")" || rk_fail "cannot kill the OSD"
wait "$FIO" || exit 1 # rr_fio said why
mg_status
[ "$(mg_slot_state 0)" = failed ] || rk_fail "slot 0 not failed: $(cat "$T/st.json")"
[ "$(mg_slot_state 1)" = active ] || rk_fail "slot 1 not active: $(cat "$T/st.json")"
grep -q "rbd member rbd:rk/a.*the member fails" "$RK_LOG" || rk_fail "no member-failure line in the log"
rk_expect_slot_failed 0 "$T/local"
rm_wait_q 20 "$S0['reconnect']['state'] in ('waiting','connecting') and $S0['reconnect']['attempts'] >= 1" \
    "no reconnect attempt while the OSD is down"
rk_log "while the OSD is down: $(mg_q "$S0['reconnect']")"
DEGJOB=(--rw=randwrite --bs=4k --offset=16M --size=2M --iodepth=8 --verify=crc32c)
rr_fio 60 degraded "${DEGJOB[@]}" --do_verify=1 --verify_fatal=1

rr_step "(2) the OSD back (same bluestore file): automatic re-add through the bitmap"
timeout 60 ceph-osd -c "$CEPH_CONF" -i 0 >"$T/osd2.out" 2>&1 ||
    rk_fail "ceph-osd did not restart within 60 s: $(cat "$T/osd2.out")"
rm_wait_back 0 60
grep -q "is back after" "$RK_LOG" || rk_fail "no reconnect message in the log"
B=$(rm_resynced 0)
rk_log "re-add resynced $B bytes ($(mg_q "$S0['reconnect']['attempts']") attempts)"
# Written while it was away: the rest of the kill job (within [8M, 12M)) and the degraded job
# ([16M, 18M)); the bitmap regions around them, far below the 64 MiB a rebuild would copy.
[ "$B" -gt 0 ] && [ "$B" -le $((8 * 1024 * 1024)) ] ||
    rk_fail "re-add resynced $B bytes: want 0 < n <= 8 MiB (the ranges written while it was away)"
[ "$(mg_q "s['job']['kind']")" = re-add ] || rk_fail "last job is not a re-add: $(cat "$T/st.json")"
[ "$(mg_q "$S0['connection']")" = connected ] || rk_fail "slot 0 connection: $(cat "$T/st.json")"
[ "$(mg_q "s['bitmap']['unsynced']")" = 0 ] || rk_fail "unsynced regions left: $(cat "$T/st.json")"

rr_step "(3) scrub, then the RBD member alone"
out=$(timeout 60 "$RAIDKIT" scrub --control "$CTL" 2>"$T/scrub.err")
rc=$?
[ "$rc" != 124 ] || rk_fail "scrub did not finish within 60 s"
[ "$rc" = 0 ] || rk_fail "raidkit scrub ($rc): $(cat "$T/scrub.err")"
echo "$out" | grep -q "^scrub finished: 0 mismatches" || rk_fail "scrub after the re-add: $out"
rk_log "$out"
mg_fail 1 # the RBD member alone must now hold every byte
rr_fio 60 vfill "${FILL[@]}" --verify_only=1 --verify_fatal=1
rr_fio 60 vkill "${KILLJOB[@]}" --verify_only=1 --verify_fatal=1
rr_fio 60 vdegraded "${DEGJOB[@]}" --verify_only=1 --verify_fatal=1
rr_step "stop"
rk_stop
echo "PASS: rbd_member_reconnect"
