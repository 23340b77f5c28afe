#!/bin/bash
# remote_raid1_nbdkit: raid1 of a local file and an NBD member served by nbdkit over TCP on
# 127.0.0.1 (docs/CLI.md "Member URIs").
# (1) file plugin under the log filter: multi-conn (4 connections), FUA writes and FLUSH reach
#     the server; nbdkit SIGKILLed during fio --verify=crc32c: member failed, 0 verify errors;
#     restarted: re-added automatically through the bitmap, resync bytes = what changed only.
# (2) memory plugin: a restarted memory server is empty, so the member that answers is not
#     the one that left: refused (never trusted), the slot stays failed; replace --with then
#     rebuilds it whole and it alone returns the data.
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
. "$RAIDKIT_SOURCE_DIR/tests/integration/manage_lib.bash"
. "$RAIDKIT_SOURCE_DIR/tests/integration/remote_lib.bash"
rk_init
rk_need fio nbdkit
rm_need_nbd
trap 'rc=$?; rm_cleanup; (exit $rc); rk_cleanup' EXIT
export RAIDKIT_NBD_RECONNECT_MS=300 RAIDKIT_NBD_RECONNECT_MAX_MS=1000

rk_log "=== (1) nbdkit file plugin (log filter) over TCP"
truncate -s 64M "$T/local" "$T/rfile"
P=$(rm_port)
NK=(--filter=log file "$T/rfile" logfile="$T/nk.req")
rm_nbdkit nk "$P" "${NK[@]}"
U="nbd://127.0.0.1:$P/?timeout-ms=5000"
rk_create --level raid1 "$T/local" "$U"
CTL="$T/ctl.sock"
rk_serve --control "$CTL" "$T/local" "$U"
mg_status
S1=$(rm_slot 1)
[ "$(mg_q "$S1['connections'] == 4 and $S1['multi_conn'] and $S1['fua'] and $S1['timeout_ms'] == 5000")" = True ] ||
    rk_fail "slot 1: want 4 connections, multi_conn, fua, timeout 5000 ms: $(cat "$T/st.json")"
FILL=(--rw=write --bs=1M --size=8M --verify=crc32c)
KILLJOB=(--rw=randwrite --bs=4k --offset=8M --size=4M --iodepth=16 --verify=crc32c)
rk_fio fill "${FILL[@]}" --do_verify=0 --fsync=2
grep -q "Write .*fua=1" "$T/nk.req" || rk_fail "no FUA write reached nbdkit (superblock/bitmap writes are FUA)"
grep -q " Flush " "$T/nk.req" || rk_fail "no FLUSH reached nbdkit (fio --fsync)"
[ "$(grep -o "connection=[0-9]*" "$T/nk.req" | sort -u | wc -l)" -ge 4 ] ||
    rk_fail "requests came on fewer than 4 connections: $(grep -o "connection=[0-9]*" "$T/nk.req" | sort | uniq -c)"
rm_wait_q 30 "s['bitmap']['set'] == 0" "the bitmap did not clear the fill's bits"
rm_fio_bg kill "${KILLJOB[@]}" --rate=1m --do_verify=1 --verify_fatal=1
sleep 1.5
rm_kill nk
rm_fio_wait kill
mg_status
[ "$(mg_slot_state 1)" = failed ] || rk_fail "slot 1 not failed after nbdkit died: $(cat "$T/st.json")"
rk_expect_slot_failed 1 "$T/local"
rm_nbdkit nk "$P" "${NK[@]}"
rm_wait_back 1 30
R=$(rm_resynced 1)
rk_log "re-add resynced $R bytes"
[ "$R" -gt 0 ] && [ "$R" -le $((4 * 1024 * 1024)) ] ||
    rk_fail "re-add resynced $R bytes: want 0 < n <= 4 MiB"
mg_fail 0
rk_fio vfill "${FILL[@]}" --verify_only=1 --verify_fatal=1
rk_fio vkill "${KILLJOB[@]}" --verify_only=1 --verify_fatal=1
rk_stop
rm_kill nk

rk_log "=== (2) nbdkit memory plugin: the server comes back empty -> refused, replace rebuilds"
truncate -s 64M "$T/local2" "$T/spare"
P2=$(rm_port)
rm_nbdkit mem "$P2" memory 64M
U2="nbd://127.0.0.1:$P2/"
rk_create --level raid1 "$T/local2" "$U2"
rk_serve --control "$CTL.2" "$T/local2" "$U2"
CTL="$CTL.2"
rk_fio fill2 "${FILL[@]}" --do_verify=0
rm_kill mem
rk_fio w2 "${KILLJOB[@]}" --do_verify=1 --verify_fatal=1
mg_status
[ "$(mg_slot_state 1)" = failed ] || rk_fail "slot 1 not failed after the memory server died"
rm_nbdkit mem "$P2" memory 64M
rm_wait_q 20 "$S1['reconnect']['state'] == 'refused'" "the empty memory export was not refused"
grep -q "no usable raidkit superblock" <<<"$(mg_q "$S1['reconnect']['last_error']")" ||
    rk_fail "refusal reason: $(cat "$T/st.json")"
[ "$(mg_slot_state 1)" = failed ] || rk_fail "a refused member left the failed state: $(cat "$T/st.json")"
grep -q "answers again but is refused" "$RK_LOG" || rk_fail "no refusal message in the log"
# The same server under another URI string (connections=2): replace, not re-add, of the slot
mg_replace 1 "$U2?connections=2" 200
mg_wait_job 60
mg_status
[ "$(mg_slot_state 1)" = active ] || rk_fail "slot 1 not active after replace: $(cat "$T/st.json")"
mg_fail 0
rk_fio vfill2 "${FILL[@]}" --verify_only=1 --verify_fatal=1
rk_fio vw2 "${KILLJOB[@]}" --verify_only=1 --verify_fatal=1
rk_stop
rm_kill mem
echo PASS
