#!/usr/bin/env bash
# Issue 10 (model) and the NBD server's inline decision: a sequential 50/50 read/write stream on one served hdd-7200 emulation (bench/suites/validate-seq-rw.ini) against the model, bound 10 %. The disk's write cache acknowledges writes at once and makes every read wait: while the server ran a connection's reads in its reader thread whenever fewer than half of all its sampled requests blocked, half the reads stalled the connection and the disk's queue ran empty (-15..-24 % below the model); blocking is now tracked per direction (src/nbd/transmit.c). Exit 77 without fio.
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
: "${RAIDKIT:?set RAIDKIT to the raidkit binary}"
: "${RAIDKIT_SOURCE_DIR:?set RAIDKIT_SOURCE_DIR}"
rk_need fio
[ -x "$RK_PY" ] || rk_skip "$RK_PY is missing"
rk_init_tmp rk-bench-validate-hdd-rw
SUITE="$RAIDKIT_SOURCE_DIR/bench/suites/validate-seq-rw.ini" PROFILE="$RAIDKIT_SOURCE_DIR/bench/profiles/hdd-7200.ini" bash "$RAIDKIT_SOURCE_DIR/bench/model-validate.sh" "$RAIDKIT" single "$T/v" || rk_fail "model vs emulation out of bounds"
echo "bench_model_validate_hdd_rw: ok"
