#!/bin/bash
# gather_fio_verify: raid5 (4 members) and raid6 (5 members) with stripe gathering on (the
# default; docs/ARCHITECTURE.md "Stripe gathering") through the NBD server: fio crc32c verify of
# sequential sub-stripe streams (16K, and 4K-32K mixed sizes) and of random mixed I/O; the
# stream's data verified again after a clean restart (held stripes written out at close); and
# the same stream while a member starts failing every request in the middle of the run
# (--debug-fault SLOT:fail-after-writes=N), after which the slot is recorded failed.
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
rk_init
rk_need fio

seq_verify() # NAME FIO-ARGS...: sequential write + crc32c verify over 24 MiB
{
    local name=$1
    shift
    rk_fio "$name" --rw=write --iodepth=8 --size=24M --verify=crc32c --do_verify=1 \
        --verify_fatal=1 "$@"
}

for lv in "raid5 4" "raid6 5"; do
    level=${lv% *}
    n=${lv#* }
    rk_log "=== $level over $n, healthy"
    rk_members "$n" 16M "$level-"
    rk_create --level "$level" --chunk 16K "${M[@]}"
    rk_serve "${M[@]}"
    seq_verify "$level-seq16k" --bs=16k
    seq_verify "$level-seqmix" --bsrange=4k-32k
    rk_fio_verify 8
    seq_verify "$level-seq16k-again" --bs=16k
    rk_stop
    rk_serve "${M[@]}"
    rk_fio "$level-reverify" --rw=write --bs=16k --size=24M --verify=crc32c --verify_only \
        --verify_fatal=1
    rk_stop

    slot=$((n - 2))
    rk_log "=== $level over $n, slot $slot fails in the middle of the stream"
    rk_serve --debug-fault "$slot:fail-after-writes=400" "${M[@]}"
    seq_verify "$level-seq16k-failing" --bs=16k
    seq_verify "$level-seq16k-degraded" --bs=16k --offset=4M
    rk_stop
    # shellcheck disable=SC2046
    rk_expect_slot_failed "$slot" $(rk_others "$slot" "${M[@]}")
    rm -f "${M[@]}"
done
echo PASS
