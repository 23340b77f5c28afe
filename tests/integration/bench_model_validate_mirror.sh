#!/usr/bin/env bash
# Issue 10 item 4: the model's prediction (its simulated closed loop) against the served emulation,
# rows single,raid1,raid10 over bench/profiles/throttled-ssd.ini at iodepth 32, where the emulation and not the
# host is the bottleneck: every row within 10% (bench/model-validate.sh; docs/BENCHMARKS.md
# "Validation against the emulation"). Exit 77 without fio.
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
: "${RAIDKIT:?set RAIDKIT to the raidkit binary}"
: "${RAIDKIT_SOURCE_DIR:?set RAIDKIT_SOURCE_DIR}"
rk_need fio
[ -x "$RK_PY" ] || rk_skip "$RK_PY is missing"
rk_init_tmp rk-bench-validate
bash "$RAIDKIT_SOURCE_DIR/bench/model-validate.sh" "$RAIDKIT" single,raid1,raid10 "$T/v" || rk_fail "model vs emulation out of bounds"
echo "bench_model_validate_mirror: ok"
