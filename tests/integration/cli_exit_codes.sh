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
# is_json PYEXPR: the last output must be JSON for which PYEXPR (over `d`) holds. Checked at the
# end by one python run over every saved output (one interpreter start, not one per check).
njson=0
is_json()
{
    njson=$((njson + 1))
    cp "$T/out" "$T/json.$njson"
    printf '%s\n' "$1" >"$T/json.$njson.expr"
}
check_json()
{
    [ "$njson" -gt 0 ] || return 0
    python3 - "$T" "$njson" <<'EOP' || nfail=$((nfail + $?))
import json, sys
t, n, bad = sys.argv[1], int(sys.argv[2]), 0
for i in range(1, n + 1):
    expr = open("%s/json.%d.expr" % (t, i)).read().strip()
    text = open("%s/json.%d" % (t, i)).read()
    try:
        d = json.loads(text)
        ok = eval(expr)
    except Exception:
        ok = False
    if not ok:
        print("FAIL: output is not the JSON wanted (%s): %s" % (expr, text[:300]), file=sys.stderr)
        bad += 1
sys.exit(bad)
EOP
}
# events MEMBER...: the event counter of each member, one line each (info's "Members:" lines).
events() { "$RAIDKIT" info "$@" 2>/dev/null | sed -n 's/.*: [a-z]*, slot [0-9]*, event \([0-9]*\),.*/\1/p'; }
event() { events "$1"; }

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
# Without --test the state is described, not an exit status (md-style; docs/CLI.md "info").
want 0 "info one missing, no --test" info "${M[0]}" "${M[2]}"
want 0 "info --json two missing, no --test" info --json "${M[0]}"
is_json 'd["array"]["level"] == "raid5" and "ok" not in d'

# info on files that are no raidkit members: says what they are, exits 1.
truncate -s 4M "$T/zero"
want 1 "info on a file of zeroes" info "$T/zero"
grep -q "zeroes only" "$T/out" || { echo "FAIL: info does not say the file holds zeroes: $(cat "$T/out")" >&2; nfail=$((nfail + 1)); }
if command -v mkfs.ext4 >/dev/null; then
    truncate -s 8M "$T/ext4" && mkfs.ext4 -q -F "$T/ext4" >/dev/null 2>&1
    want 1 "info on ext4" info --json "$T/ext4"
    is_json 'd["members"][0]["content"] in ("an ext2/3/4 file system", "an ext4 file system (libblkid)")'
fi

# serve: usage errors exit 2 before anything is opened.
want 2 "bad tcp port" serve --listen tcp:99999 "${M[@]:0:3}"
want 2 "bad fault spec" serve --debug-fault 0:explode "${M[@]:0:3}"
want 2 "--single with --run" serve --single --run true "${M[@]:0:3}"
# A serve that cannot bind touches no member (the event counter stays).
ev=$(event "${M[0]}")
[[ $ev =~ ^[0-9]+$ ]] || rk_fail "no event counter read from ${M[0]}: '$ev'"
want 1 "unbindable socket" serve --listen "unix:$T/no/such/dir/sock" "${M[@]:0:3}"
[ "$(event "${M[0]}")" = "$ev" ] || { echo "FAIL: a serve that could not bind raised the event counter" >&2; nfail=$((nfail + 1)); }
# -f is --foreground now (nbdkit), not --force; a start that needs --force, given -f instead,
# says so (docs/CLI.md "Short options"), and create's -f is --force.
want 0 "serve -f (foreground)" serve -q -f --run true "${M[@]:0:3}"
rk_members 3 8M sf SF
RAIDKIT_TEST_NO_ZERO=1 "$RAIDKIT" create --level 5 "${SF[@]}" >/dev/null 2>&1 || rk_fail "create ${SF[*]}"
want 1 "serve -f where --force is needed" serve -f --degraded --run true "${SF[0]}" "${SF[1]}"
grep -q "start with --force to accept that (-f is --foreground in serve, not --force)$" "$T/err" ||
    { echo "FAIL: serve -f refusal does not say -f is not --force: $(cat "$T/err")" >&2; nfail=$((nfail + 1)); }
