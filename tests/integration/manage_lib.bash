# Helpers shared by the manage_*.sh, C03 and C07 integration tests (sourced after common.sh):
# control-socket status queries and the online replace case run for each level.
# shellcheck disable=SC2034

# mg_status: `raidkit status --json --control $CTL` into $T/st.json (fails the test on error).
mg_status()
{
    # Bounded: a server that holds its lock does not hang the test.
    timeout -k 5 30 "$RAIDKIT" status --json --control "$CTL" >"$T/st.json" 2>"$T/st.err"
    local rc=$?
    [ "$rc" != 124 ] || rk_fail "raidkit status did not answer within 30 s"
    [ "$rc" = 0 ] || rk_fail "raidkit status failed: $(cat "$T/st.err")"
}

# mg_q PYEXPR: evaluate a python expression over the status document `s`; print the result.
mg_q()
{
    "$RK_PY" -c 'import json,sys; s=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' \
        "$T/st.json" "$1"
}

# mg_slot_state N: state of slot N in the last status.
mg_slot_state() { mg_q "[x for x in s['slots'] if x['slot']==$1][0]['state']"; }

# mg_fail SLOT: `raidkit fail --slot SLOT` on $CTL; fails the test (with raidkit's message) on error.
mg_fail()
{
    "$RAIDKIT" fail --slot "$1" --control "$CTL" >/dev/null 2>"$T/fail.err" ||
        rk_fail "raidkit fail --slot $1: $(cat "$T/fail.err")"
}

# mg_replace SLOT NEW RATE: start `raidkit replace --slot SLOT --with NEW --rate RATE` (MiB/s) on
# $CTL; returns once the job is started. Fails the test (with raidkit's message) on error.
mg_replace()
{
    "$RAIDKIT" replace --slot "$1" --with "$2" --rate "$3" --control "$CTL" >/dev/null 2>"$T/rep.err" ||
        rk_fail "raidkit replace --slot $1: $(cat "$T/rep.err")"
}

# mg_wait_job TIMEOUT_S: poll status until no job runs; fail after TIMEOUT_S seconds.
mg_wait_job()
{
    local i
    for ((i = 0; i < $1 * 10; i++)); do
        mg_status
        [ "$(mg_q "s['job']['state']")" = running ] || return 0
        sleep 0.1
    done
    rk_fail "job still running after $1 s: $(cat "$T/st.json")"
}

# mg_level_works LEVEL: does this build create LEVEL arrays? (raid5/6 arrive separately)
mg_level_works()
{
    local d
    d=$(mktemp -d "$T/lvl.XXXXXX")
    truncate -s 8M "$d/a" "$d/b" "$d/c" "$d/d"
    "$RAIDKIT" create --level "$1" "$d/a" "$d/b" "$d/c" "$d/d" >/dev/null 2>&1
    local rc=$?
    rm -rf "$d"
    return $rc
}

# mg_fio_opts: the fio job writing [0, 16M) with crc32c headers, rate limited so it overlaps a
# rebuild; the same options with --verify_only check it later.
mg_fio_opts()
{
    FIO=(fio --name=mg --ioengine=nbd --uri="$RK_URI" --rw=randwrite --bsrange=4k-64k --size=16M
        --offset=0 --iodepth=8 --verify=crc32c --verify_fatal=1 --verify_state_save=0 --randseed=4242)
}

# mg_replace_case LEVEL N SLOT "SLOTS TO FAIL AFTER" [CREATE OPTS]: N members of 33M (32 MiB data),
# fill, fail SLOT, `raidkit replace` it (16 MiB/s) onto a fresh file while fio writes with
# verification, check status shows the progress, then fail the other slots so the rebuilt member
# must serve its data: fio verify-only and the stamps must be intact, also after a restart.
mg_replace_case()
{
    local level=$1 n=$2 slot=$3 after=$4 size new i
    shift 4
    rk_log "=== replace case: $level, $n members, slot $slot, then fail: $after"
    rk_members $((n + 1)) 33M "r$level-"
    new=${M[$n]}
    unset "M[$n]"
    rk_create --level "$level" "$@" "${M[@]}"
    CTL="$T/ctl.$level"
    rk_serve --control "$CTL" "${M[@]}"
    size=$(rk_py size "$RK_URI") || rk_fail "size"
    rk_stamp 1 $((16 * MiB)) $((size - 16 * MiB))
    mg_fail "$slot"
    mg_status
    [ "$(mg_slot_state "$slot")" = failed ] || rk_fail "slot $slot not failed: $(cat "$T/st.json")"
    [ "$(mg_q "s['degraded']")" = True ] || rk_fail "not degraded after fail"

    mg_fio_opts
    "${FIO[@]}" --rate=8m --do_verify=1 --output="$T/fio1.out" >/dev/null 2>"$T/fio1.err" &
    local fio_pid=$!
    mg_replace "$slot" "$new" 16
    # Progress is visible while it runs.
    local seen=0
    for i in $(seq 60); do
        mg_status
        if [ "$(mg_q "s['job']['state']")" = running ]; then
            [ "$(mg_slot_state "$slot")" = rebuilding ] || rk_fail "slot $slot not rebuilding"
            [ "$(mg_q "0 <= s['job']['percent'] < 100 and s['job']['kind'] == 'rebuild'")" = True ] ||
                rk_fail "bad progress: $(cat "$T/st.json")"
            "$RAIDKIT" status --control "$CTL" >"$T/st.txt" || rk_fail "status text"
            # The rebuild may end between the two queries on a loaded machine: then the JSON
            # status must say so; otherwise the text must show the rebuild.
            if ! grep -q "rebuilding" "$T/st.txt"; then
                mg_status
                [ "$(mg_q "s['job']['state']")" = done ] ||
                    rk_fail "status text shows no rebuild: $(cat "$T/st.txt")"
            fi
            seen=1
            break
        fi
        sleep 0.1
    done
    [ $seen = 1 ] || rk_fail "never saw the rebuild running"
    wait $fio_pid || rk_fail "fio during the rebuild failed: $(tail -n 20 "$T/fio1.err" "$T/fio1.out")"
    mg_wait_job 60
    [ "$(mg_q "s['job']['state']")" = done ] || rk_fail "rebuild did not finish: $(cat "$T/st.json")"
    [ "$(mg_slot_state "$slot")" = active ] || rk_fail "slot $slot not active after the rebuild"
    [ "$(mg_q "s['degraded']")" = False ] || rk_fail "still degraded after the rebuild"
    [ "$(mg_q "s['slots'][$slot]['io']['writes'] > 0")" = True ] || rk_fail "no writes counted on the new member"

    # Only the rebuilt member (plus what is left) serves now.
    for i in $after; do
        mg_fail "$i"
    done
    "${FIO[@]}" --verify_only --output="$T/fio2.out" >/dev/null 2>"$T/fio2.err" ||
        rk_fail "fio verify from the rebuilt member failed: $(tail -n 20 "$T/fio2.err" "$T/fio2.out")"
    rk_verify $((16 * MiB)) $((size - 16 * MiB)) 1
    rk_stop
    # The new member is active on disk: the array restarts with it (failed slots stay out).
    rk_serve --degraded "$new" "${M[@]}"
    mg_fio_opts
    "${FIO[@]}" --verify_only --output="$T/fio3.out" >/dev/null 2>"$T/fio3.err" ||
        rk_fail "fio verify after restart failed: $(tail -n 20 "$T/fio3.err")"
    rk_verify $((16 * MiB)) $((size - 16 * MiB)) 1
    rk_stop
    rm -f "${M[@]}" "$new"
    rk_log "replace case $level ok"
}
