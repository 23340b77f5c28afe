#!/usr/bin/env bash
# cli_json_refusals: with --json, every command that takes it prints one JSON document on stdout
# even when it refuses or fails (usage errors, member problems, a control socket nobody serves, a
# request the running server refuses), always of one shape:
# {"ok": false, "error": {"code": N, "message": "...", "command": "..."}},
# nothing else on stdout, the one-line error still on stderr (docs/CLI.md, the introduction).
. "$RAIDKIT_SOURCE_DIR/tests/lib/common.sh"
rk_init
rk_need python3
rk_members 2 16M
nfail=0
n=0
# refused WANT CMDWORDS -- ARGS...: raidkit ARGS exits WANT; stdout saved for the JSON check.
refused()
{
    local want=$1 words=$2 rc
    shift 2
    n=$((n + 1))
    timeout 30 "$RAIDKIT" "$@" >"$T/out.$n" 2>"$T/err.$n" </dev/null
    rc=$?
    printf '%s\t%s\t%s\n' "$rc" "$words" "$*" >"$T/case.$n"
    [ "$rc" -eq "$want" ] || { echo "FAIL: raidkit $* exited $rc, want $want" >&2; nfail=$((nfail + 1)); }
    grep -q "^raidkit $words: " "$T/err.$n" || { echo "FAIL: raidkit $*: no one-line error on stderr: $(cat "$T/err.$n")" >&2; nfail=$((nfail + 1)); }
}
refused 2 create create --json --level 5 "${M[0]}" "${M[1]}"
refused 2 create create --json --bogus "${M[0]}"
refused 1 info info --json "$T/nosuch"
refused 2 info info --json
refused 2 bitmap bitmap --json
refused 1 bitmap bitmap --json --add "${M[0]}" "${M[1]}"
refused 1 status status --json --control "$T/nobody.ctl"
refused 2 status status --json --slot 3 --control "$T/nobody.ctl"
refused 1 fail fail --json --slot 1 --control "$T/nobody.ctl"
refused 2 fail fail --json
refused 2 replace replace --json --slot 1
refused 2 re-add re-add --json --slot 1 "${M[0]}"
refused 1 scrub scrub --json "${M[0]}" "${M[1]}"
refused 2 scrub scrub --json --wait --control "$T/nobody.ctl"
refused 2 assemble assemble --json --scan --config "$T/no.conf"
refused 2 "cache create" cache create --json --mode bogus "$T/ssd" "${M[0]}"
refused 1 "cache mode" cache mode writeback --json --control "$T/nobody.ctl"
refused 1 "cache detach" cache detach --json --control "$T/nobody.ctl"
refused 2 "cache attach" cache attach --json --control "$T/nobody.ctl"
refused 2 bench bench --json --bogus
refused 2 fuse fuse --json
# refusals of a running server (its control reply is {"ok": false, "error": "..."})
rk_create --level 1 "${M[0]}" "${M[1]}"
rk_serve --control "$T/ctl" "${M[@]}"
refused 1 fail fail --json --slot 5 --control "$T/ctl"
"$RAIDKIT" scrub --no-wait --rate 1 --control "$T/ctl" 2>"$T/scrub.err" || rk_fail "scrub --no-wait: $(cat "$T/scrub.err")"
refused 1 scrub scrub --json --control "$T/ctl"
grep -q 'one job at a time' "$T/err.$n" || { echo "FAIL: scrub during a scrub: $(cat "$T/err.$n")" >&2; nfail=$((nfail + 1)); }
refused 1 "re-add" re-add --json --slot 0 "${M[0]}" --control "$T/ctl"
# offline commands on the members the server holds: refused locally, the same shape
truncate -s 16M "$T/new"
refused 1 replace replace --json --slot 1 --with "$T/new" "${M[0]}"
grep -q "in use by pid" "$T/err.$n" || { echo "FAIL: offline replace on served members: $(cat "$T/err.$n")" >&2; nfail=$((nfail + 1)); }
refused 1 "re-add" re-add --json --slot 1 "${M[1]}" "${M[0]}"
rk_stop
python3 - "$T" "$n" <<'EOP' || nfail=$((nfail + 1))
import json, sys
t, n, bad = sys.argv[1], int(sys.argv[2]), 0
for i in range(1, n + 1):
    rc, words, args = open("%s/case.%d" % (t, i)).read().rstrip("\n").split("\t")
    text = open("%s/out.%d" % (t, i)).read()
    try:
        d = json.loads(text)
        e = d["error"]
        ok = d["ok"] is False and e["code"] == int(rc) and e["command"] == words and \
            e["message"] and not e["message"].startswith("raidkit")
    except Exception as x:
        ok = False
    if not ok:
        print("FAIL: raidkit %s: stdout is not one JSON refusal: %r" % (args, text[:300]), file=sys.stderr)
        bad += 1
sys.exit(1 if bad else 0)
EOP
[ "$nfail" -eq 0 ] || rk_fail "$nfail check(s) failed"
rk_log "PASS"
