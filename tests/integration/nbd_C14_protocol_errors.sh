#!/bin/bash
# C14 (cases.md): NBD protocol errors keep the connection; drives nbd_test_server with a raw
# client and libnbd (see nbd_C14_protocol_errors.py).
PY=/usr/bin/python3
export PYTHONDONTWRITEBYTECODE=1 # keep the source tree clean
[ -x "$PY" ] || { echo "SKIP: $PY missing" >&2; exit 77; }
"$PY" -c 'import nbd' 2>/dev/null || { echo "SKIP: python3-libnbd missing" >&2; exit 77; }
cd "$(dirname "$0")" && exec "$PY" nbd_C14_protocol_errors.py
