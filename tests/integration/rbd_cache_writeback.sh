#!/bin/bash
# rbd_cache_writeback: a local cache file in writeback mode in front of a Ceph RBD image (the
# array: linear over `rbd:rk/b`; docs/CLI.md "cache create"), on a one-node cluster started by
# the test (scripts/ceph-one-node.sh).
# (1) fio --verify=crc32c through the writeback cache (random mixed + 1M sequential).
# (2) the cache device fails while 4 MiB are dirty (newer than what the RBD image holds): reads of
#     the dirty range fail with EIO, never the older data of the image; other ranges read fine;
#     once the cache device is readable again the dirty data reads back exactly.
# (3) restart through the cache, detach (everything written back and rbd_flush'ed), then the
#     image alone, served without a cache, holds every write.
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
. "$RAIDKIT_SOURCE_DIR/tests/integration/manage_lib.bash"
. "$RAIDKIT_SOURCE_DIR/tests/lib/cache_lib.sh"
. "$RAIDKIT_SOURCE_DIR/tests/lib/rbd_lib.sh"
rk_init
rk_need fio
rbd_cluster

R=rbd:rk/b
rbd_image b 49M
rk_create --level linear "$R"
C="$T/cache"
ca_create "$C" 24M 4K writeback "$R"
CTL="$T/ctl"

rk_log "=== (1) writeback cache over RBD: fio verify"
rk_serve --control "$CTL" --cache "$C" --debug-fault cache: "$R"
mg_status
[ "$(mg_q "s['slots'][0]['kind']")" = rbd ] || rk_fail "slot 0 kind: $(cat "$T/st.json")"
[ "$(ca_q "c['mode']")" = writeback ] || rk_fail "cache mode: $(cat "$T/st.json")"
rk_fio_verify 16
[ "$(ca_q "c['write_hits'] + c['write_misses'] > 0 and c['used_blocks'] > 0")" = True ] ||
    rk_fail "the cache took no writes: $(cat "$T/st.json")"

rk_log "=== (2) the cache device fails with 4 MiB dirty: EIO, never the RBD image's older data"
rk_stamp 2 $((8 * MiB)) $((4 * MiB))
rk_stamp 1 0 $((2 * MiB))
ca_mode writethrough # gen 2 and gen 1 written back to the image: the cache is clean
[ "$(ca_q "c['dirty_blocks']")" = 0 ] || rk_fail "cache not clean: $(cat "$T/st.json")"
ca_mode writeback
ca_dirty_fails 1 # gen 3, newer than the image's gen 2, dirty in the cache only
rk_log "dirty case: EIO while failed, exact once back"

rk_log "=== (3) restart, detach, then the RBD image alone"
ca_restart_detach "$C" 1 "$R"
rk_stop
rk_serve "$R"
rk_verify $((8 * MiB)) $((4 * MiB)) 3 0 $((2 * MiB)) 1
rk_stop
echo "PASS: rbd_cache_writeback"
