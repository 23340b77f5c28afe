#!/bin/bash
# C12: pipelined writes over 4 connections, FLUSH on one, exact placement
# seen by all (libnbd aio; see nbd_C12_multiconn.py).
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
rk_need_libnbd
cd "$(dirname "$0")" && exec "$RK_PY" nbd_C12_multiconn.py
