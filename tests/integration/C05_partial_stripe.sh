#!/bin/bash
# C05_partial_stripe: case C05 through the NBD server. RAID5 of 3, chunk 4 KiB, stamped:
# writes of 512 B at 512, 4 KiB at 2 KiB, 8 KiB at 4 KiB and 12 KiB at 0 read back exactly,
# healthy and then with each member missing in turn.
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
rk_init

rk_members 3 2M
rk_create --level raid5 --chunk 4K "${M[@]}"
size=$(rk_array_size "${M[@]}") || exit 1
rk_serve "${M[@]}"
rk_stamp 1 0 "$size"
# Each write gets its own generation over its own range; later ones overwrite earlier ones.
rk_stamp 2 512 512
rk_stamp 3 2048 4096
rk_stamp 4 4096 8192
rk_stamp 5 0 12288
rk_stamp 6 $((64 * 1024 + 512)) 512
rk_stamp 7 $((64 * 1024 + 2048)) 4096
rk_stamp 8 $((64 * 1024 + 4096)) 8192
expect=(0 12288 5 12288 $((64 * 1024 - 12288)) 1
    $((64 * 1024)) 512 1 $((64 * 1024 + 512)) 512 6 $((64 * 1024 + 1024)) 1024 1
    $((64 * 1024 + 2048)) 2048 7 $((64 * 1024 + 4096)) 8192 8
    $((64 * 1024 + 12288)) $((size - 64 * 1024 - 12288)) 1)
rk_verify "${expect[@]}"
rk_stop
# A degraded start marks the absent slot failed in the others: start each case from a copy.
for f in "${M[@]}"; do cp --sparse=always "$f" "$f.healthy"; done
for s in 0 1 2; do
    for f in "${M[@]}"; do cp --sparse=always "$f.healthy" "$f"; done
    # shellcheck disable=SC2046
    rk_serve --degraded $(rk_others "$s" "${M[@]}")
    rk_verify "${expect[@]}"
    rk_stop
done
echo PASS
