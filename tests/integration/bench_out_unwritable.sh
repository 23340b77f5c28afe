#!/usr/bin/env bash
# `raidkit bench --out DIR` where DIR cannot be written: refused with one line naming DIR, exit 2,
# before the first trial runs (no "[bench] suite" line, well under a second of work).
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
: "${RAIDKIT:?set RAIDKIT to the raidkit binary}"
: "${RAIDKIT_SOURCE_DIR:?set RAIDKIT_SOURCE_DIR}"
rk_need fio
rk_init_tmp rk-bench-out
RK_LOG=$T/err
export RAIDKIT_SUITES_DIR=$RAIDKIT_SOURCE_DIR/bench/suites

for out in /proc/raidkit-no-such-dir/bench "$T/file/bench"; do
    : >"$T/file"
    t0=$(date +%s)
    "$RAIDKIT" bench --suite tiny --model sata-ssd-2014 --configs single --out "$out" \
        >"$T/out" 2>"$T/err"
    rc=$?
    [ $rc -eq 2 ] || rk_fail "unwritable --out $out: exit $rc, want 2"
    grep -q -- "--out $out" "$T/err" || rk_fail "the message does not name $out: $(cat "$T/err")"
    grep -q "\[bench\] suite" "$T/err" && rk_fail "trials started before --out $out was checked"
    [ $(($(date +%s) - t0)) -lt 5 ] || rk_fail "the refusal of --out $out took 5 s or more"
done
echo PASS
