#!/usr/bin/env bash
# `raidkit bench` end to end: the tiny suite over two configurations (single, raid0) writes all five
# report formats with consistent content; a bad suite/config/format is a usage error; Ctrl-C
# (SIGINT) stops cleanly with partial reports and no leftovers. Exit 77 when fio is missing.
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
: "${RAIDKIT:?set RAIDKIT to the raidkit binary}"
: "${RAIDKIT_SOURCE_DIR:?set RAIDKIT_SOURCE_DIR}"
rk_need fio

rk_init_tmp rk-bench-tiny
RK_LOG=$T/err # rk_fail shows the last command's stderr
export RAIDKIT_SUITES_DIR=$RAIDKIT_SOURCE_DIR/bench/suites

# Usage errors: nothing run, exit 2.
"$RAIDKIT" bench --suite no-such-suite --out "$T/x" 2>"$T/err"; [ $? -eq 2 ] || rk_fail "bad suite not exit 2"
grep -q "no suite 'no-such-suite'" "$T/err" || rk_fail "bad suite message"
"$RAIDKIT" bench --suite tiny --configs raid7 --out "$T/x" 2>"$T/err"; [ $? -eq 2 ] || rk_fail "bad config not exit 2"
"$RAIDKIT" bench --suite tiny --format pdf 2>"$T/err"; [ $? -eq 2 ] || rk_fail "bad format not exit 2"
[ ! -e "$T/x" ] || rk_fail "a usage error wrote reports"

# The real run: work files in $T/work (removed by the harness), reports in $T/out.
mkdir -p "$T/work"
"$RAIDKIT" bench --suite tiny --configs single,raid0 --members 2 --dir "$T/work" --out "$T/out" \
    >"$T/stdout" 2>"$T/err" || rk_fail "bench exited $?"
for f in report.txt report.json report.csv randread.svg write.svg report.html; do
    [ -s "$T/out/$f" ] || rk_fail "missing $f"
done
[ -z "$(ls -A "$T/work")" ] || rk_fail "work files left: $(ls -A "$T/work")"
# stdout is the text report; layout as in the seeds.
cmp -s "$T/stdout" "$T/out/report.txt" || rk_fail "stdout differs from report.txt"
grep -q '^MB/s > Higher Is Better$' "$T/stdout" || rk_fail "no unit line"
grep -Eq '^Single Disk \. [0-9]+\.[0-9]{2} \|=+$' "$T/stdout" || rk_fail "no Single Disk row"
grep -Eq '^RAID 0 \(2\) \.\. [0-9]+\.[0-9]{2} \|=+$' "$T/stdout" || rk_fail "no RAID 0 row"
[ "$(grep -c '^fio [0-9.]* Type: ' "$T/stdout")" -eq 2 ] || rk_fail "not two tables"
grep -q 'trial 3/3' "$T/err" || rk_fail "no progress on stderr"
grep -q 'ETA' "$T/err" || rk_fail "no ETA in progress"
# CSV: header + 2 jobs x 2 configs.
[ "$(wc -l <"$T/out/report.csv")" -eq 5 ] || rk_fail "CSV rows"
# HTML: one chart per job, self-contained.
[ "$(grep -c '<svg ' "$T/out/report.html")" -eq 2 ] || rk_fail "HTML charts"
! grep -q '<script\|<link\|src=' "$T/out/report.html" || rk_fail "HTML not self-contained"
if [ -x "$RK_PY" ]; then
    "$RK_PY" - "$T/out" <<'PYEOF' || rk_fail "JSON/SVG content"
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
RK_PID=$! # stopped by rk_cleanup should the test fail before the wait
for _ in $(seq 1 200); do grep -q 'raid1: up' "$T/err" && break; sleep 0.1; done
sleep 0.5
kill -INT "$RK_PID"
wait "$RK_PID"
rc=$?
RK_PID=""
[ $rc -eq 130 ] || rk_fail "SIGINT run exited $rc, want 130"
grep -q 'Interrupted: partial results' "$T/out2/report.txt" || rk_fail "no partial-results note"
grep -q '^Single Disk' "$T/out2/report.txt" || rk_fail "finished config lost"
[ -z "$(ls -A "$T/work2")" ] || rk_fail "work files left after SIGINT: $(ls -A "$T/work2")"
if pgrep -f "socket=$T/work2" >/dev/null; then rk_fail "fio still running after SIGINT"; fi
echo "bench_tiny: ok"