want 1 "serve --foreground where --force is needed" serve --foreground --degraded --run true "${SF[0]}" "${SF[1]}"
! grep -q "(-f is" "$T/err" || { echo "FAIL: --foreground named as -f: $(cat "$T/err")" >&2; nfail=$((nfail + 1)); }
want 0 "create -f (--force) over a raidkit member" create -f -l 1 "${SF[0]}" "${SF[1]}"

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
want 1 "fail --json of an already failed slot" fail --json --slot 1 --control "$CTL"
is_json 'd["ok"] is False and d["error"]'
rk_stop

# Offline: replace --json, progress lines without a terminal, scrub --json.
want 0 "replace --json offline" replace --json --slot 1 --with "${M[3]}" "${M[0]}" "${M[2]}"
is_json 'd["result"] == "rebuilt" and d["slot"] == 1'
# The rebuild's start logged once (was also "replacing ...: rebuild started"); a slot left out
# is "started degraded" once (the read-only precheck before the writable open logs nothing).
[ "$(grep -c "started" "$T/err")" -eq 1 ] ||
    { echo "FAIL: offline replace logs its start twice: $(cat "$T/err")" >&2; nfail=$((nfail + 1)); }
rk_members 4 8M rp RP
"$RAIDKIT" create --level 5 "${RP[@]:0:3}" >/dev/null 2>&1 || rk_fail "create ${RP[*]:0:3}"
want 0 "replace of a slot left out" replace --no-progress --slot 1 --with "${RP[3]}" "${RP[0]}" "${RP[2]}"
[ "$(grep -c "started degraded: slot 1 missing" "$T/err")" -eq 1 ] ||
    { echo "FAIL: 'started degraded' not logged once: $(cat "$T/err")" >&2; nfail=$((nfail + 1)); }
want 0 "scrub offline, no terminal" scrub "${M[0]}" "${M[3]}" "${M[2]}"
if grep -q $'\r' "$T/err"; then echo "FAIL: progress wrote \\r into a non-terminal" >&2; nfail=$((nfail + 1)); fi
want 0 "scrub --json --no-progress offline" scrub --json --no-progress "${M[0]}" "${M[3]}" "${M[2]}"
is_json 'd["mismatches"] == 0'
[ ! -s "$T/err" ] || ! grep -q "%" "$T/err" || { echo "FAIL: --no-progress printed progress: $(cat "$T/err")" >&2; nfail=$((nfail + 1)); }
want 0 "info --test after the replace" info --test "${M[0]}" "${M[3]}" "${M[2]}"


# same_events WHAT: no member's event counter moved since the last `evs` (a refusal writes nothing).
evs()
{
    EVS=$(events "${M[0]}" "${M[3]}" "${M[2]}" | tr '\n' ' ')
    [[ $EVS =~ ^[0-9]+\ [0-9]+\ [0-9]+\ $ ]] || rk_fail "no event counters read: '$EVS'"
}
same_events()
{
    local now
    now=$(events "${M[0]}" "${M[3]}" "${M[2]}" | tr '\n' ' ')
    [ "$now" = "$EVS" ] || { echo "FAIL ($1): event counters moved: $EVS -> $now" >&2; nfail=$((nfail + 1)); }
}
# Offline commands open degraded only by the slot they act on; any other missing slot needs
# --degraded (as serve), refused with one line naming it, nothing written.
evs
want 1 "scrub --repair with a member left out" scrub --repair "${M[0]}" "${M[3]}"
grep -q "slot 2 is active but not given" "$T/err" || { echo "FAIL: missing slot not named: $(cat "$T/err")" >&2; nfail=$((nfail + 1)); }
[ "$(wc -l <"$T/err")" -eq 1 ] || { echo "FAIL: refusal is not one line: $(cat "$T/err")" >&2; nfail=$((nfail + 1)); }
same_events "scrub --repair refused"
want 1 "re-add with another slot missing" re-add --slot 1 "${M[1]}" "${M[0]}"
same_events "re-add refused"
want 1 "replace of an active slot" replace --slot 1 --with "${M[1]}" "${M[0]}" "${M[3]}" "${M[2]}"
grep -q "slot 1 is active" "$T/err" || { echo "FAIL: active slot message: $(cat "$T/err")" >&2; nfail=$((nfail + 1)); }
same_events "replace of an active slot"
want 1 "re-add into an active slot (F7)" re-add --slot 1 "${M[3]}" "${M[0]}" "${M[3]}" "${M[2]}"
same_events "re-add of an active slot"
want 1 "replace onto a too small member" replace --slot 2 --with "$T/zero" "${M[0]}" "${M[3]}"
same_events "replace onto a too small member"
want 1 "re-add of a file that is no member" re-add --slot 2 "$T/zero" "${M[0]}" "${M[3]}"
grep -qx "raidkit re-add: $T/zero: not a raidkit member (no superblock magic at offset 0)" "$T/err" ||
    { echo "FAIL: re-add of a non-member: $(cat "$T/err")" >&2; nfail=$((nfail + 1)); }
