#!/usr/bin/env bash
# Online rebuild rate: a raid5 and a raid1 volume of 4 member files on tmpfs, filled with data and
# served with a control socket; fail a slot and `replace` it onto a fresh file, idle and under fio.
#
# Usage: bench/rebuild-rate.sh RAIDKIT_BINARY
# Environment (defaults in brackets):
#   LEVELS [raid5,raid1]  MEMBERS [4]  MEMBER_SIZE [256M]  CHUNK [64K]  SHM_DIR [/dev/shm]
#   REBUILD_RATE [] MiB/s limit for `replace --rate` (empty: unlimited)
#   LOAD ["--rw=randrw --rwmixread=70 --bs=4k --iodepth=16"] the foreground fio load
#   BASE_RUNTIME [3] s of the load on the healthy volume (the IOPS without a rebuild)
#   WAIT_QUIET [0] s to wait for a 1-minute load average below QUIET_LOAD [1.5] before measuring
#   OUT_DIR [<repo>/bench/out/rebuild-rate-TIME]
# Per level: fill the volume (1M sequential writes), run the load alone for BASE_RUNTIME s, then
# (1) fail slot 1 and replace it with no other I/O, (2) fail slot 2 and replace it while the load
# runs. Rebuild time is the wall time of `raidkit replace --wait` (request to completion), over the
# slot's data size. The load's IOPS during the rebuild come from fio's IOPS log (100 ms buckets
# overlapping the rebuild window). Afterwards a scrub check must find no
# mismatch and, on raid5, the volume must read the same with slot 0 failed (so every stripe is
# reconstructed through the rebuilt members).
set -uo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bench_binary "$@"
REPO=$(cd "$(dirname "$0")/.." && pwd)
LEVELS=${LEVELS:-raid5,raid1}
MEMBERS=${MEMBERS:-4}
MEMBER_SIZE=${MEMBER_SIZE:-256M}
CHUNK=${CHUNK:-64K}
SHM_DIR=${SHM_DIR:-/dev/shm}
REBUILD_RATE=${REBUILD_RATE:-}
LOAD=${LOAD:---rw=randrw --rwmixread=70 --bs=4k --iodepth=16}
BASE_RUNTIME=${BASE_RUNTIME:-3}
WAIT_QUIET=${WAIT_QUIET:-0}
QUIET_LOAD=${QUIET_LOAD:-1.5}
OUT_DIR=${OUT_DIR:-$REPO/bench/out/rebuild-rate-$(date +%Y%m%d-%H%M%S)}
PY=/usr/bin/python3

for t in fio nbdinfo nbdcopy "$PY"; do
    if ! command -v "$t" >/dev/null 2>&1; then
        echo "bench: $t is missing (scripts/install-deps.sh)" >&2
        exit 1
    fi
done
if [ "$MEMBERS" -lt 3 ]; then
    echo "bench: MEMBERS must be at least 3 (slots 0, 1 and 2 are used)" >&2
    exit 2
fi

WORK=$(mktemp -d "$SHM_DIR/rebuild-rate.XXXXXX") || exit 1
mkdir -p "$OUT_DIR" || exit 1
RK_PID=""
FIO_PID=""

