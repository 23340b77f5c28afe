#!/bin/bash
# A stop while a WRITE's payload is half sent: that WRITE gets no reply, the connection closes
# (tests/integration/nbd_stop_mid_payload.py, a raw client against nbd_test_server).
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
rk_need_libnbd
cd "$(dirname "$0")" && exec "$RK_PY" nbd_stop_mid_payload.py
