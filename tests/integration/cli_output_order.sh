#!/usr/bin/env bash
# cli_output_order: what a user reads comes in order and says the right thing. A job's "started"
# line comes before its first progress line (offline scrub: the job logs its start before the
# command polls; before, "scrub: 0.0%" could come first); `replace --wait`'s last line, with
# stdout and stderr in one file, says it is done ("slot N: rebuilt onto PATH"; before, the
# buffered "rebuilding onto" came after "done"); `info` calls a 100-byte file of zeroes too small,
# not "zeroes only".
. "$RAIDKIT_SOURCE_DIR/tests/lib/common.sh"
rk_init
export RAIDKIT_LOG_TIME=0
nfail=0
bad() { echo "FAIL: $*" >&2; nfail=$((nfail + 1)); }

rk_members 3 9M
rk_create --level 5 "${M[@]}"
# The race lost about every other run before: 8 runs.
for i in $(seq 8); do
    "$RAIDKIT" scrub "${M[@]}" >/dev/null 2>"$T/scrub.err" || rk_fail "scrub: $(cat "$T/scrub.err")"
    grep -q "scrub (check) started" "$T/scrub.err" || rk_fail "no started line: $(cat "$T/scrub.err")"
    first=$(grep -m1 -E "scrub \(check\) started|scrub: [0-9.]+%" "$T/scrub.err")
    case $first in *started*) ;; *) bad "run $i: progress before the start: $(cat "$T/scrub.err")"; break ;; esac
done

rk_members 3 9M r R
rk_create --level 1 "${R[0]}" "${R[1]}"
CTL=$T/ctl
rk_serve --control "$CTL" "${R[0]}" "${R[1]}"
"$RAIDKIT" fail --slot 1 --control "$CTL" >/dev/null || rk_fail "fail --slot 1"
timeout 60 "$RAIDKIT" replace --slot 1 --with "${R[2]}" --wait --control "$CTL" >"$T/all" 2>&1 ||
    rk_fail "replace --wait: $(cat "$T/all")"
[ "$(tail -n 1 "$T/all")" = "slot 1: rebuilt onto ${R[2]}" ] || bad "replace --wait ends: $(cat "$T/all")"
grep -q "rebuilding onto" "$T/all" && bad "replace --wait says 'rebuilding onto': $(cat "$T/all")"
rk_stop

head -c 100 /dev/zero >"$T/z100"
"$RAIDKIT" info "$T/z100" >"$T/info" 2>&1
grep -q "$T/z100: too small (100 bytes; a raidkit superblock alone needs 4096)" "$T/info" ||
    bad "a 100-byte file: $(cat "$T/info")"
grep -q "zeroes only" "$T/info" && bad "a 100-byte file called zeroes only: $(cat "$T/info")"

[ $nfail -eq 0 ] || rk_fail "$nfail check(s) failed"
echo "PASS: output order"
