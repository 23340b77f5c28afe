#!/usr/bin/env bash
# --max-connections 2: two clients are served, further ones are closed at once (and logged once,
# then counted); once a client leaves, a new one is served again.
. "$RAIDKIT_SOURCE_DIR/tests/lib/common.sh"
rk_init
rk_members 1 24M
rk_create --level linear "${M[@]}"
rk_serve --max-connections 2 "${M[@]}"
"$RK_PY" - "$RK_URI" <<'PY' || rk_fail "connection limit checks failed"
import sys, time, nbd
uri = sys.argv[1]
def conn():
    h = nbd.NBD()
    h.connect_uri(uri)
    return h
a, b = conn(), conn()
a.pread(4096, 0)
b.pread(4096, 0)
for i in range(5):
    try:
        conn()
        print("connection %d beyond the limit was served" % (i + 3))
        sys.exit(1)
    except nbd.Error:
        pass
a.shutdown()
del a
for _ in range(50):  # the server reaps the closed connection within a poll tick
    try:
        c = conn()
        break
    except nbd.Error:
        time.sleep(0.1)
else:
    print("no connection accepted after one left")
    sys.exit(1)
c.pread(4096, 0)
b.pread(4096, 0)
PY
n=$(grep -c "warning.* nbd: connections refused: connection limit" "$RK_LOG")
[ "$n" = 1 ] || rk_fail "the connection limit was logged $n times, want once"
rk_stop
echo PASS
