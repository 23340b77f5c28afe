#!/usr/bin/env bash
# Issue 10 (model): HDD writes on raid5 and raid6 with their partial parity log against the served hdd-7200 emulation, 16 KiB sequential write and random read/write 50/50 at iodepth 32 (bench/suites/validate-parity-writes.ini): the simulation serialises writes of one stripe row (the stripe lock), writes each counted FUA write (log entries, heads, bitmap) in the log region through its member's ring, one at a time and not merged again (the counts are the array's writes after its group commit), before the stripe's writes, and flushes for log reclaim. Main's model before the log phase was 84 % above the emulation (raid5 sequential write); with the ring merging the counted writes again, raid6 was 21-26 % above.
# Bound 25 % (BOUND; docs/BENCHMARKS.md "Validation against the emulation"). The served arrays
# run without stripe gathering (RAIDKIT_RAID5_GATHER_US=0), so the sequential writes take the
# path this test is about: partial-stripe writes with their log entries, disk-bound (2026-12-07:
# raid5 -7.9 %, raid6 -10.6 %, noop ceiling 200x the row). Gathered, they are whole-stripe
# write-outs at 100-220 MB/s on this 32 MiB array, where the host's own work is no longer small
# beside the emulated disks (noop only 3-8x the row) and the rows read 16-42 % below the device
# model with the load (bench/RESULTS.md "Bitmap look-ahead and the gatherer's wait"). Exit 77
# without fio.
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
: "${RAIDKIT:?set RAIDKIT to the raidkit binary}"
: "${RAIDKIT_SOURCE_DIR:?set RAIDKIT_SOURCE_DIR}"
rk_need fio
[ -x "$RK_PY" ] || rk_skip "$RK_PY is missing"
rk_init_tmp rk-bench-validate-hdd-write
# Each row is one 2 s run of the served emulation; its spread under load reaches the bound now
# and then, so a miss is measured once more (both reports are printed) before it fails.
export RAIDKIT_RAID5_GATHER_US=0 # inherited by the bench's `raidkit serve`
validate() {
    BOUND=25 SUITE="$RAIDKIT_SOURCE_DIR/bench/suites/validate-parity-writes.ini" PROFILE="$RAIDKIT_SOURCE_DIR/bench/profiles/hdd-7200.ini" bash "$RAIDKIT_SOURCE_DIR/bench/model-validate.sh" "$RAIDKIT" raid5,raid6 "$T/$1"
}
validate v || { echo "bench_model_validate_hdd_write: a row missed the bound; measuring again"; validate v2; } || rk_fail "model vs emulation out of bounds twice"
echo "bench_model_validate_hdd_write: ok"
