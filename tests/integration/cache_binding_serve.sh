#!/bin/bash
# An array bound to a cache is not served without it while the cache may hold dirty data:
# refused with a message naming the cache, unless --force (the binding is then cleared and the
# cache refused as stale). A clean binding (after leaving writeback) lets the array start alone;
# that clears the binding, so the old cache is refused as stale afterwards. Served through the
# cache, the dirty data reads back after a restart.
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/integration/manage_lib.bash"
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/cache_lib.sh"
rk_init
CTL="$T/ctl"

rk_members 2 17M
rk_create --level 1 "${M[@]}"
C="$T/cache"
ca_create "$C" 8M 4K writeback "${M[@]}"
rk_serve --cache "$C" "${M[@]}"
rk_stamp 1 0 $((1 * MiB))
rk_stop
cuuid=$(rk_info_json "$C" "${M[@]}" | "$RK_PY" -c 'import json,sys; print(json.load(sys.stdin)["caches"][0]["uuid"])')
rk_serve_refused "cache $cuuid.*dirty" "${M[@]}"
rk_serve --control "$CTL" --cache "$C" "${M[@]}"
rk_verify 0 $((1 * MiB)) 1
ca_mode writethrough # writes back and clears the binding's dirty flag
rk_stop
rk_serve "${M[@]}" # clean binding: starts alone, clears it
rk_verify 0 $((1 * MiB)) 1
rk_stamp 2 0 4096
rk_stop
rk_serve_refused "stale" --cache "$C" "${M[@]}"

rk_log "=== --force without the dirty cache"
rk_members 2 17M f
rk_create --level 1 "${M[@]}"
ca_create "$C" 8M 4K writeback "${M[@]}"
rk_serve --cache "$C" "${M[@]}"
rk_stamp 3 0 $((1 * MiB))
rk_stop
rk_serve --force "${M[@]}"
rk_stop
rk_serve_refused "stale" --cache "$C" "${M[@]}"
echo "PASS: cache binding at serve"
