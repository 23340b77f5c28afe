#!/bin/bash
# C13 (cases.md): 64-bit TRIM / WRITE_ZEROES ranges on an 8 GiB sparse export
# (libnbd; see nbd_C13_64bit_ranges.py).
PY=/usr/bin/python3
export PYTHONDONTWRITEBYTECODE=1 # keep the source tree clean
[ -x "$PY" ] || { echo "SKIP: $PY missing" >&2; exit 77; }
"$PY" -c 'import nbd' 2>/dev/null || { echo "SKIP: python3-libnbd missing" >&2; exit 77; }
cd "$(dirname "$0")" && exec "$PY" nbd_C13_64bit_ranges.py
