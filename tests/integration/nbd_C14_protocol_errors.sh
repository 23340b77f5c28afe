#!/bin/bash
# C14: NBD protocol errors keep the connection; drives nbd_test_server with a raw
# client and libnbd (see nbd_C14_protocol_errors.py).
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
rk_need_libnbd
cd "$(dirname "$0")" && exec "$RK_PY" nbd_C14_protocol_errors.py