# shellcheck disable=SC2317  # runs from the EXIT trap
cleanup() {
    local p
    for p in $FIO_PID $RK_PID; do
        kill -TERM "$p" 2>/dev/null
        wait "$p" 2>/dev/null
    done
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

now() { date +%s.%N; }
die() { log "$*"; [ -n "${SLOG:-}" ] && tail -n 20 "$SLOG" >&2; exit 1; }

# job_state CONTROL SLOT: "STATE RATE DATA_SIZE" of the rebuild job ("running ..." for any other)
job_state() {
    "$RK" status --json --control "$1" 2>/dev/null | "$PY" -c '
import json, sys
d = json.load(sys.stdin)
j = d["job"]
size = d["slots"][int(sys.argv[1])]["data_size"]
if j.get("kind") == "rebuild" and j.get("slot") == int(sys.argv[1]):
    print(j["state"], "%.1f" % j.get("rate_mib_s", 0), size)
else:
    print("pending 0", size)' "$2"
}

# rebuild CONTROL SLOT NEWMEMBER: fail SLOT, `replace --wait` it; prints "SECONDS JOBRATE
# DATA_SIZE T_START T_END"
rebuild() {
    local ctl=$1 slot=$2 new=$3 t0 t1 st rate size
    "$RK" fail --slot "$slot" --control "$ctl" >&2 || return 1
    t0=$(now)
    # shellcheck disable=SC2086
    timeout 600 "$RK" replace --slot "$slot" --with "$new" ${REBUILD_RATE:+--rate $REBUILD_RATE} \
        --wait --control "$ctl" >&2 || return 1
    t1=$(now)
    read -r st rate size <<<"$(job_state "$ctl" "$slot")"
    [ "$st" = "done" ] || { log "rebuild of slot $slot: job state $st"; return 1; }
    echo "$(awk -v a="$t1" -v b="$t0" 'BEGIN { printf "%.3f", a - b }') $rate $size $t0 $t1"
}

fio_iops() { # JSON: total read+write IOPS
    "$PY" - "$1" <<'EOF'
import json, sys
text = open(sys.argv[1]).read()
t = json.loads(text[text.index("{"):])["jobs"][0]
print("%.0f" % (t["read"]["iops"] + t["write"]["iops"]))
EOF
}

wait_quiet
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
RAW=$OUT_DIR/raw.tsv
printf 'level\tphase\tseconds\tdata_bytes\tmibs\tjob_mibs\tfg_iops\tfg_iops_base\n' >"$RAW"
IFS=, read -r -a LVS <<<"$LEVELS"
for lv in "${LVS[@]}"; do
    d=$WORK/$lv
    mkdir -p "$d" || exit 1
    members=()
    for i in $(seq 0 $((MEMBERS - 1))) new1 new2; do
        truncate -s "$MEMBER_SIZE" "$d/m$i" || exit 1
        dd if=/dev/zero of="$d/m$i" bs=1M count=$(($(stat -c %s "$d/m$i") / 1048576)) \
            conv=notrunc status=none || exit 1
        case $i in new*) ;; *) members+=("$d/m$i") ;; esac
    done
    log "$lv: $MEMBERS members + 2 new ones x $MEMBER_SIZE zero-filled on $SHM_DIR"
    "$RK" create --level "$lv" --chunk "$CHUNK" "${members[@]}" >"$OUT_DIR/create-$lv.txt" 2>&1 ||
        { cat "$OUT_DIR/create-$lv.txt" >&2; exit 1; }
    sock=$d/nbd.sock ctl=$d/ctl.sock SLOG=$OUT_DIR/serve-$lv.log
    "$RK" serve --listen "unix:$sock" --control "$ctl" "${members[@]}" 2>"$SLOG" &
    RK_PID=$!
    wait_socket "$RK_PID" "$sock" "$SLOG" || exit 1
    uri="nbd+unix:///?socket=$sock"
    vsize=$(nbdinfo --size "$uri") || exit 1
    fsize=$((vsize / 1048576 * 1048576))

    log "$lv: filling $((vsize / 1048576)) MiB"
    fio --name=fill --ioengine=nbd --uri="$uri" --rw=write --bs=1M --iodepth=8 --size="$fsize" \
        --randseed=42 --output="$OUT_DIR/$lv-fill.txt" >/dev/null 2>&1 || die "$lv: fill failed"

    # shellcheck disable=SC2086  # LOAD is a list of fio options
    fio --name=load --ioengine=nbd --uri="$uri" $LOAD --size="$fsize" --time_based \
        --runtime="$BASE_RUNTIME" --randseed=42 --output-format=json \
        --output="$OUT_DIR/$lv-base.json" >/dev/null 2>&1 || die "$lv: baseline load failed"
    base=$(fio_iops "$OUT_DIR/$lv-base.json") || exit 1
    log "$lv: load alone, healthy: $base IOPS"

    out=$(rebuild "$ctl" 1 "$d/mnew1") || die "$lv: idle rebuild failed"
    read -r secs jrate size _ _ <<<"$out"
    mibs=$(awk -v s="$size" -v t="$secs" 'BEGIN { printf "%.1f", s / 1048576 / t }')
    log "$lv: idle rebuild of slot 1: $((size / 1048576)) MiB in ${secs}s = $mibs MiB/s" \
        "(job reports $jrate)"
    printf '%s\tidle\t%s\t%s\t%s\t%s\t-\t%s\n' "$lv" "$secs" "$size" "$mibs" "$jrate" "$base" \
        >>"$RAW"

    # The load runs until the rebuild ends (SIGINT makes fio stop and write its report).
    flog=$OUT_DIR/$lv-load
    tf=$(now)
    # shellcheck disable=SC2086
    fio --name=load --ioengine=nbd --uri="$uri" $LOAD --size="$fsize" --time_based --runtime=600 \
        --randseed=43 --write_iops_log="$flog" --log_avg_msec=100 --output-format=json \
        --output="$flog.json" >"$flog.err" 2>&1 &
    FIO_PID=$!
    sleep 1
    kill -0 "$FIO_PID" 2>/dev/null || { cat "$flog.err" >&2; die "$lv: load did not start"; }
    out=$(rebuild "$ctl" 2 "$d/mnew2") || die "$lv: rebuild under load failed"
    kill -INT "$FIO_PID"
    wait "$FIO_PID" # fio exits 1 after SIGINT; its report says whether the jobs went well
    FIO_PID=""
    "$PY" -c '
