#!/bin/bash
# Read-only dirty degraded start of a raid5/raid6 with a partial parity log (U28): a writable
# start replays the log before serving, which closes the write hole; a read-only start cannot
# replay it (it writes nothing), so the stripes written at the crash may read garbage where a
# member is missing. It is refused with a message advising a start without --read-only, and
# changes no member; --force accepts it (read-only, nothing written); a writable degraded start
# needs no --force (the log is replayed) and reads the data back. After a clean stop the log
# holds nothing to replay: a read-only degraded start is then accepted without --force.
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/torture_lib.sh" # torture_kill
rk_init

# ro_case LEVEL N DROP: N members, crash after a write, restart without the DROP last members.
ro_case()
{
    local level=$1 n=$2 drop=$3
    rk_log "=== $level: dirty, $drop member(s) missing, --read-only"
    rk_members "$n" 9M
    rk_create --level "$level" --chunk 16K "${M[@]}"
    rk_serve "${M[@]}"
    rk_stamp 1 0 $((2 * MiB))
    torture_kill
    local part=("${M[@]:0:$((n - drop))}") before
    before=$(rk_sums "${M[@]}")
    rk_serve_refused "without --read-only.*replayed|replayed.*without --read-only" \
        --read-only --degraded "${part[@]}"
    grep -q -- "--force" "$RK_LOG_LAST" || rk_fail "the refusal does not mention --force: $(cat "$RK_LOG_LAST")"
    [ "$(rk_sums "${M[@]}")" = "$before" ] || rk_fail "$level: the refused read-only start changed a member"
    rk_serve --read-only --degraded --force "${part[@]}"
    rk_verify 0 $((2 * MiB)) 1
    rk_stop
    [ "$(rk_sums "${M[@]}")" = "$before" ] || rk_fail "$level: the read-only --force start changed a member"
    rk_log "=== $level: writable degraded start replays the log (no --force)"
    rk_serve --degraded "${part[@]}"
    rk_verify 0 $((2 * MiB)) 1
    rk_stop
    rk_log "=== $level: after that clean stop a read-only degraded start needs no --force"
    rk_serve --read-only --degraded "${part[@]}"
    rk_verify 0 $((2 * MiB)) 1
    rk_stop
}

ro_case raid5 4 1
ro_case raid6 5 2
echo "PASS: a read-only dirty degraded start of a logged raid5/raid6 is refused, advising a writable start"
