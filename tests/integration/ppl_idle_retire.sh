#!/bin/bash
# ppl_idle_retire (U24): partial parity log entries of writes that no client FLUSH followed
# retire once their regions are idle: the bitmap cleaner's member flush runs inside the level's
# flush hooks (docs/ARCHITECTURE.md "Durability"). raid5 (3 members) and raid6 (4): writes
# without a flush that each modify two data chunks of a stripe, then
#  - SIGKILL right after them, one member (raid6: two) removed: the degraded start without --force is still
#    refused (the live entries cannot prove the stripes whose missing chunk they modified);
#  - the same writes, then idle past RAIDKIT_BITMAP_IDLE_MS (every bitmap bit cleared), SIGKILL,
#    the same members removed: the degraded start without --force succeeds and every byte reads
#    back (gen 2 where written, gen 1 elsewhere).
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/integration/manage_lib.bash"
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/torture_lib.sh" # torture_kill
# Log entries without per-4K digests: with them the replay may prove these stripes by itself
# (docs/FORMAT.md "Digests"), and this test is about retiring entries, not proving them.
export RAIDKIT_PPL_HASH=0
rk_init
rk_need_libnbd

CTL="$T/ctl"
CHUNK=$((64 * 1024))

# setup LEVEL N: N members of 1 MiB metadata + 1 MiB data, chunk 64K, gen 1 everywhere, clean stop.
setup()
{
    rk_members "$2" 2M
    rk_create --level "$1" --chunk 64K "${M[@]}"
    SIZE=$(rk_array_size "${M[@]}") || exit 1
    ND=$(($2 - ${3:-1}))
    rk_serve "${M[@]}"
    rk_stamp 1 0 "$SIZE"
    rk_stop
}

# write_noflush ND: gen 2 over [4K, 64K + 8K) of each of stripes 0..7: columns [4K, 8K) of its
# first two data chunks both modified, a partial-stripe write (live log entries); no FLUSH, no FUA.
write_noflush()
{
    "$RK_PY" - "$RK_URI" "$T/rk.py" "$1" "$CHUNK" <<'PY' || rk_fail "writes without flush failed"
import sys
src = open(sys.argv[2]).read().replace("\nmain()\n", "\n")
ns = {}
exec(compile(src, sys.argv[2], "exec"), ns)
h = ns["connect"](sys.argv[1])
nd, chunk = int(sys.argv[3]), int(sys.argv[4])
for s in range(8):
    off = s * nd * chunk + 4096
    h.pwrite(ns["stamps"](off, chunk + 4096, 2), off)
h.shutdown()
PY
}

# verify ND: gen 2 where write_noflush wrote, gen 1 everywhere else.
verify()
{
    local nd=$1 s=0 prev=0 off
    while [ "$s" -lt 8 ]; do
        off=$((s * nd * CHUNK + 4096))
        rk_verify "$prev" $((off - prev)) 1
        rk_verify "$off" $((CHUNK + 4096)) 2
        prev=$((off + CHUNK + 4096))
        s=$((s + 1))
    done
    rk_verify "$prev" $((SIZE - prev)) 1
}

# away: move the members of the slots in GONE away and set REST to the others.
away()
{
    local i
    REST=()
    for i in "${!M[@]}"; do
        if [[ " $GONE " == *" $i "* ]]; then
            mv "${M[$i]}" "$T/away.$i"
        else
            REST+=("${M[$i]}")
        fi
    done
}

# raid6 with one member gone proves these stripes from Q; with two gone it cannot.
for spec in "raid5 3 1 1" "raid6 4 2 1,2"; do
    read -r level n np gone <<<"$spec"
    GONE=${gone//,/ } # slots whose data chunks the writes modified in most stripes

    rk_log "=== $level: SIGKILL right after the writes: degraded start still refused"
    setup "$level" "$n" "$np"
    export RAIDKIT_BITMAP_IDLE_MS=600000 # nothing turns idle during this part
    rk_serve "${M[@]}"
    write_noflush "$ND"
    torture_kill
    away
    rk_serve_refused "partial parity log cannot make every stripe consistent" --degraded \
        "${REST[@]}" >/dev/null

    rk_log "=== $level: the same writes, idle past the idle time, SIGKILL: degraded start works"
    setup "$level" "$n" "$np"
    # Long enough that the status read after the writes (a Python start, slow under the
    # sanitizers and a loaded machine) still sees the bits the writes set: at 300 ms the
    # cleaner had cleared them first in a CI run.
    export RAIDKIT_BITMAP_IDLE_MS=2000
    rk_serve --control "$CTL" "${M[@]}"
    write_noflush "$ND"
    mg_status
    [ "$(mg_q "s['bitmap']['set']")" -ge 1 ] || rk_fail "no bitmap bit set after the writes: $(cat "$T/st.json")"
    for _ in $(seq 150); do
        mg_status
        [ "$(mg_q "s['bitmap']['set']")" = 0 ] && break
        sleep 0.2
    done
    [ "$(mg_q "s['bitmap']['set']")" = 0 ] || rk_fail "the idle regions' bits were never cleared: $(cat "$T/st.json")"
    torture_kill
    unset RAIDKIT_BITMAP_IDLE_MS
    away
    rk_serve --degraded "${REST[@]}"
    grep -q "not shut down cleanly" "$RK_LOG" || rk_fail "the start was not dirty: $(cat "$RK_LOG")"
    verify "$ND"
    rk_stop
    rm -f "$T"/away.*
done
echo "PASS: idle writes retire their log entries; a dirty degraded start then needs no --force"
