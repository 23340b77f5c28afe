#!/bin/bash
# C09 (cache device fails): a writeback cache over RAID1; every cache-member I/O fails with EIO
# (`raidkit cache fault fail-all`, the fault member of serve --debug-fault cache:).
#  - clean cache: clients see no error, data exact, the volume runs uncached; writes made
#    meanwhile are never shadowed by the stale cached copy once the cache is back;
#  - 4 MiB dirty: reads of the dirty range fail with EIO (never the older backing data), other
#    ranges read fine; once the cache member is readable again (fault cleared) the cache recovers
#    by itself (retried once a second) and the dirty data reads back exactly; the same after a
#    restart, and a detach writes it back to the array.
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/integration/manage_lib.bash"
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/cache_lib.sh"
rk_init

rk_members 2 33M
rk_create --level 1 "${M[@]}"
C="$T/cache"
ca_create "$C" 24M 4K writeback "${M[@]}"
CTL="$T/ctl"
rk_serve --control "$CTL" --cache "$C" --debug-fault cache: "${M[@]}"

rk_log "=== clean cache fails"
rk_stamp 1 0 $((4 * MiB))
ca_mode writethrough # writes the dirty blocks back: the cache is clean
rk_verify 0 $((4 * MiB)) 1 # and reads them from the cache
[ "$(ca_q "c['dirty_blocks'] == 0 and c['read_hits'] > 0")" = True ] ||
    rk_fail "cache not clean or not hit: $(cat "$T/st.json")"
ca_fault fail-all
rk_verify 0 $((4 * MiB)) 1
[ "$(ca_q "c['state']")" = failed ] || rk_fail "cache state not failed: $(cat "$T/st.json")"
rk_stamp 2 0 $((2 * MiB)) # bypasses the failed cache
rk_verify 0 $((2 * MiB)) 2 $((2 * MiB)) $((2 * MiB)) 1
ca_fault clear
ca_wait "c['state'] == 'ok'" 10
rk_verify 0 $((2 * MiB)) 2 $((2 * MiB)) $((2 * MiB)) 1 # no stale cached copy of gen 1
rk_log "clean case ok"

rk_log "=== 4 MiB dirty"
ca_mode writeback
ca_dirty_fails 2
rk_log "dirty case recovered"

rk_log "=== restart, then detach writes back"
ca_restart_detach "$C" 2 "${M[@]}"
rk_verify $((8 * MiB)) $((4 * MiB)) 3 0 $((2 * MiB)) 2
rk_stop
echo "PASS: C09 cache device fails"
