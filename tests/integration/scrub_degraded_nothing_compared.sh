#!/bin/bash
# scrub_degraded_nothing_compared: a scrub with no redundancy left to compare against (raid5 with
# a member missing, offline and online) says so in its result line and in --json / status
# (`nothing_compared`), instead of a bare "0 mismatches" that reads like a clean bill of health;
# a healthy array's scrub does not; it reads nothing, so it shows no data rate. docs/CLI.md "What
# scrub can and cannot know", "Progress".
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
rk_init

rk_members 3 32M
rk_create --level raid5 "${M[@]}"
out=$("$RAIDKIT" scrub "${M[@]}" 2>/dev/null) || rk_fail "healthy scrub failed"
case $out in *"nothing compared"*) rk_fail "a healthy scrub says nothing was compared: $out" ;; esac
js=$("$RAIDKIT" scrub --json "${M[@]}" 2>/dev/null) || rk_fail "healthy scrub --json failed"
echo "$js" | grep -Eq '"nothing_compared":[[:space:]]*false' || rk_fail "healthy --json: $js"
# offline, one member left out
out=$("$RAIDKIT" scrub --degraded "${M[0]}" "${M[1]}" 2>/dev/null) || rk_fail "degraded scrub failed"
case $out in *"0 mismatches"*"(nothing compared: no redundancy left)"*) ;; *) rk_fail "degraded scrub: $out" ;; esac
# online: fail a slot, scrub through the control socket
CTL="$T/ctl.sock"
rk_serve --control "$CTL" "${M[@]}"
"$RAIDKIT" fail --slot 2 --control "$CTL" >/dev/null 2>&1 || rk_fail "fail --slot 2 refused"
out=$("$RAIDKIT" scrub --control "$CTL" 2>"$T/scrub.err") || rk_fail "online scrub failed"
case $out in *"(nothing compared: no redundancy left)"*) ;; *) rk_fail "online degraded scrub: $out" ;; esac
# It reads nothing: no data rate (before: "done: 100.0% at 378031.0 MiB/s"), in status neither.
grep -q "MiB/s" "$T/scrub.err" && rk_fail "a scrub that reads nothing shows a rate: $(cat "$T/scrub.err")"
"$RAIDKIT" status --control "$CTL" >"$T/st.txt" 2>/dev/null || rk_fail "status failed"
grep -q "^job: .*MiB/s" "$T/st.txt" && rk_fail "status shows a rate for it: $(cat "$T/st.txt")"
grep -q "^scrub: .*(nothing compared: no redundancy left)" "$T/st.txt" ||
    rk_fail "status text does not say the last scrub compared nothing: $(cat "$T/st.txt")"
"$RAIDKIT" status --json --control "$CTL" >"$T/st.json" 2>/dev/null || rk_fail "status failed"
grep -Eq '"nothing_compared":[[:space:]]*true' "$T/st.json" || rk_fail "status has no nothing_compared: $(cat "$T/st.json")"
rk_stop
echo "PASS: scrub_degraded_nothing_compared"
