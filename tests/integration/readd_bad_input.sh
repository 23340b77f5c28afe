#!/bin/bash
# Bad re-adds get one clear line and write nothing: a member of another array, a member of
# this array's other slot, a slot that is active, a file without a superblock, a slot out of
# range, no MEMBER; online and offline. Then the right member is taken back.
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/integration/manage_lib.bash"
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/integration/readd_lib.bash"
rk_init

rk_members 3 9M o-
rk_create --level raid5 "${M[@]}"
FOREIGN=("${M[@]}")
rk_members 3 9M b-
rk_create --level raid5 "${M[@]}"
cp "${M[2]}" "$T/m2.copy"
truncate -s 9M "$T/blank"
CTL="$T/ctl"
rk_serve --control "$CTL" "${M[@]}"
mg_fail 1
C=(--control "$CTL")
ra_readd_refused 1 "${FOREIGN[1]}" "is a member of another array \(" "${C[@]}"
ra_readd_refused 1 "$T/m2.copy" "is the old member of slot 2, not of slot 1" "${C[@]}"
ra_readd_refused 0 "${M[1]}" "slot 0 is active: nothing to re-add" "${C[@]}"
ra_readd_refused 1 "$T/blank" "holds no usable raidkit superblock" "${C[@]}"
ra_readd_refused 7 "${M[1]}" "slot 7 out of range|slot 7" "${C[@]}"
OUT=$("$RAIDKIT" re-add --slot 1 --control "$CTL" 2>&1) && rk_fail "re-add without MEMBER accepted"
echo "$OUT" | grep -q "needs --slot N, the MEMBER" || rk_fail "usage error: $OUT"
mg_status
[ "$(mg_slot_state 1)" = failed ] || rk_fail "slot 1 changed by refused re-adds: $(cat "$T/st.json")"
rk_stop

# Offline, the same refusals over the member files.
ra_readd_refused 1 "${FOREIGN[1]}" "is a member of another array \(" "${M[0]}" "${M[2]}"
ra_readd_refused 2 "${M[1]}" "slot 2 is active: nothing to re-add" "${M[0]}" "${M[2]}"
ra_readd 1 "${M[1]}" "${M[0]}" "${M[2]}"
echo "$OUT" | grep -q "resyncing only the regions" || rk_fail "offline re-add: $OUT"
echo PASS
