#!/bin/bash
# fio's nbd engine against nbd_test_server: 4K random writes at iodepth 32 verified with
# crc32c, then a mixed-size sequential pass, over two connections (numjobs=2); 0 errors.
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
rk_need_test_server
rk_need fio
grep -qw nbd <<<"$(fio --enghelp 2>/dev/null)" || rk_skip "fio has no nbd engine"
rk_init_tmp rk-nbd

S="$T/sock"
cd "$T" || rk_fail "cd $T" # fio writes state files into the current directory
start() { rk_test_server --listen "unix:$S" --size 128M; }

run_fio() {
    fio --name=nbdverify --ioengine=nbd --uri="nbd+unix:///?socket=$S" --direct=1 \
        --iodepth=32 --verify=crc32c --verify_fatal=1 --verify_state_save=0 \
        --randrepeat=1 --randseed=42 \
        --output-format=terse --terse-version=3 "$@" >"$T/fio.out" 2>"$T/fio.err" ||
        rk_fail "fio $* failed: $(cat "$T/fio.err" "$T/fio.out")"
    grep -qi "verify.*bad\|crc32c.*mismatch" "$T/fio.err" && rk_fail "fio verify errors: $(cat "$T/fio.err")"
    # terse v3 field 5 is the error count of the job
    awk -F';' '/^3;/ { n++; if ($5 != 0) exit 1 } END { if (!n) exit 1 }' "$T/fio.out" || rk_fail "fio reported errors: $(cat "$T/fio.out")"
}
# Every request through the worker pool (no inline execution in the reader) ...
RAIDKIT_NBD_INLINE=0 start
run_fio --rw=randwrite --bs=4k --size=32M --offset=0
rk_stop
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
rk_stop # exit status 0 after SIGTERM under load
[ $(($(date +%s) - t0)) -le 5 ] || rk_fail "server took more than 5 s to stop under load"
for _ in $(seq 50); do
    kill -0 "$FIO" 2>/dev/null || break
    sleep 0.1
done
kill -0 "$FIO" 2>/dev/null && { kill -KILL "$FIO"; rk_fail "fio still running after the server stopped"; }
wait "$FIO"
[ ! -e "$S" ] || rk_fail "socket file left behind"
echo PASS
