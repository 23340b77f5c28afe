#!/bin/bash
# Read-only dirty start of a raid5 without a partial parity log (issue 8): `serve --read-only`
# runs no resync (it writes nothing), so the parity of the regions the write-intent bitmap marks
# unsynced (those written at the crash) may be stale. The start says so; a read that must
# rebuild a chunk from that parity (here: read errors on slot 1's data area) fails with an I/O
# error instead of returning what stale parity gives, while regions not written at the crash are
# rebuilt and read back (zeros). After a writable start has resynced, a read-only start neither
# warns nor refuses.
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/torture_lib.sh" # torture_kill
rk_init
rk_need_libnbd

OFF=$((4 * MiB)) LEN=$((256 * 1024)) FAR=$((12 * MiB)) CTL="$T/ctl"
FAULT="1:read-eio=1M+16M" # slot 1's data area (the data offset is 1 MiB)

rk_members 4 17M
rk_create --level raid5 --chunk 64K --write-hole none --bitmap-region 256K "${M[@]}"
rk_serve "${M[@]}"
rk_stamp 1 "$OFF" "$LEN"
torture_kill

rk_serve --read-only --debug-fault "$FAULT" "${M[@]}"
grep -q "until a writable start resyncs it" "$RK_LOG" ||
    rk_fail "the read-only dirty start does not say which reads fail: $(cat "$RK_LOG")"
if rk_py sha "$RK_URI" "$OFF" "$LEN" >/dev/null 2>&1; then
    rk_fail "a read of the region written at the crash was rebuilt from parity a crash may have left stale"
fi
grep -q "which may be torn or stale" "$RK_LOG" || rk_fail "the refused read is not logged: $(cat "$RK_LOG")"
want=$(head -c "$LEN" /dev/zero | sha256sum | cut -d' ' -f1)
got=$(rk_py sha "$RK_URI" "$FAR" "$LEN") || rk_fail "a region not written at the crash is not rebuilt from its parity"
[ "$got" = "$want" ] || rk_fail "region at $FAR (never written) read back $got, not zeros"
rk_stop

rk_log "=== a writable start resyncs; then read-only with the same read errors is served"
rk_serve --control "$CTL" "${M[@]}"
for _ in $(seq 100); do
    "$RAIDKIT" status --test --control "$CTL" >/dev/null 2>&1 && break
    sleep 0.1
done
"$RAIDKIT" status --test --control "$CTL" >/dev/null 2>&1 || rk_fail "the resync did not finish in 10 s"
rk_stop
rk_serve --read-only --debug-fault "$FAULT" "${M[@]}"
! grep -q "until a writable start resyncs it" "$RK_LOG" || rk_fail "a clean read-only start warned: $(cat "$RK_LOG")"
rk_verify "$OFF" "$LEN" 1
rk_stop
echo "PASS: a read-only dirty raid5 without a log refuses reads through stale parity"
