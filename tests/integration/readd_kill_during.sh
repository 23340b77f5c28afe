#!/bin/bash
# A crash during a re-add: RAID1 of 2 x 32 MiB, m1 failed, gen 2 over the first 24 MiB, re-add
# of m1 at 4 MiB/s. While it runs, reads never come from m1 (its read counter stays put, the
# data reads back gen 2 where m1 still holds gen 1). SIGKILL the server mid-way; the restart
# resumes the re-add (not a full rebuild) from its checkpoint, it completes, the resync of the
# unclean stop runs after it, and with m0 failed every stamp reads back from m1.
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/integration/manage_lib.bash"
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/integration/readd_lib.bash"
rk_init
export RAIDKIT_BITMAP_IDLE_MS=300

rk_members 2 33M k-
rk_create --level raid1 "${M[@]}"
CTL="$T/ctl"
rk_serve --control "$CTL" "${M[@]}"
size=$(rk_py size "$RK_URI") || rk_fail size
rk_stamp 1 0 "$size"
mg_fail 1
W=$((24 * MiB))
rk_stamp 2 0 $W
ra_readd 1 "${M[1]}" --control "$CTL" --rate 4
echo "$OUT" | grep -q "resyncing only the regions" || rk_fail "not a re-add from the bitmap: $OUT"
sleep 1
mg_status
[ "$(mg_q "s['job']['kind']")/$(mg_q "s['job']['state']")" = re-add/running ] ||
    rk_fail "re-add not running: $(cat "$T/st.json")"
reads0=$(mg_q "s['slots'][1]['io']['reads']")
rk_verify 0 $W 2 $W $((size - W)) 1
mg_status
[ "$(mg_q "s['slots'][1]['io']['reads']")" = "$reads0" ] || rk_fail "the re-adding member served reads"
[ "$(mg_q "s['job']['state']")" = running ] || rk_fail "the re-add ended too early to test the crash"
sleep 1.5
mg_status
pos=$(mg_q "s['job']['pos']")
rk_log "SIGKILL at re-add position $pos"
srv=$(pgrep -P "$RK_PID" raidkit || echo "$RK_PID")
kill -KILL $srv "$RK_PID" 2>/dev/null
wait "$RK_PID" 2>/dev/null
for i in $(seq 50); do kill -0 $srv 2>/dev/null || break; sleep 0.1; done
RK_PID=""
rk_serve --control "$CTL" "${M[@]}"
from=$(sed -n 's/.*resuming re-add at data offset \([0-9]*\).*/\1/p' "$RK_LOG")
[ -n "$from" ] || rk_fail "no resumed re-add in the log: $(cat "$RK_LOG")"
[ "$from" -gt 0 ] || rk_fail "re-add resumed from 0, not from its checkpoint"
# The re-add ends, then the resync the SIGKILL asked for (it waited for the re-add) runs.
for i in $(seq 300); do
    grep -q "array in sync: resync recorded complete" "$RK_LOG" && break
    sleep 0.1
done
grep -q "re-add of slot 1 complete" "$RK_LOG" || rk_fail "the resumed re-add did not complete: $(cat "$RK_LOG")"
grep -q "starting the resync that waited for it" "$RK_LOG" || rk_fail "no resync after the re-add"
grep -q "array in sync: resync recorded complete" "$RK_LOG" || rk_fail "the resync did not finish"
mg_status
[ "$(mg_slot_state 1)" = active ] || rk_fail "slot 1 not active after the resumed re-add"
mg_fail 0
rk_verify 0 $W 2 $W $((size - W)) 1
rk_stop
echo PASS
