#!/usr/bin/env bash
# Issue 10 (model): the HDD simulation (seek + rotation + transfer through the emul member's NCQ queue and write cache) against the served hdd-7200 emulation, 16 KiB random read / write at iodepth 32, rows single,raid1; every validated row within 10%
# (bench/model-validate.sh; docs/BENCHMARKS.md "Validation against the emulation"). Exit 77 without fio.
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
: "${RAIDKIT:?set RAIDKIT to the raidkit binary}"
: "${RAIDKIT_SOURCE_DIR:?set RAIDKIT_SOURCE_DIR}"
rk_need fio
[ -x "$RK_PY" ] || rk_skip "$RK_PY is missing"
rk_init_tmp rk-bench-validate-hdd
PROFILE="$RAIDKIT_SOURCE_DIR/bench/profiles/hdd-7200.ini" bash "$RAIDKIT_SOURCE_DIR/bench/model-validate.sh" "$RAIDKIT" single,raid1 "$T/v" || rk_fail "model vs emulation out of bounds"
echo "bench_model_validate_hdd: ok"
