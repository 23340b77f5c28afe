#!/usr/bin/env bash
# `make demo`'s script (scripts/demo-bench.sh) on a tiny suite with seed figures: it prints one
# seed | predicted | measured table per fio job with the seed's figure and the model's prediction
# in the rows, the "how to read this" paragraph, the reason a row differs from the study, then the
# report paths; the reports are in DEMO_DIR/bench. Exit 77 without fio or /usr/bin/python3.
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
: "${RAIDKIT:?set RAIDKIT to the raidkit binary}"
: "${RAIDKIT_SOURCE_DIR:?set RAIDKIT_SOURCE_DIR}"
rk_need fio
[ -x /usr/bin/python3 ] || rk_skip "/usr/bin/python3 is missing"

rk_init_tmp rk-bench-demo
RK_LOG=$T/err
# The tiny suite with the seed-000 figures of two rows.
sed -e '/^rw = randread$/a seed_ref = RAID 0 | 758.26\nseed_ref = RAID 1 | 233.00' \
    -e '/^rw = write$/a seed_ref = RAID 0 | 319.41' \
    "$RAIDKIT_SOURCE_DIR/bench/suites/tiny.ini" >"$T/demo.ini"
DEMO_DIR=$T/demo SUITE=$T/demo.ini CONFIGS=raid0,raid1 MEMBERS=3 TRIALS=1 \
    bash "$RAIDKIT_SOURCE_DIR/scripts/demo-bench.sh" "$RAIDKIT" >"$T/out" 2>"$T/err" ||
    rk_fail "demo-bench exited $?: $(cat "$T/out")"
RK_LOG=$T/out
grep -Eq '^Configuration +seed +predicted +measured +pred/seed +meas/seed' "$T/out" ||
    rk_fail "no seed | predicted | measured header"
[ "$(grep -c '^Configuration ' "$T/out")" -eq 2 ] || rk_fail "not one table per job"
grep -Eq '^RAID 0 \(3\) +758\.26 +>?[0-9]+\.[0-9]{2} +>?[0-9]+\.[0-9]{2} +[0-9.]+x +[0-9.]+x' \
    "$T/out" || rk_fail "RAID 0 row without seed, prediction, measured and ratios"
grep -Eq '^RAID 1 \(3\) +233\.00 .*differs from the study' "$T/out" || rk_fail "RAID 1 row"
grep -Eq '^RAID 0 \(3\) +319\.41 ' "$T/out" || rk_fail "write table's seed figure"
grep -Eq '^noop \(ceiling\) +- ' "$T/out" || rk_fail "noop row without a dash for no seed"
grep -q '^How to read this:' "$T/out" || rk_fail "no how-to-read paragraph"
grep -q 'RAID 1 (3): a 3-way mirror' "$T/out" || rk_fail "no mapping reason"
# The paths come after the tables and the paragraph.
[ "$(grep -n 'HTML report:' "$T/out" | cut -d: -f1)" -gt "$(grep -n '^How to read' "$T/out" | cut -d: -f1)" ] ||
    rk_fail "paths not after the paragraph"
for f in report.html report.txt report.json report.csv; do
    [ -s "$T/demo/bench/$f" ] || rk_fail "missing $f"
    grep -q "$T/demo/bench/$f" "$T/out" || rk_fail "$f path not printed"
done
# A bad report is refused with one line naming the file.
echo '{}' >"$T/bad.json"
/usr/bin/python3 "$RAIDKIT_SOURCE_DIR/scripts/demo-compare.py" "$T/bad.json" 2>"$T/err" &&
    rk_fail "a non-report accepted"
grep -q "bad.json: not a raidkit bench report" "$T/err" || rk_fail "bad report message"
echo "bench_demo: ok"
