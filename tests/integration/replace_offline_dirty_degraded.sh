#!/bin/bash
# Offline replace and re-add of a crashed (dirty) and degraded raid5/raid6 with a partial parity
# log: the offline command's precheck is a read-only assembly, which cannot replay the log; it
# used to refuse every such array as a read-only start ("start without --read-only", an option
# replace does not have) although the writable open that follows replays the log before the
# rebuild reads anything. Now the check reads the log: with nothing to replay (no write was in
# flight at the crash: everything flushed) replace rebuilds the missing member and every stamp
# reads back, through the new member alone too, and re-add of a member that left before the
# crash is accepted the same way. With writes in flight (live entries) it is refused, nothing
# changed, with what to do: start the array once writable (the log is replayed), then replace.
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/torture_lib.sh" # torture_kill
rk_init
rk_need cmp

# od_case LEVEL N DROP: N members, a crash after a flushed write, the DROP last members gone;
# offline replace of each, then a start without the first member reads every stamp.
od_case()
{
    local level=$1 n=$2 drop=$3 i s
    rk_log "=== $level: dirty, $drop member(s) missing, offline replace"
    rk_members "$n" 9M
    rk_create --level "$level" --chunk 16K "${M[@]}"
    rk_serve "${M[@]}"
    rk_stamp 1 0 $((2 * MiB))
    torture_kill
    local part=("${M[@]:0:$((n - drop))}")
    for ((i = 0; i < drop; i++)); do
        s=$((n - drop + i))
        truncate -s 9M "$T/new-$level-$s.img"
        local more=() # another slot still missing: that one needs --degraded
        [ $((i + 1)) -lt "$drop" ] && more=(--degraded)
        "$RAIDKIT" replace --slot "$s" --with "$T/new-$level-$s.img" "${more[@]}" "${part[@]}" \
            >"$T/replace$s.out" 2>&1 ||
            rk_fail "$level: offline replace of slot $s refused: $(cat "$T/replace$s.out")"
        part+=("$T/new-$level-$s.img")
    done
    rk_serve "${part[@]}"
    rk_verify 0 $((2 * MiB)) 1
    rk_stop
    rk_log "=== $level: the replacements alone carry the data (first $drop member(s) away)"
    rk_serve --degraded "${part[@]:$drop}"
    rk_verify 0 $((2 * MiB)) 1
    rk_stop
}

od_case raid5 4 1
od_case raid6 5 2

rk_log "=== raid5: re-add of a member that left before the crash"
rk_members 4 9M
rk_create --level raid5 --chunk 16K "${M[@]}"
rk_serve "${M[@]}"
rk_stamp 1 0 $((1 * MiB))
rk_stop
cp "${M[3]}" "$T/away.img"
rk_serve --degraded "${M[@]:0:3}"
rk_stamp 2 $((1 * MiB)) $((1 * MiB))
torture_kill
"$RAIDKIT" re-add --slot 3 "$T/away.img" "${M[@]:0:3}" >"$T/readd.out" 2>&1 ||
    rk_fail "offline re-add on a dirty degraded raid5 refused: $(cat "$T/readd.out")"
rk_serve "${M[@]:0:3}" "$T/away.img"
rk_verify 0 $((1 * MiB)) 1
rk_verify $((1 * MiB)) $((1 * MiB)) 2
rk_stop

rk_log "=== raid5: writes in flight at the crash: the offline check refuses, nothing changed"
rk_members 4 9M
rk_create --level raid5 --chunk 16K "${M[@]}"
rk_serve "${M[@]}"
rk_stamp 1 0 $((2 * MiB))
torture_kill_writing $((4 * MiB)) $((4 * MiB))
truncate -s 9M "$T/newu.img"
before=$(rk_sums "${M[@]:0:3}" "$T/newu.img")
"$RAIDKIT" replace --slot 3 --with "$T/newu.img" "${M[@]:0:3}" >"$T/replaceu.out" 2>&1 &&
    rk_fail "offline replace with live log entries went through: $(cat "$T/replaceu.out")"
grep -q "start the array once writable" "$T/replaceu.out" ||
    rk_fail "the refusal does not say what to do: $(cat "$T/replaceu.out")"
[ "$(rk_sums "${M[@]:0:3}" "$T/newu.img")" = "$before" ] || rk_fail "the refused replace changed a member"
rk_log "refused as expected: $(tail -n 1 "$T/replaceu.out")"
rk_log "=== raid5: as the refusal says: start once writable, stop, replace again"
torture_replay_degraded "${M[@]:0:3}"
rk_stop
"$RAIDKIT" replace --slot 3 --with "$T/newu.img" "${M[@]:0:3}" >"$T/replaceu2.out" 2>&1 ||
    rk_fail "offline replace after the replay refused: $(cat "$T/replaceu2.out")"
rk_serve --degraded "${M[@]:1:2}" "$T/newu.img"
rk_verify 0 $((2 * MiB)) 1
rk_stop
echo "PASS: offline replace and re-add of a dirty degraded raid5/raid6 with a log"
