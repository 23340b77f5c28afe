# Helpers of the cache integration tests (C09-C11, cache_fio_modes, torture_cache_writeback),
# sourced after tests/lib/common.sh and tests/integration/manage_lib.bash.
#   ca_create CACHEDEV SIZE BLOCK MODE MEMBER...  a cache device for the array of MEMBER
#   ca_mode MODE / ca_detach / ca_attach DEV / ca_fault SPEC   online, on $CTL
#   ca_q PYEXPR       a python expression over the last status's cache object `c` (mg_status)
#   ca_expect_eio OFF LEN GEN   reading the stamped range must fail with EIO
#   ca_dirty_fails GEN / ca_restart_detach DEV GEN MEMBER...   the dirty cache-failure case
# shellcheck disable=SC2034

# ca_create CACHEDEV SIZE BLOCK MODE MEMBER...: a SIZE file, `raidkit cache create` (binds the
# array to it).
ca_create()
{
    local dev=$1 size=$2 block=$3 mode=$4 out
    shift 4
    rm -f "$dev"
    truncate -s "$size" "$dev" || rk_fail "truncate $dev"
    out=$("$RAIDKIT" cache create --mode "$mode" --block "$block" "$dev" "$@" 2>&1) ||
        rk_fail "raidkit cache create $dev: $out"
}

# ca_cmd SUBCOMMAND ARGS...: `raidkit cache SUBCOMMAND ARGS --control $CTL`, failing the test on
# error.
ca_cmd()
{
    "$RAIDKIT" cache "$@" --control "$CTL" >/dev/null 2>"$T/ca.err" ||
        rk_fail "raidkit cache $*: $(cat "$T/ca.err")"
}
ca_mode() { ca_cmd mode "$1"; }
ca_detach() { ca_cmd detach; }
ca_attach() { ca_cmd attach "$1"; }
ca_fault() { ca_cmd fault "$1"; }

# ca_q PYEXPR: evaluate over `c`, the cache object of a fresh status.
ca_q()
{
    mg_status
    "$RK_PY" -c 'import json,sys; c=json.load(open(sys.argv[1]))["cache"]; print(eval(sys.argv[2]))' \
        "$T/st.json" "$1"
}

# ca_wait PYEXPR TIMEOUT_S: poll until the expression over `c` is True.
ca_wait()
{
    local i
    for ((i = 0; i < $2 * 10; i++)); do
        [ "$(ca_q "$1")" = True ] && return 0
        sleep 0.1
    done
    rk_fail "cache status never satisfied '$1' within $2 s: $(cat "$T/st.json")"
}

# ca_expect_eio OFF LEN GEN: reading the range must fail with an I/O error (never old data).
ca_expect_eio()
{
    if rk_py verify "$RK_URI" "$1" "$2" "$3" 2>"$T/eio.err"; then
        rk_fail "reading [$1 +$2) succeeded; it must fail with EIO"
    fi
    grep -qi "input/output error" "$T/eio.err" ||
        rk_fail "reading [$1 +$2) failed without EIO: $(cat "$T/eio.err")"
}

# ca_dirty_fails CLEAN_GEN: the "cache device fails with dirty data" case shared by C09 and
# rbd_cache_writeback (a writeback cache served with --debug-fault cache: and --control $CTL,
# [0, 2M) stamped with generation CLEAN_GEN and clean): generation 3 written over [8M, 12M)
# stays dirty in the cache; every cache-member I/O fails: reads of the dirty range fail with EIO
# (never the backing's older data), [0, 2M) still reads CLEAN_GEN, the cache says failed; the
# fault cleared, the cache recovers by itself and the dirty data reads back exactly.
ca_dirty_fails()
{
    rk_stamp 3 $((8 * MiB)) $((4 * MiB))
    [ "$(ca_q "c['dirty_bytes'] >= 4 * 1024 * 1024")" = True ] ||
        rk_fail "4 MiB not dirty: $(cat "$T/st.json")"
    ca_fault fail-all
    ca_expect_eio $((8 * MiB)) $((4 * MiB)) 3
    ca_expect_eio $((10 * MiB)) 4096 3
    rk_verify 0 $((2 * MiB)) "$1" # clean/uncached ranges still read
    [ "$(ca_q "c['state']")" = failed ] || rk_fail "cache state not failed: $(cat "$T/st.json")"
    ca_fault clear
    ca_wait "c['state'] == 'ok'" 10
    rk_verify $((8 * MiB)) $((4 * MiB)) 3 0 $((2 * MiB)) "$1"
}

