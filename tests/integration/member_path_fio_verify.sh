#!/bin/bash
# fio --verify=crc32c for every level over the member I/O paths (issue 13 item 1 "Tests";
# docs/ARCHITECTURE.md "Which mechanism per member"): members in $T (/tmp: O_DIRECT on a real file
# system, so a round of member I/O runs on the request thread's own io_uring), then raid10 and
# raid5 with RAIDKIT_MEMBER_IO=reaper (the member's shared ring and reaper) and =inline
# (pread/pwrite in the request's thread). Each run: random writes 4k-64k qd16 with verify;
# levels with redundancy then lose a member — one failed by `raidkit fail`, one whose writes
# start failing (fault member, so rounds mix a thread-ring member and a fault member) — and
# verify_only reads back every block, then a degraded write+verify pass.
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/integration/manage_lib.bash"
rk_init
rk_need fio

FIO=(--rw=randwrite --bsrange=4k-64k --iodepth=16 --size=10M --verify=crc32c --verify_fatal=1)

# run LEVEL MODE: MODE default | reaper | inline
run() {
    local level=$1 mode=$2
    unset RAIDKIT_MEMBER_IO
    [ "$mode" != default ] && export RAIDKIT_MEMBER_IO=$mode
    rk_log "=== $level, member I/O $mode"
    rk_members 4 24M
    rk_create --force --level "$level" "${M[@]}"
    CTL="$T/ctl.$level.$mode"
    if [ "$level" = raid0 ]; then
        rk_serve -v --control "$CTL" "${M[@]}"
        rk_fio "$level-$mode" "${FIO[@]}" --do_verify=1
        rk_stop
        return
    fi
    # Slot 3's writes fail after 50: it drops out during the first pass.
    rk_serve -v --control "$CTL" \
        --debug-fault 3:fail-after-writes=50 "${M[@]}"
    if [ "$mode" = default ]; then
        grep -q "per-thread rings" "$RK_LOG" ||
            rk_fail "$level: no member on the per-thread rings: $(grep member "$RK_LOG")"
    fi
    rk_fio "$level-$mode-w" "${FIO[@]}" --do_verify=0
    mg_status
    [ "$(mg_slot_state 3)" = failed ] || rk_fail "$level: slot 3 did not fail: $(cat "$T/st.json")"
    rk_fio "$level-$mode-v1" "${FIO[@]}" --verify_only
    if [ "$level" != raid5 ] && [ "$level" != raid10 ]; then
        mg_fail 0 # raid1 (4 copies) and raid6 survive a second failure
        rk_fio "$level-$mode-v2" "${FIO[@]}" --verify_only
    fi
    rk_fio "$level-$mode-dw" "${FIO[@]}" --offset=12M --do_verify=1
    rk_stop
}

for level in raid0 raid1 raid10 raid5 raid6; do
    run "$level" default
done
for mode in reaper inline; do
    run raid10 "$mode"
    run raid5 "$mode"
done
echo "PASS: fio crc32c verify over every level and member I/O path, with members failing"
