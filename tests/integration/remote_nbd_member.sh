#!/bin/bash
# remote_nbd_member: a raid1 of a local file and an NBD URI member (docs/CLI.md "Member URIs").
# (1) member served by nbdkit (memory plugin, unix socket): create, serve, fio crc32c verify;
#     the nbdkit server is killed mid-run: the member fails (status: failed, disconnected; the
#     local member's superblock records it) and fio finishes without an error on the degraded
#     array. (2) nested: the remote member is another `raidkit serve` (raid0 of one file).
# (3) a server that stops answering: the per-request timeout fails the member.
# (5) a killed nbdkit (file plugin) comes back: `raidkit re-add` resyncs only the bitmap's
#     regions, then the remote member alone serves the data correctly.
# (4) bad input: a malformed URI, an unreachable socket -> one line naming the URI, exit 1,
#     the local member untouched.
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
. "$RAIDKIT_SOURCE_DIR/tests/integration/manage_lib.bash"
rk_init
rk_need fio nbdkit
"$RAIDKIT" info "nbd+unix:///?socket=$T/none" 2>&1 | grep -q "built without libnbd" &&
    rk_skip "raidkit was built without libnbd (libnbd-dev)"

NBDKIT_PID=""
# nbdkit_start SOCK ARGS...: nbdkit on a unix socket in the foreground of a background job.
nbdkit_start()
{
    local sock=$1
    shift
    nbdkit -f -U "$sock" "$@" 2>"$T/nbdkit.log" &
    NBDKIT_PID=$!
    local i
    for i in $(seq 100); do
        [ -S "$sock" ] && return 0
        sleep 0.1
    done
    rk_fail "nbdkit $* did not listen on $sock"
}
nbdkit_kill() { kill -KILL "$NBDKIT_PID" 2>/dev/null; wait "$NBDKIT_PID" 2>/dev/null; NBDKIT_PID=""; }
trap 'rc=$?; [ -n "$NBDKIT_PID" ] && kill -KILL "$NBDKIT_PID" 2>/dev/null; (exit $rc); rk_cleanup' EXIT

# --- (1) nbdkit member killed mid-run
rk_log "=== (1) raid1: local file + nbdkit memory member, nbdkit killed during fio"
truncate -s 64M "$T/local"
nbdkit_start "$T/nbdkit.sock" memory 64M
U="nbd+unix:///?socket=$T/nbdkit.sock"
rk_create --level raid1 "$T/local" "$U"
CTL="$T/ctl.sock"
rk_serve --control "$CTL" "$T/local" "$U"
mg_status
[ "$(mg_q "s['slots'][1]['kind']")" = nbd ] || rk_fail "slot 1 kind: $(cat "$T/st.json")"
[ "$(mg_q "s['slots'][1]['connection']")" = connected ] || rk_fail "slot 1 not connected"
(cd "$T" && fio --name=kill --ioengine=nbd --uri="$RK_URI" --rw=randwrite --bsrange=4k-64k \
    --size=24M --iodepth=16 --rate=6m --verify=crc32c --verify_fatal=1 --do_verify=1 \
    --verify_state_save=0 --randseed=4242 --output="$T/fio.kill.out" >/dev/null 2>"$T/fio.kill.err") &
FIO=$!
sleep 1.5
nbdkit_kill
wait "$FIO" || rk_fail "fio failed after the remote member died: $(tail -n 20 "$T/fio.kill.err" "$T/fio.kill.out")"
grep -q "err= 0" "$T/fio.kill.out" || rk_fail "fio errors: $(cat "$T/fio.kill.out")"
mg_status
[ "$(mg_slot_state 1)" = failed ] || rk_fail "slot 1 not failed: $(cat "$T/st.json")"
[ "$(mg_q "s['slots'][1]['connection']")" = disconnected ] || rk_fail "slot 1 connection: $(cat "$T/st.json")"
grep -q "nbd member, disconnected, mean latency" <<<"$("$RAIDKIT" status --control "$CTL")" ||
    rk_fail "text status lacks the nbd line: $("$RAIDKIT" status --control "$CTL")"
rk_fio after --rw=randrw --bs=4k --size=8M --iodepth=8 --verify=crc32c --do_verify=1 --verify_fatal=1
rk_stop
rk_expect_slot_failed 1 "$T/local"

# --- (2) nested: the remote member is another raidkit serve
rk_log "=== (2) nested: raid1 of a local file + a member served by raidkit serve (raid0 of one file)"
truncate -s 64M "$T/inner" "$T/local2"
rk_create --level raid0 "$T/inner"
timeout -k 30 120 "$RAIDKIT" serve --listen "unix:$T/inner.sock" "$T/inner" 2>"$T/inner.log" &
INNER=$!
for i in $(seq 100); do [ -S "$T/inner.sock" ] && break; sleep 0.1; done
[ -S "$T/inner.sock" ] || rk_fail "inner serve did not listen: $(cat "$T/inner.log")"
U2="nbd+unix:///?socket=$T/inner.sock"
rk_create --level raid1 "$T/local2" "$U2"
rk_serve --control "$CTL.2" "$T/local2" "$U2"
rk_fio_verify 16
CTL="$CTL.2" mg_status
CTL="$CTL.2"
[ "$(mg_slot_state 1)" = active ] || rk_fail "nested slot 1: $(cat "$T/st.json")"
[ "$(mg_q "s['slots'][1]['connection']")" = connected ] || rk_fail "nested slot 1 connection"
rk_stop
kill -TERM "$INNER"
wait "$INNER" || rk_fail "inner serve exited with $?"

