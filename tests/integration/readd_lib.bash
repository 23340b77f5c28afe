# Helpers shared by the re-add tests (readd_*.sh, C18; sourced after common.sh and
# manage_lib.bash): re-add through the CLI, the bytes a finished job resynced, sparse stamps.
# shellcheck disable=SC2034

# ra_readd SLOT MEMBER [ARGS...]: `raidkit re-add --slot SLOT MEMBER ARGS` (ARGS: --control
# $CTL --wait, or the array's members); stdout+stderr into $OUT; fails the test on error.
ra_readd()
{
    local slot=$1 member=$2
    shift 2
    OUT=$(timeout 120 "$RAIDKIT" re-add --slot "$slot" "$member" "$@" 2>&1) ||
        rk_fail "raidkit re-add --slot $slot $member $*: $OUT"
    rk_log "re-add slot $slot: $OUT"
}

# ra_readd_refused SLOT MEMBER PATTERN [ARGS...]: the re-add must fail with an error line
# matching PATTERN (grep -E) and leave MEMBER byte-identical.
ra_readd_refused()
{
    local slot=$1 member=$2 pat=$3 before after
    shift 3
    before=$(sha256sum "$member" | cut -d' ' -f1)
    if OUT=$(timeout 60 "$RAIDKIT" re-add --slot "$slot" "$member" "$@" 2>&1); then
        rk_fail "re-add --slot $slot $member was accepted: $OUT"
    fi
    echo "$OUT" | grep -Eq "$pat" || rk_fail "re-add --slot $slot $member: want /$pat/, got: $OUT"
    [ "$(echo "$OUT" | grep -c .)" -eq 1 ] || rk_fail "re-add error is not one line: $OUT"
    after=$(sha256sum "$member" | cut -d' ' -f1)
    [ "$before" = "$after" ] || rk_fail "refused re-add wrote to $member"
    rk_log "refused as expected: $OUT"
}

# ra_job_bytes: resynced_bytes of the last job in the status (mg_status first).
ra_job_bytes() { mg_q "int(s['job']['resynced_bytes'])"; }

# ra_sparse GEN STEP LEN SIZE: stamp gen GEN (rk.py's stamps) over LEN bytes every STEP bytes
# of [0, SIZE) in one connection, then FLUSH; appends the "off len gen" triples to RA_RANGES
# and records in RA_GEN_AT which gen each STEP-sized slice now holds first (ra_verify).
ra_sparse()
{
    "$RK_PY" - "$T/rk.py" "$RK_URI" "$@" <<'PY' || rk_fail "sparse stamps gen $1 failed"
import sys
exec(open(sys.argv[1]).read().replace("\nmain()\n", "\n"))
uri, gen, step, ln, size = sys.argv[2], *map(int, sys.argv[3:7])
h = connect(uri)
for off in range(0, size, step):
    h.pwrite(stamps(off, min(ln, size - off), gen), off)
h.flush()
h.shutdown()
PY
}

# ra_verify BASE GEN STEP LEN SIZE: every byte of [0, SIZE) holds the stamps of gen GEN where
# ra_sparse GEN STEP LEN SIZE wrote, gen BASE everywhere else.
ra_verify()
{
    local base=$1 gen=$2 step=$3 len=$4 size=$5 off end args=()
    for ((off = 0; off < size; off += step)); do
        end=$((off + step < size ? off + step : size))
        args+=("$off" $((len < end - off ? len : end - off)) "$gen")
        [ $((off + len)) -lt "$end" ] && args+=($((off + len)) $((end - off - len)) "$base")
    done
    rk_verify "${args[@]}"
}
