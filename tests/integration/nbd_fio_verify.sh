#!/bin/bash
# fio's nbd engine against nbd_test_server: 4K random writes at iodepth 32 verified with
# crc32c, then a mixed-size sequential pass, over two connections (numjobs=2); 0 errors.
set -u -o pipefail
SRV="${RAIDKIT_BUILD_DIR:-}/nbd_test_server"
[ -x "$SRV" ] || { echo "SKIP: $SRV not built" >&2; exit 77; }
command -v fio >/dev/null || { echo "SKIP: fio missing" >&2; exit 77; }
fio --enghelp 2>/dev/null | grep -qw nbd || { echo "SKIP: fio has no nbd engine" >&2; exit 77; }

T=$(mktemp -d /tmp/rk-nbd.XXXXXX)
PID=""
fail() { echo "FAIL: $*" >&2; [ -f "$T/log" ] && tail -20 "$T/log" >&2; exit 1; }
cleanup() { [ -n "$PID" ] && kill -KILL "$PID" 2>/dev/null; rm -rf "$T"; }
trap cleanup EXIT

S="$T/sock"
cd "$T" || fail "cd $T" # fio writes state files into the current directory
start() {
    "$SRV" --listen "unix:$S" --size 128M 2>"$T/log" &
    PID=$!
    for _ in $(seq 100); do
        grep -q ready "$T/log" && return 0
        kill -0 "$PID" 2>/dev/null || fail "server exited"
        sleep 0.1
    done
    fail "server not ready"
}
stop() {
    kill -TERM "$PID"
    wait "$PID"
    local rc=$?
    PID=""
    [ "$rc" -eq 0 ] || fail "server exit status $rc after SIGTERM"
}

run_fio() {
    fio --name=nbdverify --ioengine=nbd --uri="nbd+unix:///?socket=$S" --direct=1 \
        --iodepth=32 --verify=crc32c --verify_fatal=1 --verify_state_save=0 \
        --randrepeat=1 --randseed=42 \
        --output-format=terse --terse-version=3 "$@" >"$T/fio.out" 2>"$T/fio.err" ||
        fail "fio $* failed: $(cat "$T/fio.err" "$T/fio.out")"
    grep -qi "verify.*bad\|crc32c.*mismatch" "$T/fio.err" && fail "fio verify errors: $(cat "$T/fio.err")"
    # terse v3 field 5 is the error count of the job
    awk -F';' '/^3;/ { n++; if ($5 != 0) exit 1 } END { if (!n) exit 1 }' "$T/fio.out" || fail "fio reported errors: $(cat "$T/fio.out")"
}
# Every request through the worker pool (no inline execution in the reader) ...
RAIDKIT_NBD_INLINE=0 start
run_fio --rw=randwrite --bs=4k --size=32M --offset=0
stop
# ... and the default mode.
start
run_fio --rw=randwrite --bs=4k --size=32M --offset=0
run_fio --rw=write --bsrange=4k-1m --size=48M --offset=64M
run_fio --rw=randwrite --bs=64k --size=32M --offset=32M --numjobs=2 --offset_increment=16M \
    --size=16M

# Stop under load: SIGTERM while fio has 32 requests in flight; the server answers what it has
# read, closes and exits 0 promptly.
fio --name=load --ioengine=nbd --uri="nbd+unix:///?socket=$S" --rw=randrw --bs=4k --iodepth=32 \
    --size=64M --time_based --runtime=30 >/dev/null 2>&1 &
FIO=$!
sleep 1
t0=$(date +%s)
kill -TERM "$PID"
wait "$PID"
rc=$?
PID=""
[ "$rc" -eq 0 ] || fail "server exit status $rc after SIGTERM under load"
[ $(($(date +%s) - t0)) -le 5 ] || fail "server took more than 5 s to stop under load"
for _ in $(seq 50); do
    kill -0 "$FIO" 2>/dev/null || break
    sleep 0.1
done
kill -0 "$FIO" 2>/dev/null && { kill -KILL "$FIO"; fail "fio still running after the server stopped"; }
wait "$FIO"
[ ! -e "$S" ] || fail "socket file left behind"
echo PASS
