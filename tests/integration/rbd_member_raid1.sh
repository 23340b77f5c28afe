#!/bin/bash
# rbd_member_raid1: a raid1 of a Ceph RBD image (`rbd:rk/IMAGE@CONF`, docs/CLI.md "Member URIs")
# and a local file, on a one-node cluster started by the test (scripts/ceph-one-node.sh).
# (1) bad input: a missing image, a missing pool, a malformed spec -> one line naming the
#     member and the reason, exit 1, the local file untouched.
# (2) create, serve, status kind rbd, fio --verify=crc32c (random mixed + 1M sequential);
#     status shows connection "connected" and the mean latency (JSON and text).
# (3) the OSD dies mid-run: the RBD member's requests fail (rados_osd_op_timeout 3 s), the member
#     is failed like a local one (slot failed, the file's superblock records it) and fio finishes
#     with 0 verify errors on the degraded array; status shows its connection timed-out/failed.
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
. "$RAIDKIT_SOURCE_DIR/tests/integration/manage_lib.bash"
. "$RAIDKIT_SOURCE_DIR/tests/lib/rbd_lib.sh"
rk_init
rk_need fio
rbd_cluster

rk_log "=== (1) bad input"
truncate -s 64M "$T/local"
rbd_image a 64M
before=$(rk_sums "$T/local")
for bad in "rbd:rk/missing" "rbd:nopool/a" "rbd:rk" "rbd:rk/a@$T/none.conf"; do
    out=$("$RAIDKIT" create --level raid1 "$T/local" "$bad" 2>&1)
    rc=$?
    [ "$rc" = 1 ] || rk_fail "create with $bad: exit $rc, want 1: $out"
    [ "$(echo "$out" | grep -c .)" = 1 ] || rk_fail "create with $bad: not one line: $out"
    echo "$out" | grep -qF "$bad" || rk_fail "create with $bad: message does not name it: $out"
    rk_log "refused: $out"
done
out=$("$RAIDKIT" info rbd:rk/missing 2>&1) && rk_fail "info of a missing image succeeded"
echo "$out" | grep -q "no such image missing in pool rk" || rk_fail "info message: $out"
[ "$(rk_sums "$T/local")" = "$before" ] || rk_fail "a refused create changed the local member"

rk_log "=== (2) raid1 of rbd:rk/a@CONF + a file: fio verify"
R="rbd:rk/a@$CEPH_CONF"
rk_create --level raid1 "$R" "$T/local"
CTL="$T/ctl.sock"
rk_serve --control "$CTL" "$R" "$T/local"
mg_status
[ "$(mg_q "s['slots'][0]['kind']")" = rbd ] || rk_fail "slot 0 kind: $(cat "$T/st.json")"
rk_fio_verify 24
# status shows the rbd member's state and latency as for nbd members (docs/CLI.md "Member URIs").
mg_status
[ "$(mg_q "s['slots'][0]['connection']")" = connected ] || rk_fail "slot 0 connection: $(cat "$T/st.json")"
[ "$(mg_q "s['slots'][0]['latency_us'] > 0")" = True ] || rk_fail "slot 0 latency: $(cat "$T/st.json")"
grep -q "rbd member, connected, mean latency [0-9]* us" <<<"$("$RAIDKIT" status --control "$CTL")" ||
    rk_fail "text status lacks the rbd member line: $("$RAIDKIT" status --control "$CTL")"

rk_log "=== (3) the OSD dies during fio: the rbd member fails, fio sees no error"
# OSD requests time out after 3 s instead of 30 s, so the member fails quickly. Only from here:
# on a loaded machine (CI under ASan, other tests' clusters) a live OSD's request can take
# longer than 3 s, which would fail the member in (2).
rk_stop
export CEPH_ARGS="--rados_osd_op_timeout=3"
rk_serve --control "$CTL" "$R" "$T/local"
(cd "$T" && fio --name=kill --ioengine=nbd --uri="$RK_URI" --rw=randwrite --bsrange=4k-64k \
    --size=16M --iodepth=16 --rate=4m --verify=crc32c --verify_fatal=1 --do_verify=1 \
    --verify_state_save=0 --randseed=77 --output="$T/fio.kill.out" >/dev/null 2>"$T/fio.kill.err") &
FIO=$!
sleep 1.5
kill -KILL "$(cat "$RBD_DIR/run/osd.0.pid")" || rk_fail "cannot kill the OSD"
wait "$FIO" || rk_fail "fio failed after the rbd member died: $(tail -n 20 "$T/fio.kill.err" "$T/fio.kill.out")"
grep -q "err= 0" "$T/fio.kill.out" || rk_fail "fio errors: $(cat "$T/fio.kill.out")"
mg_status
[ "$(mg_slot_state 0)" = failed ] || rk_fail "slot 0 not failed: $(cat "$T/st.json")"
grep -q "rbd member rbd:rk/a@.*the member fails" "$RK_LOG" || rk_fail "no member-failure line in the log"
[ "$(mg_q "s['slots'][0]['connection'] in ('timed-out', 'failed')")" = True ] ||
    rk_fail "slot 0 connection after the OSD died: $(cat "$T/st.json")"
rk_log "rbd member after the OSD died: $(mg_q "s['slots'][0]['connection']")"
rk_fio_verify 8
rk_stop
"$RAIDKIT" info --json "$T/local" >"$T/info.json" 2>/dev/null
grep -q '"slot 0 is recorded failed"' "$T/info.json" ||
    rk_fail "the local member's superblock does not record slot 0 failed: $(cat "$T/info.json")"
echo "PASS: rbd_member_raid1"
