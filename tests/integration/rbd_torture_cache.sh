#!/usr/bin/env bash
# rbd_torture_cache: power-cut torture (docs/TORTURE.md; the cycle of tests/lib/torture_lib.sh)
# of a writeback cache whose backing is a Ceph RBD image, on a one-node cluster started by the
# test. RBD_TORTURE_CUTS cycles (default 4), each: a fresh 9 MiB image rk/tSEED as a linear array,
# a fresh 8 MiB cache of 4 KiB blocks; random writes, FLUSHes and FUA writes through NBD
# (tests/lib/torture.py); a power cut of the cache device and the RBD member at a random device
# write (one power domain, each keeping a random subset of its unflushed 4 KiB blocks), SIGKILL,
# restart through the cache. The cache always loads; every flushed and FUA write reads back
# exactly, every block holds its old or a newer generation; the same after detaching the cache
# (every dirty block written back to the image and rbd_flush'ed).
. "$RAIDKIT_SOURCE_DIR/tests/lib/common.sh"
. "$RAIDKIT_SOURCE_DIR/tests/integration/manage_lib.bash"
. "$RAIDKIT_SOURCE_DIR/tests/lib/torture_lib.sh"
. "$RAIDKIT_SOURCE_DIR/tests/lib/cache_lib.sh"
. "$RAIDKIT_SOURCE_DIR/tests/lib/rbd_lib.sh"
rk_init
rbd_cluster

# rbd_verify LABEL PREFIX FAILKEY: verify the torture state through the running server; counts
# into TC with PREFIX, a bad verify counts TC[FAILKEY].
rbd_verify()
{
    local line
    line=$("$RK_PY" "$TORTURE_PY" verify "$RK_URI" "$T/tstate.json" --label "$1" 2>>"$T/tverify.err")
    [ -n "$line" ] || rk_fail "torture verify $1 printed nothing: $(cat "$T/tverify.err")"
    torture_add "$2" "$line"
    [ "$(torture_bad "$line")" = 0 ] || TC[$3]=$((${TC[$3]:-0} + 1))
    [ "${TORTURE_QUIET:-1}" = 1 ] || echo "  $1: $line" >&2
}

# rbd_cycle SEED: one cut of the cache + RBD power domain and its checks.
rbd_cycle()
{
    local seed=$1 img="t$1" cut i
    rbd_image "$img" 9M
    local R="rbd:rk/$img"
    rk_create --level linear "$R" 2>/dev/null
    ca_create "$T/tcache" 8M 4K writeback "$R"
    RANDOM=$seed
    cut=$((((RANDOM << 15) | RANDOM) % ${TORTURE_CUTMAX:-1500} + 1))
    rm -f "$T/tstate.json"
    rk_serve --debug-fault "all:cut-after=$cut,keep=random,seed=$seed,on-cut=hang" \
        --cache "$T/tcache" "$R" 2>/dev/null
    timeout 120 "$RK_PY" "$TORTURE_PY" run "$RK_URI" "$T/tstate.json" --seed "$seed" \
        --max-ops "${TORTURE_OPS:-3000}" >"$T/trun.out" 2>&1 &
    local client=$!
    for ((i = 0; i < 1200; i++)); do
        grep -q "power cut complete" "$RK_LOG" && break
        kill -0 "$client" 2>/dev/null || break
        sleep 0.05
    done
    TC[cycles]=$((${TC[cycles]:-0} + 1))
    grep -q "power cut complete" "$RK_LOG" && TC[cuts]=$((${TC[cuts]:-0} + 1))
    torture_kill
    wait "$client" || rk_fail "torture client (seed $seed): $(cat "$T/trun.out")"
    CTL="$T/tctl"
    rk_serve --control "$CTL" --cache "$T/tcache" "$R" 2>/dev/null
    rbd_verify "rbd/seed$seed" "" fail_verify
    local out
    out=$("$RAIDKIT" cache detach --control "$CTL" 2>&1) || rk_fail "cache detach (seed $seed): $out"
    rbd_verify "rbd/seed$seed/detached" detached_ fail_verify_detached
    rk_stop # the image stays: the SIGKILLed server's watch on it lasts 30 s (rbd rm refuses)
}

declare -gA TC=()
first=${TORTURE_SEED:-1}
for ((s = first; s < first + ${RBD_TORTURE_CUTS:-4}; s++)); do
    rbd_cycle "$s"
done
summary="torture rbd-cache:"
for k in cycles cuts old new lost_flush lost_fua garbage read_errors fail_verify \
    detached_lost_flush detached_lost_fua detached_garbage fail_verify_detached; do
    summary+=" $k=${TC[$k]:-0}"
done
echo "$summary"
[ "${TC[fail_verify]:-0}" = 0 ] && [ "${TC[fail_verify_detached]:-0}" = 0 ] || rk_fail "$summary"
echo "$summary" | grep -Eq " cuts=[1-9]" || rk_fail "no cycle cut the power: $summary"
echo "PASS: torture of a writeback cache over RBD"
