#!/usr/bin/env bash
# A client that does not read its replies slows only itself: while one connection keeps
# pipelining 1 MiB READs and another 4 KiB READs without reading, another client's 4 KiB reads
# keep p99 under 100 ms and none takes a second (tests/integration/nbd_nonreader.py). Every
# request goes through the worker pool (RAIDKIT_NBD_INLINE=0), so a worker blocked on a peer
# that does not read would show.
. "$RAIDKIT_SOURCE_DIR/tests/lib/common.sh"
rk_init
rk_members 1 96M
rk_create --level linear "${M[@]}"
export RAIDKIT_NBD_INLINE=0
rk_serve "${M[@]}"
pid=$(pgrep -P "$RK_PID" -x raidkit) || rk_fail "no raidkit process under $RK_PID"
(cd "$RAIDKIT_SOURCE_DIR/tests/integration" &&
    "$RK_PY" nbd_nonreader.py latency "$RK_SOCK" "$pid" 0) ||
    rk_fail "latency checks failed (or a read was stuck for 30 s)"
rk_stop
rk_no_sanitizer "$RK_LOG" "raidkit serve"
echo PASS
