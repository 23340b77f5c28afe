#!/usr/bin/env bash
# progress_rate: the rate and ETA of a job are honest from the first line (docs/CLI.md
# "Progress"). An online `replace --rate 5 --wait` shows no rate (and ETA unknown) before the
# job has run 1 s, and never more than the 5 MiB/s the limit allows (before: 147 MiB/s and
# "ETA < 1 s" right after the start, settling at 5 later); the finished job in `status` too.
. "$RAIDKIT_SOURCE_DIR/tests/lib/common.sh"
rk_init
rk_need python3
export RAIDKIT_LOG_TIME=0

rk_members 3 17M
rk_create --level 1 "${M[0]}" "${M[1]}"
CTL=$T/ctl
rk_serve --control "$CTL" "${M[0]}" "${M[1]}"
"$RAIDKIT" fail --slot 1 --control "$CTL" >/dev/null || rk_fail "fail --slot 1"
timeout 60 "$RAIDKIT" replace --slot 1 --with "${M[2]}" --rate 5 --wait --control "$CTL" \
    >"$T/out" 2>"$T/err" || rk_fail "replace --rate 5 --wait: $(cat "$T/err")"
"$RAIDKIT" status --json --control "$CTL" >"$T/st.json" || rk_fail "status"
rk_stop
python3 - "$T/err" "$T/st.json" <<'EOP' || rk_fail "dishonest rate or ETA: $(cat "$T/err")"
import json, re, sys
lines = [l for l in open(sys.argv[1]) if re.search(r"replace: \d", l)]
bad = []
if not lines:
    bad.append("no progress lines")
elif "MiB/s" in lines[0] or "ETA unknown" not in lines[0]:
    bad.append("first line shows a rate: " + lines[0])
for l in lines:
    m = re.search(r"at ([0-9.]+) MiB/s", l)
    if m and float(m.group(1)) > 5.0:
        bad.append("above the 5 MiB/s limit: " + l)
job = json.load(open(sys.argv[2]))["job"]
if job["state"] != "done" or not 0 < job["rate_mib_s"] <= 5.0:
    bad.append("status job: %r" % job)
for b in bad:
    print("FAIL: " + b.strip(), file=sys.stderr)
sys.exit(1 if bad else 0)
EOP
echo "PASS: progress rate"
