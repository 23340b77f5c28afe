#!/bin/bash
# raid6_fio: raid6 over 4 and 5 members end to end through the NBD server: fio crc32c verify and
# stamps healthy, then with every pair of members missing (--degraded) and with two members
# failing every I/O, with a degraded restart in between.
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
rk_init
rk_need fio nbdinfo

# 4 x 16M: 15 MiB of data area each, 2 of the 4 hold data.
SIZE=$((30 * MiB))

rk_log "=== healthy, 5 members"
rk_members 5 16M h
rk_create --level raid6 --chunk 16K "${M[@]}"
[ "$(rk_array_size "${M[@]}")" -eq $((45 * MiB)) ] || rk_fail "raid6 of 5 array size, want 45 MiB"
rk_serve "${M[@]}"
rk_check_nbdinfo $((45 * MiB))
rk_fio_verify 16
rk_stop
rm -f "${M[@]}"

rk_members 4 16M p
rk_create --level raid6 "${M[@]}"
[ "$(rk_array_size "${M[@]}")" -eq "$SIZE" ] || rk_fail "raid6 of 4 array size, want $SIZE"
rk_serve "${M[@]}"
rk_stamp 1 0 "$SIZE"
rk_stop
for f in "${M[@]}"; do cp --sparse=always "$f" "$f.gen1"; done

# Every pair missing: the stamps read back, writes made with the pair gone survive a restart.
for a in 0 1 2 3; do
    for b in 0 1 2 3; do
        [ "$b" -gt "$a" ] || continue
        rk_log "=== slots $a and $b missing"
        for i in 0 1 2 3; do cp --sparse=always "${M[$i]}.gen1" "${M[$i]}"; done
        rest=()
        for i in 3 2 1 0; do
            [ "$i" -eq "$a" ] || [ "$i" -eq "$b" ] || rest+=("${M[$i]}")
        done
        rk_serve_refused 'degraded|missing' "${rest[@]}"
        rk_serve --degraded "${rest[@]}"
        rk_verify 0 "$SIZE" 1
        rk_fio_verify 4
        rk_stamp 2 $((8 * MiB)) $((4 * MiB))
        rk_stop
        rk_serve --degraded "${rest[@]}"
        # [0, 4M) holds fio's data now; the rest is gen 1 around the gen-2 stamps.
        rk_verify $((4 * MiB)) $((4 * MiB)) 1 $((8 * MiB)) $((4 * MiB)) 2 \
            $((12 * MiB)) $((SIZE - 12 * MiB)) 1
        rk_stop
    done
done

rk_log "=== slots 0 and 2 fail every I/O"
for i in 0 1 2 3; do cp --sparse=always "${M[$i]}.gen1" "${M[$i]}"; done
rk_serve --debug-fault "0:fail-all" --debug-fault "2:fail-all" "${M[@]}"
rk_verify 0 "$SIZE" 1
rk_fio_verify 4
rk_stop
echo PASS
