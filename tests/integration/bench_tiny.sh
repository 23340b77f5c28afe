#!/usr/bin/env bash
# `raidkit bench` end to end: the tiny suite over two configurations (single, raid0) writes all five
# report formats with consistent content; a bad suite/config/format is a usage error; Ctrl-C
# (SIGINT) stops cleanly with partial reports and no leftovers. Exit 77 when fio is missing.
set -u -o pipefail
: "${RAIDKIT:?set RAIDKIT to the raidkit binary}"
: "${RAIDKIT_SOURCE_DIR:?set RAIDKIT_SOURCE_DIR}"
command -v fio >/dev/null 2>&1 || { echo "SKIP: fio is not installed" >&2; exit 77; }

T=$(mktemp -d /tmp/rk-bench-tiny.XXXXXX)
PID=""
cleanup() { [ -n "$PID" ] && kill "$PID" 2>/dev/null; rm -rf "$T"; }
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; [ -f "$T/err" ] && tail -n 20 "$T/err" >&2; exit 1; }
export RAIDKIT_SUITES_DIR=$RAIDKIT_SOURCE_DIR/bench/suites
PY=/usr/bin/python3

# Usage errors: nothing run, exit 2.
"$RAIDKIT" bench --suite no-such-suite --out "$T/x" 2>"$T/err"; [ $? -eq 2 ] || fail "bad suite not exit 2"
grep -q "no suite 'no-such-suite'" "$T/err" || fail "bad suite message"
"$RAIDKIT" bench --suite tiny --configs raid7 --out "$T/x" 2>"$T/err"; [ $? -eq 2 ] || fail "bad config not exit 2"
"$RAIDKIT" bench --suite tiny --format pdf 2>"$T/err"; [ $? -eq 2 ] || fail "bad format not exit 2"
[ ! -e "$T/x" ] || fail "a usage error wrote reports"

# The real run: work files in $T/work (removed by the harness), reports in $T/out.
mkdir -p "$T/work"
"$RAIDKIT" bench --suite tiny --configs single,raid0 --members 2 --dir "$T/work" --out "$T/out" \
    >"$T/stdout" 2>"$T/err" || fail "bench exited $?"
for f in report.txt report.json report.csv randread.svg write.svg report.html; do
    [ -s "$T/out/$f" ] || fail "missing $f"
done
[ -z "$(ls -A "$T/work")" ] || fail "work files left: $(ls -A "$T/work")"
# stdout is the text report; layout as in the seeds.
cmp -s "$T/stdout" "$T/out/report.txt" || fail "stdout differs from report.txt"
grep -q '^MB/s > Higher Is Better$' "$T/stdout" || fail "no unit line"
grep -Eq '^Single Disk \. [0-9]+\.[0-9]{2} \|=+$' "$T/stdout" || fail "no Single Disk row"
grep -Eq '^RAID 0 \(2\) \.\. [0-9]+\.[0-9]{2} \|=+$' "$T/stdout" || fail "no RAID 0 row"
[ "$(grep -c '^fio [0-9.]* Type: ' "$T/stdout")" -eq 2 ] || fail "not two tables"
grep -q 'trial 3/3' "$T/err" || fail "no progress on stderr"
grep -q 'ETA' "$T/err" || fail "no ETA in progress"
# CSV: header + 2 jobs x 2 configs.
[ "$(wc -l <"$T/out/report.csv")" -eq 5 ] || fail "CSV rows"
# HTML: one chart per job, self-contained.
[ "$(grep -c '<svg ' "$T/out/report.html")" -eq 2 ] || fail "HTML charts"
! grep -q '<script\|<link\|src=' "$T/out/report.html" || fail "HTML not self-contained"
if [ -x "$PY" ]; then
    "$PY" - "$T/out" <<'PYEOF' || fail "JSON/SVG content"
import json, sys, xml.etree.ElementTree as E
d = sys.argv[1]
r = json.load(open(d + "/report.json"))
assert r["schema"] == "raidkit-bench-report/1"
assert r["suite"]["name"] == "tiny" and r["model"] is None and not r["interrupted"]
assert [c["name"] for c in r["configs"]] == ["single", "raid0"]
for j in r["jobs"]:
    assert [x["config"] for x in j["results"]] == ["single", "raid0"], j
    for x in j["results"]:
        assert len(x["trials"]) == 3 and all(t > 0 for t in x["trials"]), x
        assert abs(sum(x["trials"]) / 3 - x["mean"]) < 0.01, x
for f in ("randread.svg", "write.svg"):
    E.parse(d + "/" + f)
PYEOF
fi

# SIGINT during the second configuration: exit 130, partial reports, nothing left behind.
mkdir -p "$T/work2"
"$RAIDKIT" bench --suite tiny --configs single,raid1 --members 2 --dir "$T/work2" --out "$T/out2" \
    >"$T/stdout2" 2>"$T/err" &
PID=$!
for _ in $(seq 1 200); do grep -q 'raid1: up' "$T/err" && break; sleep 0.1; done
sleep 0.5
kill -INT "$PID"
wait "$PID"
rc=$?
PID=""
[ $rc -eq 130 ] || fail "SIGINT run exited $rc, want 130"
grep -q 'Interrupted: partial results' "$T/out2/report.txt" || fail "no partial-results note"
grep -q '^Single Disk' "$T/out2/report.txt" || fail "finished config lost"
[ -z "$(ls -A "$T/work2")" ] || fail "work files left after SIGINT: $(ls -A "$T/work2")"
if pgrep -f "socket=$T/work2" >/dev/null; then fail "fio still running after SIGINT"; fi
echo "bench_tiny: ok"
