#!/bin/bash
# NBD handshake: nbdinfo sees size, block sizes and flags; --list; unknown options and export
# names are refused without killing the session (nbd_handshake.py); a TCP listener on 127.0.0.1.
set -u -o pipefail
PY=/usr/bin/python3
export PYTHONDONTWRITEBYTECODE=1 # keep the source tree clean
SRV="${RAIDKIT_BUILD_DIR:-}/nbd_test_server"
HERE=$(cd "$(dirname "$0")" && pwd)
[ -x "$SRV" ] || { echo "SKIP: $SRV not built" >&2; exit 77; }
command -v nbdinfo >/dev/null || { echo "SKIP: nbdinfo missing" >&2; exit 77; }
"$PY" -c 'import nbd' 2>/dev/null || { echo "SKIP: python3-libnbd missing" >&2; exit 77; }

T=$(mktemp -d /tmp/rk-nbd.XXXXXX)
PID=""
fail() { echo "FAIL: $*" >&2; [ -f "$T/log" ] && tail -20 "$T/log" >&2; exit 1; }
cleanup() { [ -n "$PID" ] && kill -KILL "$PID" 2>/dev/null; rm -rf "$T"; }
trap cleanup EXIT

# start ARGS...: run nbd_test_server, wait for "ready".
start() {
    "$SRV" "$@" 2>"$T/log" &
    PID=$!
    for _ in $(seq 100); do
        grep -q ready "$T/log" && return 0
        kill -0 "$PID" 2>/dev/null || fail "server $* exited: $(cat "$T/log")"
        sleep 0.1
    done
    fail "server $* not ready"
}
# stop: SIGTERM, exit status must be 0.
stop() {
    kill -TERM "$PID"
    wait "$PID"
    local rc=$?
    PID=""
    [ "$rc" -eq 0 ] || fail "server exit status $rc after SIGTERM"
}

S="$T/sock"
start --listen "unix:$S" --size 32M --block 4096 --export disk --description "test disk" \
    --max-request 1M
out=$(nbdinfo "nbd+unix:///disk?socket=$S") || fail "nbdinfo failed"
echo "$out"
for want in "export-size: 33554432" "description: test disk" "block_size_minimum: 4096" \
    "block_size_preferred: 4096" "block_size_maximum: 1048576" "is_read_only: false" \
    "can_flush: true" "can_fua: true" "can_trim: true" "can_zero: true" "can_multi_conn: true" \
    "newstyle-fixed" "structured"; do
    grep -qF "$want" <<<"$out" || fail "nbdinfo lacks '$want'"
done
list=$(nbdinfo --list "nbd+unix:///?socket=$S") || fail "nbdinfo --list failed"
grep -q 'export="disk"' <<<"$list" || fail "nbdinfo --list: $list"
nbdinfo --size "nbd+unix:///?socket=$S" | grep -qx 33554432 || fail "default export '' refused"
if nbdinfo "nbd+unix:///other?socket=$S" >/dev/null 2>&1; then
    fail "unknown export name accepted"
fi
"$PY" -c "import sys; sys.path.insert(0, '$HERE'); sys.argv = ['x', '$S']; exec(open('$HERE/nbd_handshake.py').read())" ||
    fail "nbd_handshake.py"
stop
[ ! -e "$S" ] || fail "socket file left behind"

# Stale socket file from a crashed run is replaced.
"$PY" -c "import socket; s = socket.socket(socket.AF_UNIX); s.bind('$S')"
start --listen "unix:$S" --read-only
out=$(nbdinfo "nbd+unix:///?socket=$S") || fail "nbdinfo over a replaced stale socket"
grep -q "is_read_only: true" <<<"$out" || fail "read-only not advertised"
grep -q "block_size_minimum: 512" <<<"$out" || fail "512 block size"
stop

# TCP on 127.0.0.1 (tcp:PORT form); retry a few ports in case one is taken.
ok=0
for port in $((20000 + $$ % 20000)) $((20001 + $$ % 20000)) $((30011 + $$ % 20000)); do
    "$SRV" --listen "tcp:$port" --size 8M 2>"$T/log" &
    PID=$!
    for _ in $(seq 50); do
        grep -q ready "$T/log" && break
        kill -0 "$PID" 2>/dev/null || break
        sleep 0.1
    done
    if grep -q ready "$T/log"; then
        ok=1
        break
    fi
    wait "$PID" 2>/dev/null
    PID=""
done
[ "$ok" = 1 ] || fail "no TCP port could be bound"
out=$(nbdinfo "nbd://127.0.0.1:$port") || fail "nbdinfo over TCP"
grep -q "export-size: 8388608" <<<"$out" || fail "TCP export size: $out"
"$PY" -c "
import nbd
h = nbd.NBD(); h.connect_tcp('127.0.0.1', '$port')
h.pwrite(b'tcp!' * 1024, 4096); assert h.pread(4096, 4096) == b'tcp!' * 1024
h.shutdown()" || fail "TCP read/write"
stop
echo PASS
