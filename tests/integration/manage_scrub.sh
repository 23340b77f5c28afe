#!/bin/bash
# manage_scrub: scrub of a healthy array finds 0 mismatches; a member chunk corrupted behind the
# engine's back with dd is found by a check, fixed by --repair, and a second check finds 0 —
# online through the control socket (raid1, raid10, raid5 when built) and offline on the files.
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/integration/manage_lib.bash"
rk_init

# scrub_expect WANT_MISMATCHES ARGS...: run `raidkit scrub ARGS`, check the count it prints.
scrub_expect()
{
    local want=$1 out
    shift
    out=$(timeout 60 "$RAIDKIT" scrub "$@" 2>"$T/scrub.err") || rk_fail "raidkit scrub $*: $(cat "$T/scrub.err")"
    echo "$out" | grep -q "^scrub finished: $want mismatches" ||
        rk_fail "raidkit scrub $*: want $want mismatches, got: $out"
    rk_log "scrub $*: $out"
}

# corrupt FILE OFFSET: 4 KiB of junk into a member file behind the engine's back.
corrupt()
{
    head -c 4096 /dev/urandom | dd of="$1" bs=4096 seek=$(($2 / 4096)) conv=notrunc,fsync \
        status=none || rk_fail "dd into $1"
}

scrub_case() # LEVEL N CORRUPT_SLOT
{
    local level=$1 n=$2 s=$3 parity=${4:-0} size
    rk_log "=== scrub case $level, $n members, corrupt slot $s"
    rk_members "$n" 17M "s$level-"
    rk_create --level "$level" "${M[@]}"
    CTL="$T/ctl.$level"
    rk_serve --control "$CTL" "${M[@]}"
    size=$(rk_py size "$RK_URI") || rk_fail size
    rk_stamp 1 0 "$size"
    scrub_expect 0 --control "$CTL"
    # Data-area byte 2 MiB + 12 KiB of the slot (the data area starts at 1 MiB).
    corrupt "${M[$s]}" $((3 * MiB + 12 * 1024))
    scrub_expect 1 --control "$CTL"
    mg_status
    [ "$(mg_q "s['last_scrub']['mismatches']")" = 1 ] || rk_fail "status last_scrub: $(cat "$T/st.json")"
    scrub_expect 1 --repair --control "$CTL"
    mg_status
    [ "$(mg_q "s['last_scrub']['repaired']")" = 1 ] || rk_fail "status last_scrub after repair"
    scrub_expect 0 --control "$CTL"
    # Copy levels repair from the first copy (slot order), which the corruption did not touch;
    # parity levels make parity match the data (md semantics), so a corrupted data chunk stays.
    [ "$parity" = 1 ] || rk_verify 0 "$size" 1
    rk_stop
    # Offline, on the member files.
    corrupt "${M[$s]}" $((5 * MiB))
    scrub_expect 1 "${M[@]}"
    scrub_expect 1 --repair "${M[@]}"
    scrub_expect 0 "${M[@]}"
    if [ "$parity" != 1 ]; then
        rk_serve "${M[@]}"
        rk_verify 0 "$size" 1
        rk_stop
    fi
    rm -f "${M[@]}"
}

scrub_case raid1 2 1
scrub_case raid10 3 2
if mg_level_works 5; then
    scrub_case raid5 3 1 1
else
    rk_log "note: raid5 not available in this build; raid5 scrub variant skipped"
fi

# No redundancy: a scrub reads everything and reports no mismatches.
rk_members 2 9M lin
rk_create --level linear "${M[@]}"
scrub_expect 0 "${M[@]}"
echo PASS
