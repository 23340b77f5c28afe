#!/bin/bash
# Read-only dirty degraded start of a raid5/raid6 with a partial parity log (U28): a writable
# start replays the log before serving, which closes the write hole; a read-only start cannot
# replay it (it writes nothing), so when the crash left writes in flight (live log entries) the
# stripes they touched may read garbage where a member is missing. That start is refused with a
# message advising a start without --read-only, and changes no member; --force accepts it
# (read-only, nothing written), and a read that would rebuild a chunk of a stripe those writes
# touched from its parity fails with an I/O error instead of returning garbage (the untouched
# stamps read back); a writable degraded start needs no --force (the log is replayed)
# and reads the data back. When the log holds nothing to replay — after a clean stop, or after a
# crash with no write in flight (everything flushed) — a read-only degraded start is accepted
# without --force.
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/torture_lib.sh" # torture_kill*
rk_init
rk_need fio

# ro_array LEVEL N: a fresh array of N members, served, gen-1 stamps in [0, 2 MiB) (flushed).
ro_array()
{
    rk_members "$2" 9M
    rk_create --level "$1" --chunk 16K "${M[@]}"
    rk_serve "${M[@]}"
    rk_stamp 1 0 $((2 * MiB)) # ends with a FLUSH, which retires every log entry
}

# ro_inflight LEVEL N DROP: N members, crash with writes in flight, restart without the DROP last
# members.
ro_inflight()
{
    local level=$1 n=$2 drop=$3
    rk_log "=== $level: dirty with writes in flight, $drop member(s) missing, --read-only"
    ro_array "$level" "$n"
    torture_kill_writing $((4 * MiB)) $((4 * MiB))
    local part=("${M[@]:0:$((n - drop))}") before
    before=$(rk_sums "${M[@]}")
    rk_serve_refused "holds writes that were in flight.*without --read-only.*replayed" \
        --read-only --degraded "${part[@]}"
    grep -q -- "--force" "$RK_LOG_LAST" || rk_fail "the refusal does not mention --force: $(cat "$RK_LOG_LAST")"
    [ "$(rk_sums "${M[@]}")" = "$before" ] || rk_fail "$level: the refused read-only start changed a member"
    rk_serve --read-only --degraded --force "${part[@]}"
    rk_verify 0 $((2 * MiB)) 1
    if rk_py sha "$RK_URI" $((4 * MiB)) $((4 * MiB)) >/dev/null 2>&1; then
        rk_fail "$level: read-only --force: the stripes written at the crash read without an error through the missing member(s) (rebuilt from a parity that may be torn)"
    fi
    grep -q "a read-only start replays nothing" "$RK_LOG" || rk_fail "$level: the start does not say which reads fail: $(cat "$RK_LOG")"
    grep -q "which may be torn" "$RK_LOG" || rk_fail "$level: the refused read is not logged: $(cat "$RK_LOG")"
    rk_stop
    [ "$(rk_sums "${M[@]}")" = "$before" ] || rk_fail "$level: the read-only --force start changed a member"
    rk_log "=== $level: writable degraded start replays the log"
    torture_replay_degraded "${part[@]}"
    rk_verify 0 $((2 * MiB)) 1
    rk_stop
    rk_log "=== $level: after that clean stop a read-only degraded start needs no --force"
    rk_serve --read-only --degraded "${part[@]}"
    rk_verify 0 $((2 * MiB)) 1
    rk_stop
}

# ro_flushed LEVEL N DROP: a crash with nothing in flight (the last write flushed, which retires
# every log entry): a read-only degraded start without --force, nothing written.
ro_flushed()
{
    local level=$1 n=$2 drop=$3
    rk_log "=== $level: dirty, nothing in flight, $drop member(s) missing, --read-only"
    ro_array "$level" "$n"
    torture_kill
    local part=("${M[@]:0:$((n - drop))}") before
    before=$(rk_sums "${M[@]}")
    rk_serve --read-only --degraded "${part[@]}"
    grep -q "not shut down cleanly" "$RK_LOG" || rk_fail "the dirty start was not noticed: $(cat "$RK_LOG")"
    rk_verify 0 $((2 * MiB)) 1
    rk_stop
    [ "$(rk_sums "${M[@]}")" = "$before" ] || rk_fail "$level: the read-only start changed a member"
}

ro_inflight raid5 4 1
ro_inflight raid6 5 2
ro_flushed raid5 4 1
ro_flushed raid6 5 2
echo "PASS: a read-only dirty degraded start of a logged raid5/raid6 is refused only with writes in flight"