same_events "re-add of a non-member"
want 2 "--degraded online" scrub --degraded --control "$T/ctl"
want 2 "re-add --repair (option table)" re-add --repair --slot 1 "${M[1]}" "${M[0]}" "${M[2]}"
want 1 "serve --control in a missing directory" serve --control "$T/no/dir/ctl" --run true "${M[0]}" "${M[3]}" "${M[2]}"
same_events "serve --control refused"
want 1 "serve --control on a regular file" serve --control "$T/zero" --run true "${M[0]}" "${M[3]}" "${M[2]}"
same_events "serve --control on a file"
want 1 "fuse on a missing mount point" fuse "$T/no/such/mnt" "${M[0]}" "${M[3]}" "${M[2]}"
same_events "fuse refused"
# With --degraded the scrub runs degraded; re-add of the slot it acts on needs none.
want 0 "scrub --repair --degraded" scrub --repair --degraded --no-progress "${M[0]}" "${M[3]}"
want 0 "re-add --json of the slot left out" re-add --json --no-progress --slot 2 "${M[2]}" "${M[0]}" "${M[3]}"
is_json 'd["result"] == "re-added" and d["slot"] == 2 and "resynced_bytes" in d'
want 0 "info --test after the re-add" info --test "${M[0]}" "${M[3]}" "${M[2]}"

# The same member twice (same path, a symlink, a hard link) is a usage error in create/serve.
ln -sf "${M[0]}" "$T/m0link"
want 2 "serve with a member twice (symlink)" serve --run true "${M[0]}" "$T/m0link" "${M[2]}"
grep -q "same file" "$T/err" || { echo "FAIL: duplicate message: $(cat "$T/err")" >&2; nfail=$((nfail + 1)); }
want 2 "create with a member twice" create --level 1 --size 8M "$T/d1" "$T/d1"
[ ! -e "$T/d1" ] || { echo "FAIL: create given a member twice made $T/d1" >&2; nfail=$((nfail + 1)); }
# A refused create removes only the files it made in this run.
touch "$T/pre"
want 1 "create with a bad member path" create --level 1 --size 8M "$T/new0" "$T/pre" "$T/no/dir/m"
[ ! -e "$T/new0" ] || { echo "FAIL: refused create left $T/new0 behind" >&2; nfail=$((nfail + 1)); }
[ -e "$T/pre" ] || { echo "FAIL: refused create removed the pre-existing $T/pre" >&2; nfail=$((nfail + 1)); }
rk_serve "${M[0]}" "${M[3]}" "${M[2]}"
want 1 "create --force over a member in use" create --force --level 1 --size 8M "$T/new2" "${M[0]}"
grep -qx "raidkit create: ${M[0]} is in use by pid [0-9]* (raidkit); --force does not override that: stop it first" "$T/err" ||
    { echo "FAIL: create over a member in use: $(cat "$T/err")" >&2; nfail=$((nfail + 1)); }
