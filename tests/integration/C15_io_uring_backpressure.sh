#!/usr/bin/env bash
# C15 — io_uring back-pressure end to end: 2 MiB requests through `raidkit serve` with more member
# I/O in flight than a member's ring holds (4 fio jobs x 36 requests x 2 mirrors = 288 member
# requests against 256-entry rings), O_DIRECT members on the file system under /tmp: fio
# --verify=crc32c sees 0 errors, never EAGAIN; again with a member failing halfway through.
# (The unit test C15_io_uring_backpressure in test_file_member.c drives the ring directly.)
. "$RAIDKIT_SOURCE_DIR/tests/lib/common.sh"
rk_init
rk_need fio

big_verify() # NAME
{
    rk_fio "$1" --rw=randwrite --bs=2M --iodepth=64 --numjobs=4 --size=72M --offset_increment=72M --loops=2 \
        --verify=crc32c --do_verify=1 --verify_fatal=1 --group_reporting
}

rk_members 2 320M bp
rk_create --level 1 "${M[@]}"
rk_serve "${M[@]}"
big_verify healthy
rk_stop

# Slot 1 fails after 100 member writes, in the middle of the job: the client never notices.
rk_serve --debug-fault 1:fail-after-writes=100 "${M[@]}"
big_verify failing
grep -qi "slot 1.*failed" "$RK_LOG" || rk_fail "slot 1 never failed: the fault did not fire"
rk_stop
grep -q '"failed"' <<<"$(rk_info_json "${M[0]}")" || rk_fail "slot 1 not recorded failed"
echo "PASS: C15 back-pressure, 2 MiB requests, member failed halfway: 0 fio errors"
