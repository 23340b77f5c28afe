#!/usr/bin/env bash
# cli_exit_codes: the exit-code table of docs/CLI.md "Exit status" for every command: 0 success,
# 1 failure, 2 usage error (including options a command or level does not take), and the --test
# states of info/status (3 degraded, 4 recovering, 5 failed); --json on create, fail, replace
# and scrub prints JSON; info names what a non-raidkit file holds; a serve that cannot bind
# raises no event counter; a member in use names the pid holding it; progress without a
# terminal is a log line per step (no \r).
. "$RAIDKIT_SOURCE_DIR/tests/lib/common.sh"
rk_init
rk_need python3
nfail=0

# want CODE WHAT ARGS...: raidkit ARGS exits with CODE (stdout in $T/out, stderr in $T/err).
want()
{
    local code=$1 what=$2 rc
    shift 2
    timeout 30 "$RAIDKIT" "$@" >"$T/out" 2>"$T/err" </dev/null
    rc=$?
    rk_no_sanitizer "$T/err" "raidkit $*"
    if [ "$rc" -ne "$code" ]; then
        echo "FAIL ($what): raidkit $* exited $rc, want $code: $(head -c 400 "$T/err")" >&2
        nfail=$((nfail + 1))
    else
        echo "ok ($what): $code" >&2
    fi
}
is_json() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2]) else 1)' "$T/out" "$1" ||
    { echo "FAIL: output is not the JSON wanted ($1): $(head -c 300 "$T/out")" >&2; nfail=$((nfail + 1)); }; }
event() { "$RAIDKIT" info --json "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["members"][0]["event"])'; }

rk_members 4 24M
want 2 "raid5 with 2 members" create --level 5 "${M[0]}" "${M[1]}"
want 2 "raid6 with 33 members" create --level 6 $(for i in $(seq 33); do echo "$T/x$i"; done)
want 2 "--assume-clean on raid0" create --level 0 --assume-clean "${M[0]}" "${M[1]}"
want 2 "--bitmap on linear" create --level linear --bitmap internal "${M[0]}"
want 2 "--bitmap-region 1T" create --level 1 --bitmap-region 1T "${M[0]}" "${M[1]}"
want 2 "--write-hole on raid1" create --level 1 --write-hole ppl "${M[0]}" "${M[1]}"
want 2 "unknown command" frobnicate
want 2 "unknown option" info --bogus "${M[0]}"
want 0 "create --json" create --json --level 5 "${M[0]}" "${M[1]}" "${M[2]}"
is_json 'd["array"]["level"] == "raid5" and len(d["members"]) == 3'
want 0 "info --test healthy" info --test "${M[0]}" "${M[1]}" "${M[2]}"
want 3 "info --test one missing" info --test "${M[0]}" "${M[2]}"
want 5 "info --test two missing" info --test "${M[0]}"
grep -q "raid5" "$T/out" || { echo "FAIL: info --test printed no description" >&2; nfail=$((nfail + 1)); }

# info on files that are no raidkit members: says what they are, exits 1.
truncate -s 4M "$T/zero"
want 1 "info on a file of zeroes" info "$T/zero"
grep -q "zeroes only" "$T/out" || { echo "FAIL: info does not say the file holds zeroes: $(cat "$T/out")" >&2; nfail=$((nfail + 1)); }
if command -v mkfs.ext4 >/dev/null; then
    truncate -s 8M "$T/ext4" && mkfs.ext4 -q -F "$T/ext4" >/dev/null 2>&1
    want 1 "info on ext4" info --json "$T/ext4"
    is_json 'd["members"][0]["content"] == "an ext2/3/4 file system"'
fi

# serve: usage errors exit 2 before anything is opened.
want 2 "bad tcp port" serve --listen tcp:99999 "${M[@]:0:3}"
want 2 "bad fault spec" serve --debug-fault 0:explode "${M[@]:0:3}"
want 2 "--single with --run" serve --single --run true "${M[@]:0:3}"
# A serve that cannot bind touches no member (the event counter stays).
ev=$(event "${M[0]}")
want 1 "unbindable socket" serve --listen "unix:$T/no/such/dir/sock" "${M[@]:0:3}"
[ "$(event "${M[0]}")" = "$ev" ] || { echo "FAIL: a serve that could not bind raised the event counter" >&2; nfail=$((nfail + 1)); }
# -f is --foreground now (nbdkit), not --force.
want 0 "serve -f (foreground)" serve -q -f --run true "${M[@]:0:3}"

# Online: per-command options, --test states, --json.
CTL=$T/ctl
rk_serve --control "$CTL" "${M[@]:0:3}"
for i in $(seq 50); do [ -S "$CTL" ] && break; sleep 0.1; done
want 2 "status --slot" status --slot 3 --control "$CTL"
want 2 "fail --repair" fail --slot 1 --repair --control "$CTL"
want 0 "status --test healthy" status --test --control "$CTL"
want 1 "second serve of members in use" serve --listen "unix:$T/other.sock" "${M[@]:0:3}"
grep -Eq "in use by pid [0-9]+ \(raidkit\)" "$T/err" || { echo "FAIL: lock holder not named: $(cat "$T/err")" >&2; nfail=$((nfail + 1)); }
[ "$(wc -l <"$T/err")" -eq 1 ] || { echo "FAIL: busy message is not one line" >&2; nfail=$((nfail + 1)); }
want 0 "scrub --json online" scrub --json --control "$CTL"
is_json '"mismatches" in d and "mismatch_list" in d'
want 0 "fail --json" fail --json --slot 1 --control "$CTL"
is_json 'd["ok"] and d["slot"] == 1'
want 3 "status --test degraded" status --test --control "$CTL"
want 1 "fail an already failed slot" fail --slot 1 --control "$CTL"
rk_stop

# Offline: replace --json, progress lines without a terminal, scrub --json.
want 0 "replace --json offline" replace --json --slot 1 --with "${M[3]}" "${M[0]}" "${M[2]}"
is_json 'd["result"] == "rebuilt" and d["slot"] == 1'
want 0 "scrub offline, no terminal" scrub "${M[0]}" "${M[3]}" "${M[2]}"
if grep -q $'\r' "$T/err"; then echo "FAIL: progress wrote \\r into a non-terminal" >&2; nfail=$((nfail + 1)); fi
want 0 "scrub --json --no-progress offline" scrub --json --no-progress "${M[0]}" "${M[3]}" "${M[2]}"
is_json 'd["mismatches"] == 0'
[ ! -s "$T/err" ] || ! grep -q "%" "$T/err" || { echo "FAIL: --no-progress printed progress: $(cat "$T/err")" >&2; nfail=$((nfail + 1)); }
want 0 "info --test after the replace" info --test "${M[0]}" "${M[3]}" "${M[2]}"

[ $nfail -eq 0 ] || rk_fail "$nfail exit-code checks failed"
echo "PASS: exit codes, --test states, --json, lock holder, bind before members"
