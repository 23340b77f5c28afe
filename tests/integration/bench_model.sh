#!/usr/bin/env bash
# `raidkit bench --model`: members wrapped in the sata-ssd-2014 device model, the noop ceiling row is
# added and measured, JSON carries the model parameters and host-bound flags, and a level the build
# refuses (or too few members) is skipped with a note instead of failing the run. Exit 77 without fio.
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
: "${RAIDKIT:?set RAIDKIT to the raidkit binary}"
: "${RAIDKIT_SOURCE_DIR:?set RAIDKIT_SOURCE_DIR}"
rk_need fio
[ -x "$RK_PY" ] || rk_skip "$RK_PY is missing"

rk_init_tmp rk-bench-model
RK_LOG=$T/err # rk_fail shows the last command's stderr
export RAIDKIT_SUITES_DIR=$RAIDKIT_SOURCE_DIR/bench/suites

"$RAIDKIT" bench --suite tiny --model no-such-model --out "$T/x" 2>"$T/err"
[ $? -eq 2 ] || rk_fail "unknown model not a usage error"
"$RAIDKIT" bench --suite tiny --model sata-ssd-2014 --dir "$T" 2>"$T/err"
[ $? -eq 2 ] || rk_fail "--dir with --model not a usage error"

# raid6 with 2 members: skipped with a note (needs 4); single and the noop ceiling measured.
"$RAIDKIT" bench --suite tiny --configs single,raid6 --members 2 --model sata-ssd-2014 \
    --format json,text --trials 1 --json --out "$T/out" >"$T/stdout" 2>"$T/err" ||
    rk_fail "bench exited $?"
[ -s "$T/out/report.json" ] && [ -s "$T/out/report.txt" ] || rk_fail "reports missing"
[ ! -e "$T/out/report.html" ] || rk_fail "--format json,text wrote HTML"
"$RK_PY" - "$T/out/report.json" "$T/stdout" <<'PYEOF' || rk_fail "JSON content"
import json, sys
r = json.load(open(sys.argv[1]))
assert json.load(open(sys.argv[2])) == r, "--json stdout differs from report.json"
m = r["model"]
assert m["name"] == "sata-ssd-2014" and m["kind"] == "ssd", m
cfg = {c["name"]: c for c in r["configs"]}
assert set(cfg) == {"single", "raid6", "noop"}, cfg
assert cfg["raid6"]["skipped"] and "skipped" in cfg["raid6"]["note"], cfg["raid6"]
assert cfg["noop"]["kind"] == "noop" and not cfg["noop"]["skipped"]
for j in r["jobs"]:
    res = {x["config"]: x for x in j["results"]}
    assert set(res) == {"single", "noop"}, res
    for x in res.values():
        assert isinstance(x["host_bound"], bool) and len(x["trials"]) >= 1
        assert x["host_bound"] == ("host-bound" in x["note"]), x
    assert not res["noop"]["host_bound"]
    # The model caps one member's reads at read_iops requests/s (a ceiling, never flaky).
    if j["name"] == "randread":
        cap = m["read_iops"] * j["bs"] / 1e6
        assert res["single"]["mean"] <= 1.15 * cap, (res["single"], cap)
PYEOF
grep -q '^Skipped:' "$T/out/report.txt" || rk_fail "no Skipped section"
grep -q 'raid6: skipped: .*4' "$T/out/report.txt" || rk_fail "raid6 skip note"
grep -q 'Disk Target: sata-ssd-2014' "$T/out/report.txt" || rk_fail "model not in the table title"
echo "bench_model: ok"
