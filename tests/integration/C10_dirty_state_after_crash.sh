#!/bin/bash
# C10 (dirty state after a crash): the backing (RAID1) filled with 0xaa; through a writeback
# cache write 0xbb over 4 MiB, FLUSH (the data is dirty in the cache only), power cut of every
# device at the next write (cache and members one power domain, unflushed writes dropped), restart
# (the cache loads: its dirty state is exact), detach (writes everything back), read the backing
# directly (served without the cache): all 0xbb, the rest still 0xaa.
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/integration/manage_lib.bash"
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/torture_lib.sh"
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/cache_lib.sh"
rk_init
ca_write_py

rk_members 2 17M
rk_create --level 1 "${M[@]}"
rk_serve "${M[@]}"
ca_py fill "$RK_URI" 0 $((16 * MiB)) 0xaa || rk_fail "fill 0xaa"
rk_stop
C="$T/cache"
ca_create "$C" 16M 4K writeback "${M[@]}"
CTL="$T/ctl"

rk_serve --control "$CTL" --cache "$C" --debug-fault "all:keep=none,on-cut=hang" "${M[@]}"
ca_py fill "$RK_URI" 0 $((4 * MiB)) 0xbb || rk_fail "write 0xbb"
[ "$(ca_q "c['dirty_bytes'] >= 4 * 1024 * 1024")" = True ] || rk_fail "not dirty: $(cat "$T/st.json")"
ca_fault "cut-after=0"
ca_cut_client fill "$RK_URI" $((8 * MiB)) 4096 0xcc
rk_log "power cut after the FLUSH"

rk_serve --control "$CTL" --cache "$C" "${M[@]}"
[ "$(ca_q "c['dirty_bytes'] >= 4 * 1024 * 1024")" = True ] ||
    rk_fail "dirty state lost in the crash: $(cat "$T/st.json")"
ca_py check "$RK_URI" 0 $((4 * MiB)) 0xbb || rk_fail "through the cache after the crash"
ca_detach
rk_stop
rk_serve "${M[@]}" # the backing alone (detach cleared the binding)
ca_py check "$RK_URI" 0 $((4 * MiB)) 0xbb || rk_fail "backing after detach: not all 0xbb"
ca_py check "$RK_URI" $((4 * MiB)) $((4 * MiB)) 0xaa || rk_fail "backing after detach: 0xaa damaged"
rk_stop
echo "PASS: C10 dirty state after a crash"
