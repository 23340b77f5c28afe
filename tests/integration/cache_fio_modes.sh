#!/bin/bash
# fio --verify=crc32c through the cache in every mode, over raid1 and raid5 backings: a random
# write job with crc32c headers (4k-64k, partial and whole cache blocks) runs while the cache
# switches writeback -> writethrough -> writearound -> none -> writeback, detaches and attaches
# again; fio then verifies everything it wrote, again after a restart through the cache, and once
# more on the backing alone after a final detach (everything written back).
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/integration/manage_lib.bash"
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/cache_lib.sh"
rk_init
rk_need fio

# fio_job NAME EXTRA...: the random write job over [0, 24M) with crc32c verification.
fio_job()
{
    local name=$1
    shift
    rk_fio "$name" --rw=randwrite --bsrange=4k-64k --size=24M --iodepth=8 --verify=crc32c \
        --verify_fatal=1 --randseed=77 "$@"
}

case_level() # LEVEL N SIZE BLOCK
{
    local level=$1 n=$2 size=$3 block=$4 m
    rk_log "=== $level, cache blocks of $block"
    rk_members "$n" "$size" "$level-"
    rk_create --level "$level" "${M[@]}"
    C="$T/cache-$level"
    ca_create "$C" 16M "$block" writeback "${M[@]}"
    CTL="$T/ctl"
    rk_serve --control "$CTL" --cache "$C" "${M[@]}"
    (fio_job "w-$level" --do_verify=1 --rate=8m) &
    local job=$!
    for m in writethrough writearound none writeback; do
        sleep 0.4
        ca_mode "$m"
        rk_log "mode $m: $(ca_q "(c['mode'], c['dirty_blocks'], c['read_hits'], c['bypass'])")"
    done
    sleep 0.3
    ca_detach
    sleep 0.3
    ca_attach "$C"
    ca_mode writeback
    rk_log "after detach/attach: $(ca_q "(c['state'], c['mode'])")"
    wait "$job" || rk_fail "fio with mode switches ($level)"
    [ "$(ca_q "c['state'] == 'ok' and c['write_hits'] + c['write_misses'] > 0")" = True ] ||
        rk_fail "cache not in use: $(cat "$T/st.json")"
    rk_stop
    rk_serve --control "$CTL" --cache "$C" "${M[@]}"
    fio_job "v-$level" --verify_only=1
    ca_mode writearound
    fio_job "v2-$level" --verify_only=1
    ca_detach
    rk_stop
    rk_serve "${M[@]}"
    fio_job "v3-$level" --verify_only=1
    rk_stop
    rk_log "$level ok"
}

case_level raid1 2 33M 4K
case_level raid5 3 17M 16K
echo "PASS: cache fio through every mode"
