#!/usr/bin/env bash
# Filesystem jobs on the cache configurations: tiny-fs's sqlite job on cache-writeback (raidkit
# fuse --cache over the emulated HDD, the SSD model on the cache device) and cache-ssd (the raw
# SSD model alone), with two of seed 003's rows paired to them by seed_config. Both rows are
# measured (not skipped) with every check clean; the writeback run ends with its cache drained and
# detached and the backing alone checked; each seed figure stands beside its configuration in the
# text and JSON reports, the writeback row's cache hit ratio under the table and in the JSON;
# nothing is left behind; and all of it with the bench's own binary file deleted under it.
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/bench_fs_lib.sh"
bench_fs_setup sqlite3
[ -x /usr/bin/python3 ] || rk_skip "/usr/bin/python3 is missing"
bench_fs_suite sqlite "seed_row=120GB Mushkin SSD | 680.90" "seed_row=BCache Writeback | 607.83"
sed -i '0,/^\[/s//seed_config = 120GB Mushkin SSD | cache-ssd\
seed_config = BCache Writeback | cache-writeback\
[/' "$SUITE"
# The bench runs from a copy of the binary that is deleted once the run has started (a rebuild
# or a removed build during a long run): every raidkit it starts (create, cache create, fuse,
# status, detach) is the running binary itself (/proc/self/exe), so the run must not notice.
cp "$RAIDKIT" "$T/rk-copy" || rk_fail "cp $RAIDKIT"
"$T/rk-copy" bench --suite "$SUITE" --configs cache-writeback,cache-ssd --members 2 --trials 1 \
    --dir "$T/work" --out "$T/out" >"$T/stdout" 2>"$T/err" &
pid=$!
for _ in $(seq 200); do
    [ -s "$T/err" ] && break
    sleep 0.05
done
rm -f "$T/rk-copy"
wait "$pid"
BENCH_RC=$?
[ "$BENCH_RC" -eq 0 ] || rk_fail "bench (its binary deleted under it) exited $BENCH_RC: $(tail -n 8 "$T/err")"
! grep -q '^Failed:\|^Skipped' "$T/stdout" || rk_fail "a failure or skip: $(cat "$T/stdout")"
grep -Eq '^raidkit cache writeback \.* [0-9]+\.[0-9]{2} \|=*  \[seed 607\.83, x[0-9.]+\]$' "$T/stdout" ||
    rk_fail "no writeback row with its seed figure: $(cat "$T/stdout")"
grep -Eq '^raidkit raw cache SSD \.* [0-9]+\.[0-9]{2} \|=*  \[seed 680\.90, x[0-9.]+\]$' "$T/stdout" ||
    rk_fail "no raw SSD row with its seed figure: $(cat "$T/stdout")"
grep -q '^BCache Writeback (seed) \.* 607\.83 |' "$T/stdout" || rk_fail "the study's row is gone"
grep -q 'raidkit cache writeback = BCache Writeback (seed)' "$T/stdout" ||
    rk_fail "no line naming the study's row: $(cat "$T/stdout")"
grep -Eq '^Cache hit ratio, raidkit cache writeback: read (-|[0-9.]+%), write [0-9.]+%$' "$T/stdout" ||
    rk_fail "no cache hit ratio under the table: $(cat "$T/stdout")"
! grep -q '^Cache hit ratio, raidkit raw cache SSD' "$T/stdout" || rk_fail "a hit ratio without a cache"
[ "$(grep -c 'sqlite .*trial 1: .* on ext4' "$T/err")" -eq 2 ] || rk_fail "not both measured: $(cat "$T/err")"
grep -q 'cache-writeback: filesystem device /dev/loop' "$T/err" || rk_fail "no filesystem device line"
grep -q 'cache-writeback: writeback cache drained (.* MiB dirty written back) and detached after the last trial; the backing alone then checked clean (e2fsck -fn)' "$T/err" ||
    rk_fail "no drained backing check: $(cat "$T/err")"
/usr/bin/python3 - "$T/out/report.json" <<'EOF' || rk_fail "report.json: see above"
import json, sys
rep = json.load(open(sys.argv[1]))
assert not rep["failures"], rep["failures"]
job = rep["jobs"][0]
assert job["kind"] == "fs" and job["tool"] == "sqlite", job
want = {"cache-writeback": ("BCache Writeback", 607.83), "cache-ssd": ("120GB Mushkin SSD", 680.9)}
got = {x["config"]: x for x in job["results"]}
for cfg, (label, seed) in want.items():
    x = got[cfg]
    assert len(x["trials"]) >= 1 and x["mean"] > 0, x
    assert x["seed_label"] == label and x["seed_mbs"] == seed, x
    assert abs(x["seed_ratio"] - x["mean"] / seed) < 0.001, x
    assert x["prediction"] is None and "cache tier" in x["prediction_reason"], x
    assert not x["note"], x
# The cache's hits and misses during the tool's runs (sqlite writes through the writeback
# cache); the raw SSD has no cache and no counters.
k = got["cache-writeback"]["cache"]
assert k["write_hits"] + k["write_misses"] > 0, k
assert k["write_hit_pct"] is not None, k
assert "cache" not in got["cache-ssd"], got["cache-ssd"]
rows = {s["label"]: s["config"] for s in job["seed_rows"]}
assert rows == {"120GB Mushkin SSD": "cache-ssd", "BCache Writeback": "cache-writeback"}, rows
cfgs = {c["name"]: c for c in rep["configs"]}
assert "backing alone then checked clean" in cfgs["cache-writeback"]["note"], cfgs
assert not cfgs["cache-ssd"]["note"], cfgs
EOF
bench_fs_check_clean
echo "PASS: bench_fs_cache ($(grep -E '^raidkit (cache writeback|raw cache SSD) ' "$T/stdout" | tr -s '.=' | tr '\n' ';'))"
