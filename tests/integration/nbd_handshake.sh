#!/bin/bash
# NBD handshake: nbdinfo sees size, block sizes and flags; --list; unknown options and export
# names are refused without killing the session (nbd_handshake.py); a TCP listener on 127.0.0.1.
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
rk_need_test_server
rk_need nbdinfo
rk_need_libnbd
rk_init_tmp rk-nbd

S="$T/sock"
rk_test_server --listen "unix:$S" --size 32M --block 4096 --export disk --description "test disk" \
    --max-request 1M
out=$(nbdinfo "nbd+unix:///disk?socket=$S") || rk_fail "nbdinfo failed"
echo "$out"
for want in "export-size: 33554432" "description: test disk" "block_size_minimum: 4096" \
    "block_size_preferred: 4096" "block_size_maximum: 1048576" "is_read_only: false" \
    "can_flush: true" "can_fua: true" "can_trim: true" "can_zero: true" "can_multi_conn: true" \
    "newstyle-fixed" "structured"; do
    grep -qF "$want" <<<"$out" || rk_fail "nbdinfo lacks '$want'"
done
list=$(nbdinfo --list "nbd+unix:///?socket=$S") || rk_fail "nbdinfo --list failed"
grep -q 'export="disk"' <<<"$list" || rk_fail "nbdinfo --list: $list"
nbdinfo --size "nbd+unix:///?socket=$S" | grep -qx 33554432 || rk_fail "default export '' refused"
if nbdinfo "nbd+unix:///other?socket=$S" >/dev/null 2>&1; then
    rk_fail "unknown export name accepted"
fi
"$RK_PY" -c "import sys; sys.path.insert(0, '$HERE'); sys.argv = ['x', '$S']; exec(open('$HERE/nbd_handshake.py').read())" ||
    rk_fail "nbd_handshake.py"
rk_stop
[ ! -e "$S" ] || rk_fail "socket file left behind"

# Stale socket file from a crashed run is replaced.
"$RK_PY" -c "import socket; s = socket.socket(socket.AF_UNIX); s.bind('$S')"
rk_test_server --listen "unix:$S" --read-only
out=$(nbdinfo "nbd+unix:///?socket=$S") || rk_fail "nbdinfo over a replaced stale socket"
grep -q "is_read_only: true" <<<"$out" || rk_fail "read-only not advertised"
grep -q "block_size_minimum: 512" <<<"$out" || rk_fail "512 block size"
rk_stop

# TCP on 127.0.0.1 (tcp:PORT form); retry a few ports in case one is taken.
ok=0
for port in $((20000 + $$ % 20000)) $((20001 + $$ % 20000)) $((30011 + $$ % 20000)); do
    if rk_test_server_try --listen "tcp:$port" --size 8M; then
        ok=1
        break
    fi
done
[ "$ok" = 1 ] || rk_fail "no TCP port could be bound"
out=$(nbdinfo "nbd://127.0.0.1:$port") || rk_fail "nbdinfo over TCP"
grep -q "export-size: 8388608" <<<"$out" || rk_fail "TCP export size: $out"
"$RK_PY" -c "
import nbd
h = nbd.NBD(); h.connect_tcp('127.0.0.1', '$port')
h.pwrite(b'tcp!' * 1024, 4096); assert h.pread(4096, 4096) == b'tcp!' * 1024
h.shutdown()" || rk_fail "TCP read/write"
rk_stop
echo PASS
