#!/bin/bash
# raid5_fio: raid5 over 4 members end to end through the NBD server: fio crc32c verify and stamps
# healthy, with a member failing every I/O (--debug-fault SLOT:fail-all), with a member file
# missing (--degraded), and with read errors repaired from parity.
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
rk_init
rk_need fio nbdinfo nbdcopy mke2fs e2fsck qemu-img

# 4 x 32M: 31 MiB of data area each, 3 of them hold data.
SIZE=$((93 * MiB))

rk_log "=== healthy"
rk_members 4 32M h
rk_create --level raid5 "${M[@]}"
[ "$(rk_array_size "${M[@]}")" -eq "$SIZE" ] || rk_fail "raid5 array size, want $SIZE"
rk_serve "${M[@]}"
rk_check_nbdinfo "$SIZE"
rk_fio_verify 16
rk_stamp 1 $((16 * MiB)) $((SIZE - 16 * MiB))
rk_stop
# shellcheck disable=SC2046
rk_serve $(rk_reorder "3 1 0 2" "${M[@]}")
rk_verify $((16 * MiB)) $((SIZE - 16 * MiB)) 1
rk_stop

rk_log "=== slot 1 fails every I/O: fio verify while degraded"
rk_serve --debug-fault "1:fail-all" "${M[@]}"
rk_verify $((16 * MiB)) $((SIZE - 16 * MiB)) 1
rk_fio_verify 8
rk_stop
# shellcheck disable=SC2046
rk_expect_slot_failed 1 $(rk_others 1 "${M[@]}")
rm -f "${M[@]}"

# The shared degraded checks: (a) fail-all, (b) missing file + --degraded (ext4 image and
# stamps across a degraded restart), (c) read errors repaired, on a data-heavy and the last slot.
RK_DEGRADED_PARTS="a b c" rk_degraded_fail_all 4 "$SIZE" 0 --level raid5
rk_degraded_missing 4 "$SIZE" 3 --level raid5
rk_degraded_read_eio 4 "$SIZE" 2 --level raid5

rk_log "=== missing member: fio verify while degraded"
rk_members 4 32M f
rk_create --level raid5 --chunk 16K "${M[@]}"
mv "${M[2]}" "${M[2]}.away"
# shellcheck disable=SC2046
rk_serve --degraded $(rk_others 2 "${M[@]}")
rk_fio_verify 8
rk_stop
echo PASS
