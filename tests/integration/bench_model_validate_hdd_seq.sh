#!/usr/bin/env bash
# Issue 10 (model): HDD sequential reads through the array's layout (each member's stream skips its parity chunks: seek + rotation + transfer through the emul member's NCQ queue) against the served hdd-7200 emulation, 16 KiB sequential read at iodepth 32 (bench/suites/validate-seq.ini), rows raid5,raid6; every validated row within 10%
# (bench/model-validate.sh; docs/BENCHMARKS.md "Validation against the emulation"). Exit 77 without fio.
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
: "${RAIDKIT:?set RAIDKIT to the raidkit binary}"
: "${RAIDKIT_SOURCE_DIR:?set RAIDKIT_SOURCE_DIR}"
rk_need fio
[ -x "$RK_PY" ] || rk_skip "$RK_PY is missing"
rk_init_tmp rk-bench-validate-hdd-seq
SUITE="$RAIDKIT_SOURCE_DIR/bench/suites/validate-seq.ini" PROFILE="$RAIDKIT_SOURCE_DIR/bench/profiles/hdd-7200.ini" bash "$RAIDKIT_SOURCE_DIR/bench/model-validate.sh" "$RAIDKIT" raid5,raid6 "$T/v" || rk_fail "model vs emulation out of bounds"
echo "bench_model_validate_hdd_seq: ok"
