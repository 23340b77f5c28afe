#!/usr/bin/env bash
# NBD path benchmark (bench/RESULTS.md "NBD path"): one member file on tmpfs served by `raidkit
# serve` (a one-member linear volume) and by nbdkit's file plugin, side by side with fio (nbd
# engine).
#
# Usage: bench/nbd-vs-nbdkit.sh RAIDKIT_BINARY
# Environment (defaults in brackets):
#   ROUNDS [3]  RUNTIME [10] s per run  RAMP [2] s  FILE_SIZE [1G]  SHM_DIR [/dev/shm]
#   WORKLOADS [randread4k,randwrite4k,seqread1m]  OUT_DIR [<repo>/bench/out/nbd-vs-nbdkit-TIME]
#   RAIDKIT_SERVE_ARGS [] extra `raidkit serve` options   NBDKIT_ARGS [] extra nbdkit options
# Runs alternate raidkit/nbdkit per workload (and swap who goes first every round), so drift in the
# machine hits both equally. Both servers stay up for the whole run; their peak resident memory
# (VmHWM) is read at the end. The target is raidkit/nbdkit >= 1.0 on every workload.
set -uo pipefail

if [ $# -ne 1 ] || [ ! -x "$1" ]; then
    echo "usage: $0 RAIDKIT_BINARY" >&2
    exit 2
fi
RK=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
REPO=$(cd "$(dirname "$0")/.." && pwd)
ROUNDS=${ROUNDS:-3}
RUNTIME=${RUNTIME:-10}
RAMP=${RAMP:-2}
FILE_SIZE=${FILE_SIZE:-1G}
SHM_DIR=${SHM_DIR:-/dev/shm}
WORKLOADS=${WORKLOADS:-randread4k,randwrite4k,seqread1m}
OUT_DIR=${OUT_DIR:-$REPO/bench/out/nbd-vs-nbdkit-$(date +%Y%m%d-%H%M%S)}
PY=/usr/bin/python3

for t in fio nbdkit nbdinfo "$PY"; do
    if ! command -v "$t" >/dev/null 2>&1; then
        echo "bench: $t is missing (scripts/install-deps.sh)" >&2
        exit 1
    fi
done

WORK=$(mktemp -d "$SHM_DIR/nbd-vs-nbdkit.XXXXXX") || exit 1
mkdir -p "$OUT_DIR" || exit 1
MEMBER=$WORK/member.img
RK_SOCK=$WORK/raidkit.sock
KIT_SOCK=$WORK/nbdkit.sock
RK_URI="nbd+unix:///?socket=$RK_SOCK"
KIT_URI="nbd+unix:///?socket=$KIT_SOCK"
RK_PID=""
KIT_PID=""

# shellcheck disable=SC2317  # runs from the EXIT trap
cleanup() {
    local p
    for p in $RK_PID $KIT_PID; do
        kill -TERM "$p" 2>/dev/null
    done
    for p in $RK_PID $KIT_PID; do
        wait "$p" 2>/dev/null
    done
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

hwm_kib() { awk '/^VmHWM:/ { print $2 }' "/proc/$1/status" 2>/dev/null || echo "?"; }

# ---------------------------------------------------------------- set up both servers

log "member: $MEMBER ($FILE_SIZE, zero-filled so no run pays for page allocation)"
truncate -s "$FILE_SIZE" "$MEMBER" || exit 1
dd if=/dev/zero of="$MEMBER" bs=1M count=$(($(stat -c %s "$MEMBER") / 1048576)) conv=notrunc \
    status=none || exit 1
"$RK" create --level linear --size "$FILE_SIZE" "$MEMBER" >"$OUT_DIR/create.txt" 2>&1 || {
    cat "$OUT_DIR/create.txt" >&2
    exit 1
}

# shellcheck disable=SC2086  # extra options are meant to split
"$RK" serve --listen "unix:$RK_SOCK" ${RAIDKIT_SERVE_ARGS:-} "$MEMBER" 2>"$OUT_DIR/raidkit.log" &
RK_PID=$!
wait_socket "$RK_PID" "$RK_SOCK" "$OUT_DIR/raidkit.log" || exit 1
# shellcheck disable=SC2086
nbdkit -U "$KIT_SOCK" --foreground ${NBDKIT_ARGS:-} file "$MEMBER" 2>"$OUT_DIR/nbdkit.log" &
KIT_PID=$!
wait_socket "$KIT_PID" "$KIT_SOCK" "$OUT_DIR/nbdkit.log" || exit 1

# The same bytes of the file for both: raidkit's volume starts at member offset 1 MiB (after the
# superblock area), nbdkit serves the whole file, so nbdkit's runs use --offset=1M.
RK_SIZE=$(nbdinfo --size "$RK_URI") || exit 1
FIO_SIZE=$((RK_SIZE / 1048576))M
log "raidkit export $RK_SIZE bytes, nbdkit export $(nbdinfo --size "$KIT_URI") bytes;" \
    "fio --size=$FIO_SIZE"

# ---------------------------------------------------------------- runs

# workload NAME -> fio options and the direction to report
wl_opts() {
    case $1 in
    randread4k) echo "--rw=randread --bs=4k --iodepth=32 --norandommap" ;;
    randwrite4k) echo "--rw=randwrite --bs=4k --iodepth=32 --norandommap" ;;
    seqread1m) echo "--rw=read --bs=1M --iodepth=8" ;;
    *) return 1 ;;
    esac
}