import json, sys
text = open(sys.argv[1]).read()
sys.exit(json.loads(text[text.index("{"):])["jobs"][0]["error"] != 0)' "$flog.json" 2>/dev/null ||
        { cat "$flog.err" >&2; die "$lv: the load failed"; }
    read -r secs jrate size t0 t1 <<<"$out"
    mibs=$(awk -v s="$size" -v t="$secs" 'BEGIN { printf "%.1f", s / 1048576 / t }')
    fg=$("$PY" - "$flog" "$tf" "$t0" "$t1" <<'EOF'
import glob, sys, collections
prefix, tf, t0, t1 = sys.argv[1], *map(float, sys.argv[2:])
lo, hi = (t0 - tf) * 1000, (t1 - tf) * 1000
buckets = collections.defaultdict(float)
for path in glob.glob(prefix + "_iops*.log"):
    for line in open(path):
        f = [x.strip() for x in line.split(",")]
        buckets[int(f[0])] += float(f[1])
inside = [v for t, v in buckets.items() if t > lo and t - 100 < hi]
before = [v for t, v in buckets.items() if t <= lo and t > 200]
m = lambda v: "%.0f" % (sum(v) / len(v)) if v else "-"
print(m(inside), m(before))
EOF
) || exit 1
    read -r fg_in fg_before <<<"$fg"
    log "$lv: rebuild of slot 2 under load: $((size / 1048576)) MiB in ${secs}s = $mibs MiB/s" \
        "(job reports $jrate); load $fg_in IOPS during it, $fg_before degraded before it"
    printf '%s\tload\t%s\t%s\t%s\t%s\t%s\t%s\n' "$lv" "$secs" "$size" "$mibs" "$jrate" "$fg_in" \
        "$base" >>"$RAW"

    # Correctness: parity/mirrors consistent, and (raid5) the same bytes through reconstruction.
    "$RK" scrub --control "$ctl" >"$OUT_DIR/$lv-scrub.txt" 2>&1 || die "$lv: scrub failed"
    grep -q '^scrub finished: 0 mismatches' "$OUT_DIR/$lv-scrub.txt" ||
        { cat "$OUT_DIR/$lv-scrub.txt" >&2; die "$lv: scrub after the rebuilds found mismatches"; }
    if [ "$lv" = raid5 ]; then
        h1=$(nbdcopy "$uri" - | sha256sum) || die "$lv: read back failed"
        "$RK" fail --slot 0 --control "$ctl" >&2 || die "$lv: fail slot 0 refused"
        h2=$(nbdcopy "$uri" - | sha256sum) || die "$lv: degraded read back failed"
        [ "$h1" = "$h2" ] || die "$lv: data differs when read through the rebuilt members"
        log "$lv: scrub clean; degraded read through the rebuilt members matches"
    else
        log "$lv: scrub clean"
    fi
    kill -TERM "$RK_PID"
    wait "$RK_PID" || die "$lv: raidkit serve exited $?"
    RK_PID=""
    log "$lv: server stopped"
done
LOAD_END=$(cut -d' ' -f1-3 /proc/loadavg)

{
    cpu=$(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo)
    echo "online rebuild, $MEMBERS members x $MEMBER_SIZE on $SHM_DIR, chunk $CHUNK," \
        "rate limit ${REBUILD_RATE:-none}"
    echo "date $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores ($cpu), kernel $(uname -r)"
    echo "$("$RK" --version 2>/dev/null), $(fio --version); load: fio $LOAD"
    echo "load average at start $LOAD_START, at end $LOAD_END"
    echo
    printf '%-6s %-22s %8s %10s %10s %12s %12s\n' level rebuild seconds "MiB/s" "job MiB/s" \
        "fg IOPS" "fg IOPS base"
    while IFS=$'\t' read -r lv ph secs _ mibs jr fg base; do
        [ "$lv" = level ] && continue
        if [ "$ph" = idle ]; then ph="no foreground I/O"; else ph="under the fio load"; fi
        printf '%-6s %-22s %8s %10s %10s %12s %12s\n' "$lv" "$ph" "$secs" "$mibs" "$jr" "$fg" \
            "$base"
    done <"$RAW"
    echo
    echo "MiB/s: slot data size / (replace request .. status reports done); job MiB/s: the"
    echo "job's own rate in status --json; fg IOPS: the load during the rebuild; base: the same"
    echo "load alone on the healthy volume"
} | tee "$OUT_DIR/results.txt"
log "raw: $RAW, fio output and server logs: $OUT_DIR"