# ca_restart_detach CACHEDEV CLEAN_GEN MEMBER...: after ca_dirty_fails, restart the server
# through CACHEDEV (the dirty data survives), then detach the cache online (everything written
# back to the array); the server keeps running uncached.
ca_restart_detach()
{
    local c=$1 gen=$2
    shift 2
    rk_stop
    rk_serve --control "$CTL" --cache "$c" "$@"
    rk_verify $((8 * MiB)) $((4 * MiB)) 3 0 $((2 * MiB)) "$gen"
    ca_detach
    [ "$(ca_q "c['state']")" = detached ] || rk_fail "not detached: $(cat "$T/st.json")"
}

# ca_py: the cache tests' NBD client ($T/ca.py): fill URI OFF LEN BYTE (writes then flushes),
# check URI OFF LEN BYTE (exit 1 naming the first differing offset), c11 URI RECORD N (write block
# i, FLUSH, append i to RECORD with fsync, for i < N, until an error), c11check URI RECORD.
ca_write_py()
{
    cat >"$T/ca.py" <<'PY'
import os, sys
import nbd

def blk(i):
    return (b"C11 block %08d " % i) * 128 * 2

def main():
    cmd, uri = sys.argv[1], sys.argv[2]
    h = nbd.NBD()
    h.connect_uri(uri)
    if cmd in ("fill", "check"):
        off, length, byte = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5], 0)
        step = 1 << 20
        for o in range(off, off + length, step):
            n = min(step, off + length - o)
            if cmd == "fill":
                h.pwrite(bytes([byte]) * n, o)
            else:
                got = h.pread(n, o)
                if got != bytes([byte]) * n:
                    bad = next(k for k in range(n) if got[k] != byte)
                    sys.exit("offset %d: 0x%02x, want 0x%02x" % (o + bad, got[bad], byte))
        if cmd == "fill":
            h.flush()
    elif cmd == "c11":
        rec, n = sys.argv[3], int(sys.argv[4])
        fd = os.open(rec, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            for i in range(n):
                h.pwrite(blk(i)[:4096], i * 4096)
                h.flush()
                os.write(fd, b"%d\n" % i)
                os.fsync(fd)
        except nbd.Error:
            pass
    elif cmd == "c11check":
        recorded = [int(x) for x in open(sys.argv[3]).read().split()]
        bad = [i for i in recorded if h.pread(4096, i * 4096) != blk(i)[:4096]]
        if bad:
            sys.exit("%d of %d recorded blocks lost, first %s" % (len(bad), len(recorded), bad[:5]))
        print("%d recorded blocks all read back" % len(recorded))
    h.shutdown()

main()
PY
}
ca_py() { "$RK_PY" "$T/ca.py" "$@"; }

# ca_cut_client CA_PY_ARGS...: run the client (ca_py ARGS) in the background until the power cut
# of the running server is complete, then SIGKILL the server and stop the client.
ca_cut_client()
{
    timeout 60 "$RK_PY" "$T/ca.py" "$@" >/dev/null 2>&1 &
    local client=$!
    ca_kill_after_cut
    kill "$client" 2>/dev/null
    wait "$client" 2>/dev/null
}

# ca_kill_after_cut: SIGKILL the server (and its timeout wrapper) once its log says the power cut
# is complete (10 s at most).
ca_kill_after_cut()
{
    local i
    for ((i = 0; i < 200; i++)); do
        grep -q "power cut complete" "$RK_LOG" && break
        sleep 0.05
    done
    grep -q "power cut complete" "$RK_LOG" || rk_fail "no power cut happened: $(tail -n 5 "$RK_LOG")"
    torture_kill
}
