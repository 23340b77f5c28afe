#!/bin/bash
# A truncated member (shorter than its superblock's data area: truncate -s -1M) is set aside at
# assembly with a message naming it and the sizes (U18): serve without --degraded is refused
# like for a missing member, nothing written; with --degraded the array starts degraded
# without it, the slot counted missing, and every byte reads back from the others (no EIO, no
# short read). info and assemble name it too.
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/integration/manage_lib.bash"
rk_init

rk_members 3 8M
rk_create --level raid5 "${M[@]}"
SIZE=$(rk_array_size "${M[@]}")
rk_serve "${M[@]}"
rk_stamp 1 0 "$SIZE"
rk_stop
truncate -s -1M "${M[1]}"

before=$(sha256sum "${M[@]}")
rk_serve_refused "${M[1]} is truncated: [0-9]+ bytes, its superblock needs [0-9]+" "${M[@]}"
grep -Eqi "missing|degraded" "$RK_LOG_LAST" || rk_fail "refusal does not say the slot is missing: $(cat "$RK_LOG_LAST")"
[ "$(sha256sum "${M[@]}")" = "$before" ] || rk_fail "refused serve with a truncated member changed members"

"$RAIDKIT" info "${M[@]}" >"$T/info.out" 2>&1
grep -q "truncated" "$T/info.out" || rk_fail "info does not name the truncated member: $(cat "$T/info.out")"

CTL="$T/ctl"
rk_serve --degraded --control "$CTL" "${M[@]}"
grep -q "${M[1]} is truncated" "$RK_LOG" || rk_fail "serve log does not name the truncated member: $(cat "$RK_LOG")"
mg_status
[ "$(mg_q "s['degraded']")" = True ] || rk_fail "not degraded: $(cat "$T/st.json")"
[ "$(mg_slot_state 1)" != active ] || rk_fail "the truncated member's slot is active: $(cat "$T/st.json")"
rk_verify 0 "$SIZE" 1
rk_stamp 2 0 "$SIZE"
rk_verify 0 "$SIZE" 2
rk_stop
echo PASS
