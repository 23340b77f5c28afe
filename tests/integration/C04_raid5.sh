#!/bin/bash
# C04_raid5: case C04 for the parity levels. A stamped raid5 of 4 (and raid6 of 5) assembles
# with the members listed as m2 m0 m3 m1, under new file names, refuses a member of another
# array naming both UUIDs, and with one member missing (shuffled, --degraded) reads correctly.
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
rk_init

for level in raid5 raid6; do
    n=4
    [ "$level" = raid6 ] && n=5
    rk_log "=== $level of $n"
    mkdir "$T/$level"
    rk_members "$n" 16M "$level/m"
    rk_create --level "$level" --chunk 32K "${M[@]}"
    size=$(rk_array_size "${M[@]}") || exit 1
    uuid=$(rk_array_uuid "${M[@]}") || exit 1
    rk_serve "${M[@]}"
    rk_stamp 1 0 "$size"
    rk_stop

    # Listed as m2 m0 m3 m1 (m4 last for raid6).
    order="2 0 3 1"
    [ "$n" -eq 5 ] && order="2 0 4 3 1"
    # shellcheck disable=SC2046
    rk_serve $(rk_reorder "$order" "${M[@]}")
    rk_verify 0 "$size" 1
    rk_stop

    # Renamed (reverse alphabetical to slot order), listed alphabetically.
    names=(e d c b a)
    R=()
    for ((i = 0; i < n; i++)); do
        mv "${M[$i]}" "$T/$level/${names[$i]}"
        R+=("$T/$level/${names[$i]}")
    done
    M=("${R[@]}")
    # shellcheck disable=SC2046
    rk_serve $(printf '%s\n' "${M[@]}" | LC_ALL=C sort)
    rk_verify 0 "$size" 1
    rk_stop

    # A member of another array in slot 1's place: refused, naming the file and both UUIDs.
    rk_members "$n" 16M "$level/f" F
    rk_create --level "$level" --chunk 32K "${F[@]}"
    fuuid=$(rk_array_uuid "${F[@]}") || exit 1
    sums=$(rk_sums "${M[@]}" "${F[@]}")
    mixed=("${M[@]}")
    mixed[1]="$T/$level/f1"
    rk_serve_refused 'f1' "${mixed[@]}"
    msg=$(tr -d '-' <"$RK_LOG_LAST" | tr 'A-F' 'a-f')
    for u in "$uuid" "$fuuid"; do
        case "$msg" in
        *"$u"*) ;;
        *) rk_fail "refusal does not name the array UUID $u: $(cat "$RK_LOG_LAST")" ;;
        esac
    done
    [ "$(rk_sums "${M[@]}" "${F[@]}")" = "$sums" ] || rk_fail "a refused serve changed member files"

    # Shuffled with slot 2 missing: refused without --degraded, correct with it; then a write
    # while degraded reads back after a degraded restart in another order.
    others=("${M[3]}" "${M[1]}" "${M[0]}")
    [ "$n" -eq 5 ] && others+=("${M[4]}")
    rk_serve_refused 'degraded|missing' "${others[@]}"
    rk_serve --degraded "${others[@]}"
    rk_verify 0 "$size" 1
    rk_stamp 2 $((size / 3 & ~4095)) $((2 * MiB))
    rk_stop
    # shellcheck disable=SC2046
    rk_serve --degraded $(printf '%s\n' "${others[@]}" | LC_ALL=C sort -r)
    rk_verify 0 $((size / 3 & ~4095)) 1 $((size / 3 & ~4095)) $((2 * MiB)) 2 \
        $(((size / 3 & ~4095) + 2 * MiB)) $((size - (size / 3 & ~4095) - 2 * MiB)) 1
    rk_stop
done
echo PASS
