#!/usr/bin/env bash
# Connection end: a client writes 8 MiB, sends DISC and closes without waiting; a new connection
# then writes the tail of that range, flushes and reads it back: its write must be what stays
# (the old connection's requests run first), with every member write delayed 2 ms
# (--debug-fault latency) so the old write is still running when the new one arrives.
. "$RAIDKIT_SOURCE_DIR/tests/lib/common.sh"
rk_init
rk_members 2 48M
rk_create --level 1 "${M[@]}"
rk_serve --debug-fault 0:latency=2000 --debug-fault 1:latency=2000 "${M[@]}"
(cd "$RAIDKIT_SOURCE_DIR/tests/integration" &&
    "$RK_PY" nbd_connection_end_order.py "$RK_SOCK" 12) || rk_fail "ordering checks failed"
rk_stop
rk_no_sanitizer "$RK_LOG" "raidkit serve"
echo PASS
