#!/bin/bash
# C13: 64-bit TRIM / WRITE_ZEROES ranges on an 8 GiB sparse export
# (libnbd; see nbd_C13_64bit_ranges.py).
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
rk_need_libnbd
cd "$(dirname "$0")" && exec "$RK_PY" nbd_C13_64bit_ranges.py
