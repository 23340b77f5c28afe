#!/bin/bash
# C01_write_hole_raid5: case C01 (docs/FORMAT.md "Partial parity log"). RAID5 of 3 x 1 MiB,
# chunk 64K, stamped gen 1; a 4 KiB gen-2 write at offset 0 reaches m0 (D0 of stripe 0), then
# m2 (its parity member) loses power before the parity write. Remove m1 and start m0 + m2
# dirty and degraded WITHOUT --force: the log is replayed, [64K, 128K) reads gen 1, offset 0
# reads all gen 1 or all gen 2. With all 3 back after the same cut, scrub reports 0. An array
# created with --write-hole none still refuses that start without --force, and with --force
# starts with a warning.
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
rk_init
rk_need_libnbd
. "$RAIDKIT_SOURCE_DIR/tests/lib/torture_lib.sh"
. "$RAIDKIT_SOURCE_DIR/tests/lib/write_hole_lib.sh"

cut="--debug-fault 2:cut-after=3,on-cut=hang"
wh_setup raid5 3
# shellcheck disable=SC2086
wh_cut 0 $cut

mv "${M[1]}" "$T/m1.away"
rk_serve --degraded "${M[0]}" "${M[2]}"
grep -q "partial parity log replayed" "$RK_LOG" || rk_fail "no replay: $(cat "$RK_LOG")"
wh_check
rk_stop

wh_restore
rk_serve "${M[@]}"
wh_check
rk_stop
wh_scrub_clean

# Without the log, the same start is refused (arrays created before the log open as before).
wh_setup raid5 3 --write-hole none
wh_cut 0 --debug-fault 2:cut-after=1,on-cut=hang
mv "${M[1]}" "$T/m1.away"
rk_serve_refused "write hole" --degraded "${M[0]}" "${M[2]}" >/dev/null
# With --force it starts, and says what it accepted.
rk_serve --degraded --force "${M[0]}" "${M[2]}"
grep -q "started dirty and degraded with --force: parity may be stale" "$RK_LOG" ||
    rk_fail "a forced dirty degraded start gave no warning: $(cat "$RK_LOG")"
rk_stop
echo PASS
