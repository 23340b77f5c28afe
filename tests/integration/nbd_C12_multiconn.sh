#!/bin/bash
# C12 (cases.md): pipelined writes over 4 connections, FLUSH on one, exact placement
# seen by all (libnbd aio; see nbd_C12_multiconn.py).
PY=/usr/bin/python3
export PYTHONDONTWRITEBYTECODE=1 # keep the source tree clean
[ -x "$PY" ] || { echo "SKIP: $PY missing" >&2; exit 77; }
"$PY" -c 'import nbd' 2>/dev/null || { echo "SKIP: python3-libnbd missing" >&2; exit 77; }
cd "$(dirname "$0")" && exec "$PY" nbd_C12_multiconn.py
