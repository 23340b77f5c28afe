#!/bin/bash
# C17 resync after an unclean stop: RAID1 of 2 x 64 MiB: write 1 MiB at 8 MiB, FLUSH, SIGKILL the
# server at once, then change 64 KiB of that region on m1 behind raidkit's back (a torn mirror
# write). Restart: a resync of the marked regions runs and ends, and scrub reports 0 mismatches.
# Variant: SIGTERM while that resync runs -> the next start still resyncs (a clean stop never
# marks an unsynced array clean). Same for RAID5 (4 members) with the parity chunk of that
# stripe changed.
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/integration/manage_lib.bash"
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/torture_lib.sh" # torture_kill
rk_init

OFF=$((8 * MiB))

# offline_scrub MEMBER...: print the mismatch count of a read-only offline scrub.
offline_scrub()
{
    local out
    out=$(timeout 120 "$RAIDKIT" scrub "$@" 2>"$T/scrub.err") || rk_fail "scrub $*: $(cat "$T/scrub.err")"
    echo "$out" | sed -n 's/^scrub finished: \([0-9]*\) mismatches.*/\1/p'
}

# crash_and_tear LEVEL MOFF SLOT [LEN]: stamp LEN (1 MiB) at 8 MiB, flush, SIGKILL, then
# overwrite 64 KiB of slot SLOT's member at member byte offset MOFF with random bytes.
crash_and_tear()
{
    rk_serve --control "$CTL" "${M[@]}"
    rk_stamp 1 "$OFF" "${4:-$MiB}"
    torture_kill
    dd if=/dev/urandom of="${M[$3]}" bs=64K count=1 seek=$(($2 / 65536)) conv=notrunc status=none ||
        rk_fail dd
    n=$(offline_scrub "${M[@]}")
    [ "${n:-0}" -gt 0 ] || rk_fail "$1: the torn write should show as a mismatch before resync (got '$n')"
    rk_log "$1: $n mismatches before the resync"
}

# wait_resync: wait for the resync job to end; print its resynced bytes.
wait_resync()
{
    mg_wait_job 60
    [ "$(mg_q "s['job']['kind']")" = resync ] || rk_fail "no resync ran: $(cat "$T/st.json")"
    [ "$(mg_q "s['job']['state']")" = done ] || rk_fail "resync did not finish: $(cat "$T/st.json")"
    mg_q "s['job']['resynced_bytes']"
}

for level in raid1 raid5; do
    rk_log "=== C17 $level"
    if [ "$level" = raid1 ]; then
        rk_members 2 65M
        TEAR=$((MiB + OFF + 256 * 1024)) # inside the written MiB on m1
        TSLOT=1
    else
        rk_members 4 22M
        # chunk 64K, 3 data chunks a row: row 43 (array [8256K, 8448K)) lies inside the written
        # MiB, and its parity sits on slot 3 - (43 % 4) = 0 (src/raid/raid5_layout.c r5_geo).
        TEAR=$((MiB + 43 * 65536))
        TSLOT=0
    fi
    rk_create --level "$level" "${M[@]}"
    CTL="$T/ctl.$level"
    crash_and_tear "$level" "$TEAR" "$TSLOT"
    rk_serve --control "$CTL" "${M[@]}"
    bytes=$(wait_resync)
    rk_log "$level: resynced $bytes bytes per member"
    grep -q "resync started (bitmap)" "$RK_LOG" || rk_fail "$level: no bitmap resync in the log: $(cat "$RK_LOG")"
    [ "$bytes" -lt $((8 * MiB)) ] || rk_fail "$level: resynced $bytes bytes, more than the marked regions"
    rk_verify "$OFF" "$MiB" 1
    rk_stop
    n=$(offline_scrub "${M[@]}")
    [ "$n" = 0 ] || rk_fail "$level: scrub after the resync: $n mismatches, want 0"

    rk_log "=== C17 $level variant: SIGTERM while the resync runs"
    # 8 MiB marked: a resync at 1 MiB/s over >= 2.6 MiB per member still runs at the SIGTERM.
    crash_and_tear "$level" "$TEAR" "$TSLOT" $((8 * MiB))
    rk_serve --control "$CTL" --rebuild-rate 1 "${M[@]}"
    sleep 0.3
    mg_status
    [ "$(mg_q "s['job']['kind']")" = resync ] && [ "$(mg_q "s['job']['state']")" = running ] ||
        rk_fail "$level: resync not running right after the start: $(cat "$T/st.json")"
    rk_stop
    rk_serve --control "$CTL" "${M[@]}"
    grep -qi "resync is pending\|not shut down cleanly" "$RK_LOG" || rk_fail "$level: pending resync not reported: $(cat "$RK_LOG")"
    bytes=$(wait_resync)
    rk_log "$level variant: resynced $bytes bytes after the interrupted resync"
    rk_verify "$OFF" $((8 * MiB)) 1
    rk_stop
    n=$(offline_scrub "${M[@]}")
    [ "$n" = 0 ] || rk_fail "$level variant: scrub after the resumed resync: $n mismatches, want 0"
done
echo "PASS: C17 resync after an unclean stop (raid1, raid5; SIGTERM during resync keeps it pending)"
