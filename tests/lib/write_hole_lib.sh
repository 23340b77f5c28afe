# shellcheck shell=bash
# Field case C01 (write hole, dirty + degraded), shared by C01_write_hole_raid5.sh and
# C01_write_hole_raid6.sh; sourced after tests/lib/common.sh, tests/lib/torture_lib.sh and
# rk_init. The cut: a 4 KiB gen-2 write at array offset 0 reaches the data member, then the
# parity members lose power before their parity write (fault member cut-after=3: the log head
# written at start, the write-intent bitmap area of the region (written before any data write
# into it), the partial parity log entry; then the parity write is the cut).

# wh_setup LEVEL N [CREATE_OPTS...]: N members of 1 MiB metadata + 1 MiB data, chunk 64K,
# stamped with gen 1 everywhere and stopped cleanly (the FLUSH). Sets WH_SIZE.
wh_setup()
{
    local level=$1 n=$2
    shift 2
    rk_members "$n" 2M
    rk_create --level "$level" --chunk 64K "$@" "${M[@]}"
    WH_SIZE=$(rk_array_size "${M[@]}") || exit 1
    rk_serve "${M[@]}"
    rk_stamp 1 0 "$WH_SIZE"
    rk_stop
}

# wh_cut DATA_SLOT SERVE_OPTS...: serve with the faults in SERVE_OPTS, write gen 2 over
# [0, 4K) (it never completes: on-cut=hang), wait for the cut, SIGKILL the server, check that
# the data member holds the gen-2 block (the case's "after the m0 write"), and keep the
# post-cut images in $T/cut.I.
wh_cut()
{
    local slot=$1 i
    shift
    rk_serve "$@" "${M[@]}"
    rk_py stamp "$RK_URI" 2 0 4096 >/dev/null 2>&1 &
    local client=$!
    for i in $(seq 100); do
        grep -q "power cut complete" "$RK_LOG" && break
        sleep 0.1
    done
    grep -q "power cut complete" "$RK_LOG" || rk_fail "no power cut: $(cat "$RK_LOG")"
    sleep 0.3 # the data member's write runs beside the parity write that hangs
    torture_kill
    kill -KILL "$client" 2>/dev/null
    wait "$client" 2>/dev/null
    "$RK_PY" - "${M[$slot]}" "$T/rk.py" <<'PY' || rk_fail "the data member does not hold gen 2"
import sys
src = open(sys.argv[2]).read().replace("\nmain()\n", "\n")
ns = {}
exec(compile(src, sys.argv[2], "exec"), ns)
with open(sys.argv[1], "rb") as f:
    f.seek(1 << 20)
    if f.read(4096) != ns["stamps"](0, 4096, 2):
        sys.exit("data member: offset 0 of the data area is not the gen-2 block")
PY
    for i in "${!M[@]}"; do
        cp --sparse=always "${M[$i]}" "$T/cut.$i"
    done
}

# wh_restore: put the post-cut images back (all members present again).
wh_restore()
{
    local i
    for i in "${!M[@]}"; do
        cp --sparse=always "$T/cut.$i" "${M[$i]}"
    done
}

# wh_check: through the running server, [64K, 128K) (never written) holds gen-1 stamps and
# [0, 4K) holds all of gen 1 or all of gen 2, never a mix or XOR garbage.
wh_check()
{
    rk_verify $((64 * 1024)) $((64 * 1024)) 1
    "$RK_PY" - "$RK_URI" "$T/rk.py" <<'PY' || rk_fail "offset 0 holds neither gen 1 nor gen 2"
import sys, nbd
src = open(sys.argv[2]).read().replace("\nmain()\n", "\n")
ns = {}
exec(compile(src, sys.argv[2], "exec"), ns)
h = nbd.NBD()
h.connect_uri(sys.argv[1])
got = h.pread(4096, 0)
h.shutdown()
if got not in (ns["stamps"](0, 4096, 1), ns["stamps"](0, 4096, 2)):
    sys.exit("offset 0: %s" % ns["describe"](got[:512]))
PY
}

# wh_scrub_clean: an offline scrub of all members reports 0 mismatches.
wh_scrub_clean()
{
    local out
    out=$(timeout 60 "$RAIDKIT" scrub "${M[@]}" 2>"$T/scrub.err") ||
        rk_fail "raidkit scrub: $(cat "$T/scrub.err")"
    echo "$out" | grep -q "^scrub finished: 0 mismatches" || rk_fail "scrub after the cut: $out"
    rk_log "scrub: $out"
}
