#!/bin/bash
# Dirty degraded start with nothing to resync (T6): a raid1 of two copies started with one
# missing after a crash, or a raid5 with one member missing, has no redundancy left, so a resync
# has no copy or parity to bring in line. As md does, none runs: the array is recorded in sync
# (status: degraded, --test 3, never "needs resync"; a clean stop leaves no resync pending), and
# the regions the write-intent bitmap marks stay set, so the re-add of the missing member catches
# them up (here: the copy that came back differs in the region written before the crash, and
# after the re-add it holds the surviving copy's data). A raid6 with one member missing still
# has redundancy: its resync runs.
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/integration/manage_lib.bash"
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/torture_lib.sh" # torture_kill
rk_init

CTL="$T/ctl"
OFF=$((4 * MiB))

# crash LEVEL N: create over N 9M members, serve, stamp gen 1 at OFF, SIGKILL.
crash()
{
    rk_members "$2" 9M
    rk_create --level "$1" --chunk 16K "${M[@]}"
    rk_serve --control "$CTL" "${M[@]}"
    rk_stamp 1 "$OFF" 65536
    torture_kill
}

# no_resync_start MEMBER...: degraded start; no job, degraded (--test 3), nothing unsynced.
no_resync_start()
{
    rk_serve --control "$CTL" --degraded "$@"
    sleep 0.5
    mg_status
    [ "$(mg_q "s['job']['kind']")" = none ] || rk_fail "a job ran with no redundancy left: $(cat "$T/st.json")"
    [ "$(mg_q "s['bitmap']['unsynced']")" = 0 ] || rk_fail "unsynced regions left: $(cat "$T/st.json")"
    "$RAIDKIT" status --test --control "$CTL" >"$T/st.txt" 2>&1
    local rc=$?
    [ "$rc" = 3 ] || rk_fail "status --test exit $rc, want 3 (degraded): $(cat "$T/st.txt")"
    ! grep -q "needs resync" "$T/st.txt" || rk_fail "status says needs resync: $(cat "$T/st.txt")"
    rk_verify "$OFF" 65536 1
}

# not_pending MEMBER: info --json of a stopped array says clean and no resync pending.
not_pending()
{
    rk_info_json "$1" >"$T/info.json"
    [ "$(rk_info_get resync_pending resync_pending "$T/info.json")/$(rk_info_get clean clean "$T/info.json")" = False/True ] ||
        rk_fail "after a clean stop: $(cat "$T/info.json")"
}

rk_log "=== raid1, two copies, one missing after a crash"
crash raid1 2
# The copy that is away differs where the crash hit (as an unfinished write could leave it).
dd if=/dev/urandom of="${M[1]}" bs=64K count=1 seek=$(((MiB + OFF) / 65536)) conv=notrunc status=none || rk_fail dd
no_resync_start "${M[0]}"
grep -q "no resync: the array is degraded with no redundancy left" "$RK_LOG" || rk_fail "no log line says why no resync runs"
[ "$(mg_q "s['bitmap']['set']")" -ge 1 ] || rk_fail "the crash's region is no longer marked for the re-add: $(cat "$T/st.json")"
rk_stop
not_pending "${M[0]}"
no_resync_start "${M[0]}" # not stuck: the next start has nothing pending either
rk_log "=== re-add of the missing copy: the bitmap drives its catch-up"
"$RAIDKIT" re-add --slot 1 --control "$CTL" --wait "${M[1]}" >"$T/readd.out" 2>&1 || rk_fail "re-add: $(cat "$T/readd.out")"
grep -q "resyncing only the regions" "$T/readd.out" || rk_fail "re-add was not bitmap-driven: $(cat "$T/readd.out")"
mg_wait_job 30
mg_fail 0 # slot 1 alone must now hold the data written before the crash
rk_verify "$OFF" 65536 1
rk_stop

rk_log "=== raid5, one member missing after a crash"
crash raid5 4
no_resync_start "${M[0]}" "${M[1]}" "${M[2]}"
rk_stop
not_pending "${M[0]}"

rk_log "=== raid6, one member missing: redundancy left, the resync runs"
crash raid6 5
rk_serve --control "$CTL" --degraded "${M[0]}" "${M[1]}" "${M[2]}" "${M[3]}"
mg_wait_job 30
[ "$(mg_q "s['job']['kind']")/$(mg_q "s['job']['state']")" = resync/done ] ||
    rk_fail "raid6 with one member missing ran no resync: $(cat "$T/st.json")"
rk_verify "$OFF" 65536 1
rk_stop
echo "PASS: a dirty degraded start with no redundancy left runs no resync; the re-add catches up"