[ ! -e "$T/new2" ] || { echo "FAIL: refused create left $T/new2 behind" >&2; nfail=$((nfail + 1)); }
# Offline commands on a served array name the server holding it (F4), nothing else.
for args in "scrub ${M[0]} ${M[3]} ${M[2]}" "bitmap --add ${M[0]} ${M[3]} ${M[2]}" \
    "cache create --mode writethrough $T/zero ${M[0]} ${M[3]} ${M[2]}" \
    "replace --slot 1 --with $T/zero ${M[0]} ${M[2]}" "re-add --slot 1 ${M[3]} ${M[0]} ${M[2]}"; do
    # shellcheck disable=SC2086
    want 1 "offline $args on a served array" $args
    grep -Eq "in use by pid [0-9]+ \(raidkit\)" "$T/err" && [ "$(wc -l <"$T/err")" -eq 1 ] ||
        { echo "FAIL: $args: $(cat "$T/err")" >&2; nfail=$((nfail + 1)); }
done
rk_stop

# --json on bitmap and cache create.
rk_members 2 12M bj BJ
want 0 "create --bitmap none" create --level 1 --bitmap none "${BJ[@]}"
want 0 "bitmap --add --json" bitmap --add --json "${BJ[@]}"
is_json 'd["result"] == "added" and d["members"] == 2'
truncate -s 8M "$T/ssd"
want 0 "cache create --json" cache create --json --mode writethrough "$T/ssd" "${BJ[@]}"
is_json 'd["mode"] == "writethrough" and d["blocks"] > 0 and len(d["uuid"]) == 36'

# A truncated member is named and exits 1.
cp "${M[2]}" "$T/trunc"
truncate -s 4M "$T/trunc"
want 1 "info on a truncated member" info "${M[0]}" "${M[3]}" "$T/trunc"
grep -q "trunc: truncated" "$T/out" || { echo "FAIL: truncated member shows: $(cat "$T/out")" >&2; nfail=$((nfail + 1)); }
want 3 "info --test with a truncated member" info --test "${M[0]}" "${M[3]}" "$T/trunc"

# serve --run with a command that exits at once never hangs (SIGCHLD race), 6 times.
for i in $(seq 6); do
    timeout 20 "$RAIDKIT" serve -q --run 'exit 7' "${M[0]}" "${M[3]}" "${M[2]}" </dev/null 2>/dev/null
    rc=$?
    [ $rc -eq 7 ] || { echo "FAIL: serve --run 'exit 7' run $i exited $rc" >&2; nfail=$((nfail + 1)); break; }
done

# --progress draws a bar; a log line first clears it (\r + erase), never lands inside it.
want 0 "scrub --repair --progress" scrub --repair --progress "${M[0]}" "${M[3]}" "${M[2]}"
python3 - "$T/err" <<'EOP' || nfail=$((nfail + 1))
import re, sys
t = open(sys.argv[1], encoding="utf-8", errors="replace", newline="").read()
# a log line (timestamp) starts a line, or follows the bar's erase "\r\033[K"
bad = [t[max(0, m.start() - 80):m.end()] for m in re.finditer(r"\d{4}-\d\d-\d\dT\d\d:", t)
       if m.start() and t[m.start() - 1] != "\n" and not t[:m.start()].endswith("\r\x1b[K")]
if "[" not in t or "%" not in t:
    bad = ["no bar drawn with --progress: " + t[:200]]
# a finished job shows no ETA, and none rounds down to "ETA 0 s"
if re.search(r"100\.0% at [^,]*, ETA", t) or "ETA 0 s" in t:
    bad = ["ETA shown at the end or as 0 s: " + t[-300:]]
if bad:
    print("FAIL: a log line inside the progress bar: %r" % bad[0][:300], file=sys.stderr)
    sys.exit(1)
EOP

check_json
[ $nfail -eq 0 ] || rk_fail "$nfail exit-code checks failed"
echo "PASS: exit codes, --test states, --json, lock holder, bind before members"