# Other work on the machine skews single runs; the load average goes into the report.
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
RAW=$OUT_DIR/raw.tsv
printf 'workload\tserver\tround\tiops\tmibs\n' >"$RAW"
IFS=, read -r -a WLS <<<"$WORKLOADS"
for w in "${WLS[@]}"; do
    wl_opts "$w" >/dev/null || { echo "bench: unknown workload $w" >&2; exit 2; }
done
total=$((ROUNDS * ${#WLS[@]} * 2))
n=0
log "$ROUNDS rounds x ${#WLS[@]} workloads x 2 servers, ${RUNTIME}s (+${RAMP}s ramp) each:" \
    "~$((total * (RUNTIME + RAMP + 1) / 60 + 1)) min"
for r in $(seq 1 "$ROUNDS"); do
    for w in "${WLS[@]}"; do
        if [ $((r % 2)) -eq 1 ]; then order="raidkit nbdkit"; else order="nbdkit raidkit"; fi
        for s in $order; do
            n=$((n + 1))
            if [ "$s" = raidkit ]; then uri=$RK_URI off=0; else uri=$KIT_URI off=1M; fi
            json=$OUT_DIR/$w-$s-r$r.json
            # shellcheck disable=SC2046
            fio --name="$w" --ioengine=nbd --uri="$uri" $(wl_opts "$w") --offset="$off" \
                --size="$FIO_SIZE" --time_based --runtime="$RUNTIME" --ramp_time="$RAMP" \
                --randseed=42 --output-format=json --output="$json" >"$json.err" 2>&1 || {
                log "fio failed ($s $w round $r):"
                cat "$json.err" >&2
                exit 1
            }
            line=$("$PY" - "$json" <<'EOF'
import json, sys
text = open(sys.argv[1]).read()  # fio may put warning lines before the JSON
t = json.loads(text[text.index("{"):])["jobs"][0]
d = t["write"] if t["write"]["io_bytes"] > t["read"]["io_bytes"] else t["read"]
print("%.1f\t%.1f" % (d["iops"], d["bw"] / 1024.0))
EOF
) || exit 1
            printf '%s\t%s\t%s\t%s\n' "$w" "$s" "$r" "$line" >>"$RAW"
            log "($n/$total) round $r $w $s: $(cut -f1 <<<"$line") IOPS $(cut -f2 <<<"$line") MiB/s"
        done
    done
done

LOAD_END=$(cut -d' ' -f1-3 /proc/loadavg)
RK_HWM=$(hwm_kib "$RK_PID")
KIT_HWM=$(hwm_kib "$KIT_PID")

# ---------------------------------------------------------------- report

{
    cpu=$(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo)
    echo "raidkit serve vs nbdkit file plugin, same ${FILE_SIZE} file on $SHM_DIR, fio nbd engine"
    echo "date $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores ($cpu), kernel $(uname -r)"
    echo "$("$RK" --version 2>/dev/null), $(fio --version), $(nbdkit --version)"
    echo "load average at start $LOAD_START, at end $LOAD_END (other work competes for the cores)"
    echo "$ROUNDS rounds x ${RUNTIME}s (+${RAMP}s ramp) per server and workload, alternating;" \
        "mean (min..max) of rounds"
    echo
    "$PY" - "$RAW" "$RK_HWM" "$KIT_HWM" <<'EOF'
import sys, collections
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])][1:]
data = collections.OrderedDict()
for w, s, r, iops, mibs in rows:
    data.setdefault(w, {}).setdefault(s, []).append((float(iops), float(mibs)))
desc = {"randread4k": "4K rand read  qd32", "randwrite4k": "4K rand write qd32",
        "seqread1m": "1M seq read   qd8"}
def mean(v): return sum(v) / len(v)
print("%-19s %22s %22s %7s  %s" % ("workload", "raidkit IOPS  MiB/s", "nbdkit IOPS  MiB/s",
                                   "ratio", "raidkit IOPS range"))
worst = None
for w, by in data.items():
    rk, kit = by["raidkit"], by["nbdkit"]
    ri, rm = mean([x[0] for x in rk]), mean([x[1] for x in rk])
    ki, km = mean([x[0] for x in kit]), mean([x[1] for x in kit])
    ratio = ri / ki if ki else float("nan")
    worst = ratio if worst is None else min(worst, ratio)
    print("%-19s %12.0f %9.1f %12.0f %9.1f %6.2fx  %.0f..%.0f (nbdkit %.0f..%.0f)" % (
        desc.get(w, w), ri, rm, ki, km, ratio, min(x[0] for x in rk), max(x[0] for x in rk),
        min(x[0] for x in kit), max(x[0] for x in kit)))
print()
def mib(k):
    return "%.1f MiB" % (int(k) / 1024.0) if k.isdigit() else "?"
print("peak resident memory (VmHWM): raidkit %s, nbdkit %s" % (mib(sys.argv[2]), mib(sys.argv[3])))
print("target raidkit/nbdkit >= 1.0 on every workload: %s (worst %.2fx)" % (
    "MET" if worst is not None and worst >= 1.0 else "NOT MET", worst or 0))
EOF
} | tee "$OUT_DIR/results.txt"
log "raw trials: $RAW, fio JSON and server logs: $OUT_DIR"
