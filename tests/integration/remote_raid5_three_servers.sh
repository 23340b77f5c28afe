#!/bin/bash
# remote_raid5_three_servers: raid5 of 3 NBD members on three servers over TCP on 127.0.0.1
# (two nbdkit file plugins and one `raidkit serve`). One server is SIGKILLed during fio
# --verify=crc32c: its member fails, fio sees no error (degraded reads reconstruct); it comes
# back and is re-added automatically through the bitmap; then, with another member failed (so
# the returned member's blocks are needed), every byte fio wrote verifies.
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
. "$RAIDKIT_SOURCE_DIR/tests/integration/manage_lib.bash"
. "$RAIDKIT_SOURCE_DIR/tests/integration/remote_lib.bash"
rk_init
rk_need fio nbdkit
rm_need_nbd
trap 'rc=$?; rm_cleanup; (exit $rc); rk_cleanup' EXIT
export RAIDKIT_NBD_RECONNECT_MS=300 RAIDKIT_NBD_RECONNECT_MAX_MS=1000

truncate -s 64M "$T/r0" "$T/r1" "$T/r2"
P0=$(rm_port)
P1=$(rm_port)
P2=$(rm_port)
rm_nbdkit s0 "$P0" file "$T/r0"
rm_nbdkit s1 "$P1" file "$T/r1"
rk_create --level linear "$T/r2"
rm_raidkit s2 "$P2" "$T/r2"
U=("nbd://127.0.0.1:$P0/" "nbd://127.0.0.1:$P1/" "nbd://127.0.0.1:$P2/")
rk_create --level raid5 "${U[@]}"
CTL="$T/ctl.sock"
rk_serve --control "$CTL" "${U[@]}"
FILL=(--rw=write --bs=1M --size=16M --verify=crc32c)
KILLJOB=(--rw=randwrite --bsrange=4k-64k --offset=16M --size=8M --iodepth=16 --verify=crc32c)
rk_fio fill "${FILL[@]}" --do_verify=0
# Initial sync done and the fill's bits cleared (idle 5 s): from here the bitmap marks only
# the writes of the kill job.
rm_wait_q 40 "s['bitmap']['set'] == 0 and s['bitmap']['unsynced'] == 0" "the bitmap did not clear"
rm_fio_bg kill "${KILLJOB[@]}" --rate=2m --do_verify=1 --verify_fatal=1
sleep 1.5
rm_kill s1
rm_fio_wait kill
mg_status
[ "$(mg_slot_state 1)" = failed ] || rk_fail "slot 1 not failed after its server died: $(cat "$T/st.json")"
rk_fio degraded "${FILL[@]}" --verify_only=1 --verify_fatal=1
mg_status
rk_log "bitmap while slot 1 is away: $(mg_q "s['bitmap']")"
# Only the kill job's regions may be marked: array [16M, 24M) of a 3-member raid5 (2 data
# chunks per row) is member data [8M, 12M), 64 regions of 64 KiB. (A write from the middle of
# one chunk into the next chunk of its row used to mark the whole member: 1008 of 1008.)
SET=$(mg_q "s['bitmap']['set']")
REGION=$(mg_q "s['bitmap']['region']")
[ "$SET" -gt 0 ] && [ "$SET" -le $((4 * 1024 * 1024 / REGION)) ] ||
    rk_fail "$SET regions marked while slot 1 is away; the writes since touched at most 4 MiB per member"
rm_nbdkit s1 "$P1" file "$T/r1"
rm_wait_back 1 40
R=$(rm_resynced 1)
rk_log "re-add resynced $R bytes of a 62 MiB data area ($SET regions marked while away)"
# A bitmap re-add (not a whole rebuild) that resyncs only the regions marked while it was away.
grep -q "is back after .*resyncing only the regions the write-intent bitmap marks" "$RK_LOG" ||
    rk_fail "the returning member was not re-added through the bitmap: $(tail -n 5 "$RK_LOG")"
[ "$R" -gt 0 ] && [ "$R" -le $((SET * REGION)) ] ||
    rk_fail "re-add resynced $R bytes; $SET regions of $REGION bytes were marked while away"
mg_fail 0 # the re-added member's data is needed now
rk_fio vfill "${FILL[@]}" --verify_only=1 --verify_fatal=1
rk_fio vkill "${KILLJOB[@]}" --verify_only=1 --verify_fatal=1
rk_stop
echo PASS
