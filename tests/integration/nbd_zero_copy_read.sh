#!/bin/bash
# Zero-copy READ replies (issue 13 item 5; docs/ARCHITECTURE.md "Zero-copy reads"): fio
# --verify=crc32c over NBD with reads of 64K..1M that the server sends member -> pipe -> socket
# (splice), on linear, raid1 and raid5 (members in $T: O_DIRECT where the file system allows),
# checked through the server's debug count of spliced replies. Then the fallback: a raid1 and a
# raid5 member is failed (`raidkit fail`): reads of the failed slot's chunks take the usual path
# (raid5: parity recovery) and everything still verifies; RAIDKIT_NBD_SPLICE=0 (the default) is off.
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/integration/manage_lib.bash"
rk_init
rk_need fio
export RAIDKIT_NBD_SPLICE=65536 # off by default (docs/CLI.md)

# spliced: READ replies sent by splice, summed over the connections that ended so far.
spliced() {
    grep -o "[0-9]* READ replies of this connection went out by splice" "$RK_LOG" |
        awk '{ n += $1 } END { print n + 0 }'
}

# pass NAME BS [fio options]: write with verify, then a separate read-only verify pass.
pass() {
    local name=$1 bs=$2
    shift 2
    rk_fio "$name-w" --rw=write --bs="$bs" --iodepth=8 --size=12M --verify=crc32c \
        --do_verify=1 --verify_fatal=1 "$@"
    rk_fio "$name-v" --rw=write --bs="$bs" --iodepth=8 --size=12M --verify=crc32c \
        --verify_only --verify_fatal=1 "$@"
}

# linear and raid1: 1M and 64K reads, qd 8 and 1.
for level in linear raid1; do
    rk_members 2 20M
    rk_create --force --level "$level" "${M[@]}"
    CTL="$T/ctl.$level"
    rk_serve -v --control "$CTL" "${M[@]}"
    pass "$level-1m" 1M
    pass "$level-64k" 64k --iodepth=1 --offset=4M
    n=$(spliced)
    [ "$n" -gt 0 ] || rk_fail "$level: no READ reply went out by splice: $(grep nbd "$RK_LOG")"
    rk_log "$level: $n READ replies by splice"
    if [ "$level" = raid1 ]; then
        mg_fail 0 # reads now from slot 1 only: still one extent, still spliced
        pass "$level-degraded" 128k --offset=2M
        [ "$(spliced)" -gt "$n" ] || rk_fail "raid1 degraded: no splice from the live copy"
    fi
    rk_stop
done

# raid5 (chunk 256K): 128K reads lie in one data chunk; after slot 1 fails its chunks are
# recovered from parity on the usual path, the others are still spliced.
rk_members 3 20M
rk_create --force --level raid5 --chunk 256K "${M[@]}"
CTL="$T/ctl.raid5"
rk_serve -v --control "$CTL" "${M[@]}"
pass raid5 128k
n=$(spliced)
[ "$n" -gt 0 ] || rk_fail "raid5: no READ reply went out by splice: $(grep nbd "$RK_LOG")"
mg_fail 1
mg_status
[ "$(mg_slot_state 1)" = failed ] || rk_fail "raid5: slot 1 did not fail: $(cat "$T/st.json")"
rk_fio raid5-degraded-v --rw=write --bs=128k --iodepth=8 --size=12M --verify=crc32c \
    --verify_only --verify_fatal=1
[ "$(spliced)" -gt "$n" ] || rk_fail "raid5 degraded: no splice of the live data chunks"
rk_stop

# Off: the same reads, none spliced.
RAIDKIT_NBD_SPLICE=0 rk_serve -v "${M[@]}" --degraded
rk_fio raid5-off-v --rw=write --bs=128k --iodepth=8 --size=12M --verify=crc32c \
    --verify_only --verify_fatal=1
[ "$(spliced)" -eq 0 ] || rk_fail "RAIDKIT_NBD_SPLICE=0: replies still spliced"
rk_stop
rk_no_sanitizer "$RK_LOG" "raidkit serve"
echo "PASS: zero-copy READ replies verify on linear, raid1, raid5, also degraded, and turn off"
