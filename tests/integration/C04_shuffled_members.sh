#!/bin/bash
# C04_shuffled_members: raid0/raid1/raid10 over 4 members assemble in any order and under new file
# names, refuse a member of another array (naming the file and both UUIDs), and `create` refuses
# members that already carry a superblock unless --force.
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
rk_init

for level in raid0 raid1 raid10; do
    rk_log "=== $level"
    rm -rf "${T:?}/$level"
    mkdir "$T/$level"
    rk_members 4 32M "$level/m"
    rk_create --level "$level" "${M[@]}"
    size=$(rk_array_size "${M[@]}") || exit 1
    uuid=$(rk_array_uuid "${M[@]}") || exit 1

    rk_serve "${M[@]}"
    rk_stamp 1 0 "$size"
    rk_stop

    # Listed as m2 m0 m3 m1.
    # shellcheck disable=SC2046
    rk_serve $(rk_reorder "2 0 3 1" "${M[@]}")
    rk_verify 0 "$size" 1
    rk_stop

    # Renamed: m0 -> d, m1 -> b, m2 -> a, m3 -> c; listed alphabetically.
    mv "${M[0]}" "$T/$level/d"
    mv "${M[1]}" "$T/$level/b"
    mv "${M[2]}" "$T/$level/a"
    mv "${M[3]}" "$T/$level/c"
    M=("$T/$level/d" "$T/$level/b" "$T/$level/a" "$T/$level/c") # slot order again
    rk_serve "$T/$level/a" "$T/$level/b" "$T/$level/c" "$T/$level/d"
    rk_verify 0 "$size" 1
    rk_stop

    # A member of another array: refused, naming the file and both array UUIDs.
    rk_members 4 32M "$level/f" F
    rk_create --level "$level" "${F[@]}"
    fuuid=$(rk_array_uuid "${F[@]}") || exit 1
    [ "$fuuid" != "$uuid" ] || rk_fail "two created arrays share the UUID $uuid"
    sums=$(rk_sums "${M[@]}" "${F[@]}")
    rk_serve_refused 'f1' "${M[2]}" "${M[0]}" "$T/$level/f1" "${M[3]}" "${M[1]}"
    msg=$(tr -d '-' <"$RK_LOG_LAST" | tr 'A-F' 'a-f')
    case "$msg" in *"$uuid"*) ;; *) rk_fail "refusal does not name the array UUID $uuid: $(cat "$RK_LOG_LAST")" ;; esac
    case "$msg" in *"$fuuid"*) ;; *) rk_fail "refusal does not name the foreign UUID $fuuid: $(cat "$RK_LOG_LAST")" ;; esac
    [ "$(rk_sums "${M[@]}" "${F[@]}")" = "$sums" ] || rk_fail "a refused serve changed member files"

    # Shuffled and one missing (slot 2).
    if [ "$level" = raid0 ]; then
        # raid0 has no redundancy: refused even with --degraded, and nothing is written.
        sums=$(rk_sums "${M[@]}")
        rk_serve_refused 'missing|unavailable|survive|redundan' --degraded "${M[3]}" "${M[1]}" "${M[0]}"
        [ "$(rk_sums "${M[@]}")" = "$sums" ] || rk_fail "a refused raid0 --degraded serve changed member files"
    else
        rk_serve_refused 'degraded|missing' "${M[3]}" "${M[1]}" "${M[0]}"
        rk_serve --degraded "${M[3]}" "${M[1]}" "${M[0]}"
        rk_verify 0 "$size" 1
        rk_stop
    fi

    # create over members that carry a superblock: refused without --force, files unchanged.
    sums=$(rk_sums "${M[@]}")
    "$RAIDKIT" create --level "$level" "${M[@]}" >"$T/create.out" 2>"$T/create.err"
    rc=$?
    rk_no_sanitizer "$T/create.err" "raidkit create"
    [ "$rc" -ne 0 ] || rk_fail "create over existing members succeeded without --force"
    [ "$rc" -lt 128 ] || rk_fail "create over existing members crashed (status $rc): $(cat "$T/create.err")"
    [ -s "$T/create.err" ] || rk_fail "create over existing members refused without a message"
    [ "$(rk_sums "${M[@]}")" = "$sums" ] || rk_fail "a refused create changed member files"
    rk_log "create refused as expected: $(head -n 2 "$T/create.err")"
    rk_create --force --level "$level" "${M[@]}"
    nuuid=$(rk_array_uuid "${M[@]}") || exit 1
    [ "$nuuid" != "$uuid" ] || rk_fail "create --force kept the old array UUID"
    rk_serve "${M[@]}"
    rk_stamp 2 0 "$size"
    rk_verify 0 "$size" 2
    rk_stop
done
echo PASS
