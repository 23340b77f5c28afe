#!/bin/bash
# Clean stop during resync keeps it pending (issue: "the next clean stop marks the array clean
# while parity is still stale"): a raid5 without a bitmap is SIGKILLed, so the next serve runs a
# full resync; SIGTERM while it runs (rate limited). The clean stop does not mark the array in
# sync: the next start says a resync is pending and resumes the full resync from its checkpoint
# (not from 0), and it ends with scrub at 0 mismatches. A degraded start of that array still
# needs --force (its parity is not known good; the array has no partial parity log, which
# would replay the stripes a crash may have left half written and allow that start).
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/integration/manage_lib.bash"
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/torture_lib.sh" # torture_kill
rk_init

CTL="$T/ctl"
rk_members 4 17M
rk_create --level raid5 --bitmap none --write-hole none "${M[@]}"
rk_serve --control "$CTL" "${M[@]}"
rk_stamp 1 0 $((8 * MiB))
torture_kill
# Parity of a stamped stripe goes stale behind raidkit's back (as a crash could leave it).
dd if=/dev/urandom of="${M[3]}" bs=64K count=1 seek=16 conv=notrunc status=none || rk_fail dd

rk_serve --control "$CTL" --rebuild-rate 4 "${M[@]}"
sleep 1.5
mg_status
[ "$(mg_q "s['job']['kind']")/$(mg_q "s['job']['state']")/$(mg_q "s['job']['full']")" = resync/running/True ] ||
    rk_fail "no full resync running: $(cat "$T/st.json")"
rk_stop
pos=$(grep -o 'resync.*' "$RK_LOG" | tail -n 1)
rk_log "stopped: $pos"

rk_serve_refused "force|write hole|stale" --degraded "${M[0]}" "${M[1]}" "${M[2]}"

rk_serve --control "$CTL" "${M[@]}"
grep -qi "resync is pending" "$RK_LOG" || rk_fail "the next start does not say a resync is pending: $(cat "$RK_LOG")"
mg_wait_job 60
[ "$(mg_q "s['job']['kind']")/$(mg_q "s['job']['state']")" = resync/done ] || rk_fail "resync did not finish: $(cat "$T/st.json")"
start=$(mg_q "s['job']['start']")
[ "$start" -gt 0 ] || rk_fail "the resync restarted from 0 instead of its checkpoint"
rk_log "resumed at member offset $start, resynced $(mg_q "s['job']['resynced_bytes']") bytes"
rk_verify 0 $((8 * MiB)) 1
rk_stop
out=$("$RAIDKIT" scrub "${M[@]}" 2>&1) || rk_fail "scrub: $out"
echo "$out" | grep -q "^scrub finished: 0 mismatches" || rk_fail "scrub after the resumed resync: $out"
# In sync now: no resync on the next start, and a degraded start needs no --force.
rk_serve --control "$CTL" "${M[@]}"
mg_status
[ "$(mg_q "s['job']['kind']")" = none ] || rk_fail "a job ran on a synced array: $(cat "$T/st.json")"
rk_stop
echo "PASS: a clean stop during a resync keeps it pending; it resumes from its checkpoint"
