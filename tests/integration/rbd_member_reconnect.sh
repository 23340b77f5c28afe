#!/bin/bash
# rbd_member_reconnect: a failed rbd member comes back and is re-added through the bitmap. A raid1
# of an RBD image and a local file on a one-node cluster whose OSD is bluestore on a file
# (scripts/ceph-one-node.sh, CEPH_OBJECTSTORE=bluestore: unlike memstore, its objects survive an
# OSD restart). fio --verify=crc32c runs while the OSD is SIGKILLed: the member's requests time
# out (rados_osd_op_timeout 3 s), it is failed and recorded in the file's superblock, fio sees no
# error. The OSD restarts: the remote-member watcher of `serve` reopens `rbd:rk/a` (backoff) and
# re-adds it through the write-intent bitmap by itself, resyncing only what was written while it
# was away; the RBD member alone then returns every byte fio wrote.
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
. "$RAIDKIT_SOURCE_DIR/tests/integration/manage_lib.bash"
. "$RAIDKIT_SOURCE_DIR/tests/integration/remote_lib.bash"
. "$RAIDKIT_SOURCE_DIR/tests/lib/rbd_lib.sh"
rk_init
rk_need fio
export CEPH_OBJECTSTORE=bluestore CEPH_OSD_BLOCK_SIZE=$((2 * 1024 * 1024 * 1024))
rbd_cluster
export CEPH_ARGS="--rados_osd_op_timeout=3"
export RAIDKIT_NBD_RECONNECT_MS=300 RAIDKIT_NBD_RECONNECT_MAX_MS=1000

truncate -s 64M "$T/local"
rbd_image a 64M
R="rbd:rk/a"
rk_create --level raid1 "$R" "$T/local"
CTL="$T/ctl.sock"
rk_serve --control "$CTL" "$R" "$T/local"
mg_status
S0=$(rm_slot 0)
[ "$(mg_q "$S0['kind']")" = rbd ] || rk_fail "slot 0 kind: $(cat "$T/st.json")"

FILL=(--rw=write --bs=1M --size=8M --verify=crc32c)
KILLJOB=(--rw=randwrite --bs=4k --offset=8M --size=4M --iodepth=16 --verify=crc32c)
rk_fio fill "${FILL[@]}" --do_verify=0
rm_wait_q 30 "s['bitmap']['set'] == 0" "the bitmap did not clear the fill's bits"

rk_log "=== the OSD SIGKILLed during fio verify"
rm_fio_bg kill "${KILLJOB[@]}" --rate=1m --do_verify=1 --verify_fatal=1
sleep 1.5
kill -KILL "$(cat "$RBD_DIR/run/osd.0.pid")" || rk_fail "cannot kill the OSD"
rm_fio_wait kill
mg_status
[ "$(mg_slot_state 0)" = failed ] || rk_fail "slot 0 not failed: $(cat "$T/st.json")"
rk_expect_slot_failed 0 "$T/local"

rk_log "=== the OSD back (same bluestore file): automatic re-add through the bitmap"
ceph-osd -c "$CEPH_CONF" -i 0 >"$T/osd2.out" 2>&1 || rk_fail "ceph-osd did not restart: $(cat "$T/osd2.out")"
rm_wait_back 0 40
grep -q "is back after" "$RK_LOG" || rk_fail "no reconnect message in the log"
B=$(rm_resynced 0)
rk_log "re-add resynced $B bytes"
[ "$B" -gt 0 ] && [ "$B" -le $((4 * 1024 * 1024)) ] ||
    rk_fail "re-add resynced $B bytes: want 0 < n <= 4 MiB (the range written since the bits cleared)"

mg_fail 1 # the RBD member alone must now hold every byte
rk_fio vfill "${FILL[@]}" --verify_only=1 --verify_fatal=1
rk_fio vkill "${KILLJOB[@]}" --verify_only=1 --verify_fatal=1
rk_stop
echo "PASS: rbd_member_reconnect"
