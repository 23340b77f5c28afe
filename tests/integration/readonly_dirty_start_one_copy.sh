#!/bin/bash
# Read-only dirty start reads one copy (issue 8 part 3, U23): `serve --read-only` of a raid1 /
# raid10 array that crashed runs no resync (it writes nothing), yet two reads of a region the
# crash may have left different on the copies must never disagree. The copies are made to
# differ in the region written before the SIGKILL (one copy's member file altered at the data
# offset); every read of that block through NBD must return the first copy (slot order), and
# `status --test` must say "needs resync" (exit 4). With the write-intent bitmap only its marked
# regions count as unsynced; without one (--bitmap none) the whole array does. A writable start
# then resyncs from that copy, and the array is healthy again (exit 0).
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/integration/manage_lib.bash"
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/torture_lib.sh" # torture_kill
rk_init
export PATH=/usr/bin:$PATH # nbdsh needs Debian's python3
rk_need nbdsh

CTL="$T/ctl"
OFF=$((4 * MiB)) # array offset of the written block (raid1: member data offset too)
DOFF=$((1 * MiB)) # data offset of the members (info --json data_offset)

# reads_of OFF: read 4 KiB at OFF 40 times on one connection; print the distinct sha256 sums.
reads_of()
{
    nbdsh -u "$RK_URI" -c "
import hashlib
print('\n'.join(sorted({hashlib.sha256(h.pread(4096, $1)).hexdigest() for _ in range(40)})))
" || rk_fail "nbdsh reads at $1"
}

# status_test: exit status of `raidkit status --test`.
status_test()
{
    "$RAIDKIT" status --test --control "$CTL" >"$T/st.txt" 2>&1
    echo $?
}

# case LEVEL NMEMBERS ALTER_SLOT ALTER_MEMBER_OFF CREATE_OPTS...: crash after a write at OFF,
# alter the copy on ALTER_SLOT (member data-area offset ALTER_MEMBER_OFF), read-only start.
ro_case()
{
    local level=$1 n=$2 slot=$3 moff=$4
    shift 4
    rk_log "=== $level $* : read-only dirty start"
    rk_members "$n" 17M
    rk_create --level "$level" "$@" "${M[@]}"
    [ "$("$RAIDKIT" info --json "${M[0]}" | "$RK_PY" -c 'import json,sys; print(json.load(sys.stdin)["array"]["data_offset"])')" = "$DOFF" ] ||
        rk_fail "data offset is not $DOFF"
    rk_serve --control "$CTL" "${M[@]}"
    rk_stamp 1 "$OFF" 65536
    torture_kill
    dd if=/dev/urandom of="${M[$slot]}" bs=64K count=1 seek=$(((DOFF + moff) / 65536)) \
        conv=notrunc status=none || rk_fail dd
    # The block's first copy is slot 0's at the same member offset: it holds the stamps.
    [ "$(dd if="${M[0]}" bs=64K count=1 skip=$(((DOFF + moff) / 65536)) status=none | sha256sum | cut -d' ' -f1)" = \
        "$(rk_py stampsha 1 "$OFF" 65536)" ] || rk_fail "$level: slot 0 does not hold the block at member offset $moff"
    rk_serve --read-only --control "$CTL" "${M[@]}"
    local sums
    sums=$(reads_of "$OFF")
    [ "$(echo "$sums" | wc -l)" = 1 ] || rk_fail "$level read-only: 40 reads of one block disagree: $sums"
    rk_verify "$OFF" 65536 1 # the first copy (slot 0), which a resync copies from
    local rc
    rc=$(status_test)
    [ "$rc" = 4 ] || rk_fail "$level read-only: status --test exit $rc, want 4 (needs resync): $(cat "$T/st.txt")"
    "$RAIDKIT" status --control "$CTL" >"$T/st.txt" 2>&1
    grep -q "needs resync" "$T/st.txt" || rk_fail "status does not say 'needs resync': $(cat "$T/st.txt")"
    mg_status
    rk_log "$level read-only: bitmap $(mg_q "s['bitmap']")"
    rk_stop
    rk_log "=== $level: writable start resyncs from the first copy"
    rk_serve --control "$CTL" "${M[@]}"
    mg_wait_job 60
    rk_verify "$OFF" 65536 1
    rc=$(status_test)
    [ "$rc" = 0 ] || rk_fail "$level after the resync: status --test exit $rc, want 0: $(cat "$T/st.txt")"
    rk_stop
}

# raid1: slot 1 holds the block at the same data offset.
ro_case raid1 2 1 "$OFF"
# raid10 (4 members, 2 copies, 64 KiB chunks): array chunk 64 of [0..] sits on slots 0 and 1
# at member offset 2 MiB; slot 1 is the second copy.
ro_case raid10 4 1 $((OFF / 2))
# Without a bitmap the whole array is unsynced.
ro_case raid1 2 1 "$OFF" --bitmap none
echo "PASS: a read-only dirty start reads unsynced regions from one copy and says needs resync"
