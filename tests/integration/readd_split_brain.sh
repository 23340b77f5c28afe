#!/bin/bash
# Re-add after a split brain: the returning member wrote on its own while away. RAID1 of 2,
# gen 1 everywhere; m1 failed, gen 2 at [0, 1 MiB) reaches m0 only; then m1 is served alone
# (--degraded, a newer event: it is the array now) and gets gen 3 at [8 MiB, 9 MiB). m0 is
# stale; `re-add --slot 0 m0` must also resync the regions m0 wrote on its own (its own bitmap
# marks them; the array's cannot): scrub 0 mismatches, and with m1 failed m0 serves gen 1
# everywhere except gen 3 at 8 MiB, never its own gen 2.
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/integration/manage_lib.bash"
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/integration/readd_lib.bash"
rk_init
export RAIDKIT_BITMAP_IDLE_MS=300

rk_members 2 17M sb-
rk_create --level raid1 "${M[@]}"
CTL="$T/ctl"
rk_serve --control "$CTL" "${M[@]}"
size=$(rk_py size "$RK_URI") || rk_fail size
rk_stamp 1 0 "$size"
sleep 1.5 # the bits of gen 1 are cleared (idle), so the bitmap names only later writes
mg_fail 1
rk_stamp 2 0 "$MiB"
rk_stop

rk_log "=== m1 alone: the split"
rk_serve --degraded "${M[1]}"
rk_stamp 3 $((8 * MiB)) "$MiB"
rk_stop

rk_serve --control "$CTL" "${M[@]}"
grep -q "member ${M[0]} is stale" "$RK_LOG" || rk_fail "m0 not named stale: $(cat "$RK_LOG")"
ra_readd 0 "${M[0]}" --control "$CTL" --wait
OUT=$("$RAIDKIT" scrub --control "$CTL" 2>&1) || rk_fail "scrub: $OUT"
echo "$OUT" | grep -q "^scrub finished: 0 mismatches" || rk_fail "scrub after the re-add: $OUT"
mg_fail 1
rk_verify 0 $((8 * MiB)) 1 $((8 * MiB)) "$MiB" 3 $((9 * MiB)) $((size - 9 * MiB)) 1
rk_stop
echo PASS
