#!/bin/bash
# C01_write_hole_raid6: case C01 for RAID6 (docs/FORMAT.md "Partial parity log"). RAID6 of
# 4 x 1 MiB, chunk 64K, stamped gen 1. Stripe 0: Q on slot 0, D0 on slot 1, D1 on slot 2, P on
# slot 3. A 4 KiB gen-2 write at offset 0 reaches slot 1 (D0), then the parity members lose
# power before their parity writes. Two members removed, each way round: D1's and P's (start
# with Q + D0: the log on Q's member is replayed) and D1's and Q's (start with D0 + P: the log
# on P's member). Without --force, [64K, 128K) reads gen 1 and offset 0 all gen 1 or all gen 2.
# With all 4 back after the same cut, scrub reports 0.
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
rk_init
rk_need_libnbd
. "$RAIDKIT_SOURCE_DIR/tests/lib/torture_lib.sh"
. "$RAIDKIT_SOURCE_DIR/tests/lib/write_hole_lib.sh"

wh_setup raid6 4
wh_cut 1 --debug-fault 3:cut-after=3,on-cut=hang --debug-fault 0:cut-after=3,on-cut=hang

for keep in "0 1" "1 3"; do
    read -r a b <<<"$keep"
    wh_restore
    rk_serve --degraded "${M[$a]}" "${M[$b]}"
    grep -q "partial parity log replayed: 1 stripe window" "$RK_LOG" ||
        rk_fail "no replay with slots $a and $b: $(cat "$RK_LOG")"
    wh_check
    rk_stop
done

wh_restore
rk_serve "${M[@]}"
wh_check
rk_stop
wh_scrub_clean
echo PASS