# --- (3) a server that stops answering: per-request timeout
rk_log "=== (3) timeout: nbdkit stopped (SIGSTOP) while serving, RAIDKIT_NBD_MEMBER_TIMEOUT_MS=1000"
truncate -s 64M "$T/local3"
nbdkit_start "$T/slow.sock" memory 64M
U3="nbd+unix:///?socket=$T/slow.sock"
rk_create --level raid1 "$T/local3" "$U3"
CTL="$T/ctl3.sock"
RAIDKIT_NBD_MEMBER_TIMEOUT_MS=1000 rk_serve --control "$CTL" "$T/local3" "$U3"
kill -STOP "$NBDKIT_PID"
rk_fio slow --rw=write --bs=64k --size=2M --iodepth=4 --verify=crc32c --do_verify=1 --verify_fatal=1
mg_status
[ "$(mg_slot_state 1)" = failed ] || rk_fail "stopped server's slot 1 not failed: $(cat "$T/st.json")"
[ "$(mg_q "s['slots'][1]['connection']")" = timed-out ] || rk_fail "slot 1: $(cat "$T/st.json")"
grep -q "not answered within the timeout" "$RK_LOG" || rk_fail "no timeout message in the log"
rk_stop
kill -CONT "$NBDKIT_PID"
nbdkit_kill
rk_expect_slot_failed 1 "$T/local3"

# --- (5) re-add: the server comes back, the member is re-added through the bitmap
rk_log "=== (5) nbdkit file member killed, restarted, re-added (bitmap) while serving"
truncate -s 64M "$T/local5" "$T/remote5"
nbdkit_start "$T/nk5.sock" file "$T/remote5"
U5="nbd+unix:///?socket=$T/nk5.sock"
rk_create --level raid1 "$T/local5" "$U5"
CTL="$T/ctl5.sock"
# This case is the manual re-add: the server's own watcher (volume_remote.c, first retry after
# 1 s by default) would race it, so its first retry is put off past the test.
RAIDKIT_NBD_RECONNECT_MS=600000 RAIDKIT_NBD_RECONNECT_MAX_MS=600000 \
    rk_serve --control "$CTL" "$T/local5" "$U5"
rk_fio w1 --rw=write --bs=64k --size=32M --verify=crc32c --do_verify=0
nbdkit_kill
rm -f "$T/nk5.sock"
rk_fio w2 --rw=randwrite --bs=4k --offset=4M --size=4M --verify=crc32c --do_verify=1 --verify_fatal=1
mg_status
[ "$(mg_slot_state 1)" = failed ] || rk_fail "slot 1 not failed after nbdkit died: $(cat "$T/st.json")"
nbdkit_start "$T/nk5.sock" file "$T/remote5"
"$RAIDKIT" re-add --slot 1 "$U5" --control "$CTL" --wait >"$T/readd.out" 2>&1 ||
    rk_fail "re-add of the returning URI member: $(cat "$T/readd.out")"
grep -q "bitmap" "$T/readd.out" || rk_fail "re-add did not use the bitmap: $(cat "$T/readd.out")"
mg_status
[ "$(mg_slot_state 1)" = active ] || rk_fail "slot 1 not active after re-add: $(cat "$T/st.json")"
[ "$(mg_q "s['slots'][1]['connection']")" = connected ] || rk_fail "slot 1 not connected after re-add"
mg_fail 0 # the remote member alone must now hold every byte
rk_fio v2 --rw=randwrite --bs=4k --offset=4M --size=4M --verify=crc32c --verify_only=1 --verify_fatal=1
rk_stop
nbdkit_kill

# --- (4) bad input
rk_log "=== (4) bad input"
truncate -s 64M "$T/local4"
before=$(rk_sums "$T/local4")
for u in "nbd://[bad" "nbd+unix:///?socket=$T/no-such.sock"; do
    "$RAIDKIT" create --level raid1 "$T/local4" "$u" >"$T/bad.out" 2>"$T/bad.err"
    rc=$?
    [ "$rc" -eq 1 ] || rk_fail "create with $u: exit $rc (want 1): $(cat "$T/bad.err")"
    [ "$(wc -l <"$T/bad.err")" -eq 1 ] || rk_fail "create with $u: not one line: $(cat "$T/bad.err")"
    grep -qF -- "$u" "$T/bad.err" || rk_fail "message does not name $u: $(cat "$T/bad.err")"
done
[ "$(rk_sums "$T/local4")" = "$before" ] || rk_fail "the local member was written by a refused create"
echo PASS
