#!/bin/bash
# C11 (metadata before data): loop - write block i through a writeback cache over RAID1, FLUSH,
# record i elsewhere with fsync - until a power cut at a random device write (cache and members
# one power domain, each keeping a random subset of its unflushed 4 KiB blocks), SIGKILL,
# restart. Every recorded i reads back with its content (data durable on the cache -> metadata
# durable -> FLUSH acknowledged), the cache loads every time, also after detach (written back).
# C11_CYCLES cycles (default 3), seeds from C11_SEED (default 1).
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/integration/manage_lib.bash"
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/torture_lib.sh"
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/cache_lib.sh"
rk_init
ca_write_py
CTL="$T/ctl"
C="$T/cache"
first=${C11_SEED:-1}
for ((seed = first; seed < first + ${C11_CYCLES:-3}; seed++)); do
    rk_members 2 9M
    rk_create --level 1 "${M[@]}"
    ca_create "$C" 8M 4K writeback "${M[@]}"
    RANDOM=$seed
    cut=$((RANDOM % 400 + 20))
    rm -f "$T/rec"
    rk_serve --cache "$C" --debug-fault "all:cut-after=$cut,keep=random,seed=$seed,on-cut=hang" "${M[@]}"
    ca_cut_client c11 "$RK_URI" "$T/rec" 1500
    touch "$T/rec"
    rk_serve --control "$CTL" --cache "$C" "${M[@]}"
    out=$(ca_py c11check "$RK_URI" "$T/rec") || rk_fail "seed $seed (cut after $cut): $out"
    ca_detach
    out2=$(ca_py c11check "$RK_URI" "$T/rec") || rk_fail "seed $seed after detach: $out2"
    rk_log "seed $seed, cut after $cut device writes: $out (also after detach)"
    rk_stop
done
echo "PASS: C11 metadata before data"
