#!/usr/bin/env bash
# NBD path benchmark (bench/RESULTS.md "NBD path"): one member file on tmpfs served by `raidkit
# serve` (a one-member linear volume), by nbdkit's file plugin and by qemu-nbd, side by side with
# fio (nbd engine), optionally beside a controlled crowd of CPU-burning processes.
#
# Usage: bench/nbd-vs-nbdkit.sh [--crowd N] RAIDKIT_BINARY
#   --crowd N   start N busy-loop processes (1..64) for the whole run, so the servers compete for
#               the cores in a reproducible way (the report says so); they are killed at exit
# Environment (defaults in brackets):
#   ROUNDS [3]  RUNTIME [10] s per run  RAMP [2] s  FILE_SIZE [1G]  SHM_DIR [/dev/shm]
#   WORKLOADS [randread4k,randwrite4k,seqread1m,seqwrite1m,qd1read4k,conn4write4k]
#   SERVERS [raidkit,nbdkit,qemu-nbd] (qemu-nbd is left out when missing)
#   OUT_DIR [<repo>/bench/out/nbd-vs-nbdkit-TIME]
#   RAIDKIT_SERVE_ARGS [] extra `raidkit serve` options   NBDKIT_ARGS [] extra nbdkit options
#   QEMU_NBD_ARGS [] extra qemu-nbd options
#   RAIDKIT_OLD [] a second raidkit binary (an older build) run as the peer "rk-old" in the same
#               rotation, on its own copy of the member file (raidkit locks its members)
#   RK_OLD_ENV [] environment assignments for rk-old only, e.g. RK_OLD_ENV=RAIDKIT_NBD_INLINE=0
#               with RAIDKIT_OLD set to the same binary: zero-copy reads off vs on in one run
#   More workloads (not in the default list): randread16k, qd1read16k (16K random reads at qd32
#   and qd1), read1mqd32, qd1read1m (1M sequential reads at qd32 and qd1)
# Runs rotate the servers per workload (who goes first changes every round), so drift in the
# machine hits all equally. The servers stay up for the whole run; their CPU time (utime+stime
# of /proc/PID/stat) is read around every fio run and divided by the I/Os of the run (IOPS x
# (runtime + ramp)): server CPU per I/O. Peak resident memory (VmHWM) is read at the end.
# Target (issue 11): raidkit/nbdkit >= 1.2 on every workload, quiet and with --crowd 4.
set -uo pipefail

CROWD=0
if [ "${1:-}" = --crowd ]; then
    CROWD=${2:-}
    shift 2
    if ! [[ "$CROWD" =~ ^[0-9]+$ ]] || [ "$CROWD" -lt 1 ] || [ "$CROWD" -gt 64 ]; then
        echo "bench: bad --crowd '$CROWD' (1..64)" >&2
        exit 2
    fi
fi
if [ $# -ne 1 ] || [ ! -x "$1" ]; then
    echo "usage: $0 [--crowd N] RAIDKIT_BINARY" >&2
    exit 2
fi
RK=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
REPO=$(cd "$(dirname "$0")/.." && pwd)
ROUNDS=${ROUNDS:-3}
RUNTIME=${RUNTIME:-10}
RAMP=${RAMP:-2}
FILE_SIZE=${FILE_SIZE:-1G}
SHM_DIR=${SHM_DIR:-/dev/shm}
WORKLOADS=${WORKLOADS:-randread4k,randwrite4k,seqread1m,seqwrite1m,qd1read4k,conn4write4k}
SERVERS=${SERVERS:-raidkit,nbdkit,qemu-nbd}
OUT_DIR=${OUT_DIR:-$REPO/bench/out/nbd-vs-nbdkit-$(date +%Y%m%d-%H%M%S)}
PY=/usr/bin/python3

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bench_need fio nbdkit nbdinfo "$PY"
if ! command -v qemu-nbd >/dev/null 2>&1; then
    log "qemu-nbd is missing (qemu-utils): comparing with nbdkit only"
    SERVERS=${SERVERS//,qemu-nbd/}
fi
if [ -n "${RAIDKIT_OLD:-}" ]; then
    [ -x "$RAIDKIT_OLD" ] || { echo "bench: RAIDKIT_OLD '$RAIDKIT_OLD' is not executable" >&2; exit 2; }
    RK_OLD=$(cd "$(dirname "$RAIDKIT_OLD")" && pwd)/$(basename "$RAIDKIT_OLD")
    SERVERS="$SERVERS,rk-old"
fi
IFS=, read -r -a SRVS <<<"$SERVERS"
[ "${SRVS[0]}" = raidkit ] || { echo "bench: SERVERS must start with raidkit" >&2; exit 2; }

WORK=$(mktemp -d "$SHM_DIR/nbd-vs-nbdkit.XXXXXX") || exit 1
mkdir -p "$OUT_DIR" || exit 1
MEMBER=$WORK/member.img
declare -A SOCK PID URI OFF
for s in raidkit nbdkit qemu-nbd rk-old; do
    SOCK[$s]=$WORK/$s.sock
    URI[$s]="nbd+unix:///?socket=${SOCK[$s]}"
    PID[$s]=""
    OFF[$s]=1M
done
OFF[raidkit]=0
OFF[rk-old]=0
CROWD_PIDS=""

# shellcheck disable=SC2317  # runs from the EXIT trap
cleanup() {
    local p
    for p in $CROWD_PIDS ${PID[raidkit]} ${PID[nbdkit]} ${PID[qemu-nbd]} ${PID[rk-old]}; do
        kill -TERM "$p" 2>/dev/null
    done
    for p in $CROWD_PIDS ${PID[raidkit]} ${PID[nbdkit]} ${PID[qemu-nbd]} ${PID[rk-old]}; do
        wait "$p" 2>/dev/null
    done
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

hwm_kib() { awk '/^VmHWM:/ { print $2 }' "/proc/$1/status" 2>/dev/null || echo "?"; }
# cpu_ticks PID: utime + stime of a process (all its threads), in clock ticks.
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0; }
TCK=$(getconf CLK_TCK)

# ---------------------------------------------------------------- set up the servers

log "member: $MEMBER ($FILE_SIZE, zero-filled so no run pays for page allocation)"
truncate -s "$FILE_SIZE" "$MEMBER" || exit 1
dd if=/dev/zero of="$MEMBER" bs=1M count=$(($(stat -c %s "$MEMBER") / 1048576)) conv=notrunc \
    status=none || exit 1
"$RK" create --level linear --size "$FILE_SIZE" "$MEMBER" >"$OUT_DIR/create.txt" 2>&1 || {
    cat "$OUT_DIR/create.txt" >&2
    exit 1
}

# shellcheck disable=SC2086  # extra options are meant to split
"$RK" serve --listen "unix:${SOCK[raidkit]}" ${RAIDKIT_SERVE_ARGS:-} "$MEMBER" \
    2>"$OUT_DIR/raidkit.log" &
PID[raidkit]=$!
wait_socket "${PID[raidkit]}" "${SOCK[raidkit]}" "$OUT_DIR/raidkit.log" || exit 1
# shellcheck disable=SC2086
nbdkit -U "${SOCK[nbdkit]}" --foreground ${NBDKIT_ARGS:-} file "$MEMBER" \
    2>"$OUT_DIR/nbdkit.log" &
PID[nbdkit]=$!
wait_socket "${PID[nbdkit]}" "${SOCK[nbdkit]}" "$OUT_DIR/nbdkit.log" || exit 1
if [[ ",$SERVERS," == *,qemu-nbd,* ]]; then
    # Up to 16 clients (the 4-connection runs), the page cache like the others.
    # shellcheck disable=SC2086
    qemu-nbd -k "${SOCK[qemu-nbd]}" -f raw --persistent --shared=16 --cache=writeback \
        --aio=threads ${QEMU_NBD_ARGS:-} "$MEMBER" 2>"$OUT_DIR/qemu-nbd.log" &
    PID[qemu-nbd]=$!
    wait_socket "${PID[qemu-nbd]}" "${SOCK[qemu-nbd]}" "$OUT_DIR/qemu-nbd.log" || exit 1
fi
if [ -n "${RK_OLD:-}" ]; then
    cp "$MEMBER" "$WORK/member-old.img" || exit 1
    "$RK_OLD" create --force --level linear --size "$FILE_SIZE" "$WORK/member-old.img" \
        >>"$OUT_DIR/create.txt" 2>&1 || exit 1
    # shellcheck disable=SC2086
    env ${RK_OLD_ENV:-} "$RK_OLD" serve --listen "unix:${SOCK[rk-old]}" ${RAIDKIT_SERVE_ARGS:-} \
        "$WORK/member-old.img" 2>"$OUT_DIR/rk-old.log" &
    PID[rk-old]=$!
    wait_socket "${PID[rk-old]}" "${SOCK[rk-old]}" "$OUT_DIR/rk-old.log" || exit 1
fi

# The same bytes of the file for all: raidkit's volume starts at member offset 1 MiB (after the
# superblock area), nbdkit and qemu-nbd serve the whole file, so their runs use --offset=1M.
RK_SIZE=$(nbdinfo --size "${URI[raidkit]}") || exit 1
FIO_SIZE=$((RK_SIZE / 1048576))M
log "raidkit export $RK_SIZE bytes, nbdkit export $(nbdinfo --size "${URI[nbdkit]}") bytes;" \
    "fio --size=$FIO_SIZE; servers: ${SRVS[*]}"

if [ "$CROWD" -gt 0 ]; then
    for _ in $(seq 1 "$CROWD"); do
        sh -c 'while :; do :; done' &
        CROWD_PIDS="$CROWD_PIDS $!"
    done
    log "crowd: $CROWD busy-loop processes:$CROWD_PIDS"
fi

# ---------------------------------------------------------------- runs

# workload NAME -> fio options
wl_opts() {
    case $1 in
    randread4k) echo "--rw=randread --bs=4k --iodepth=32 --norandommap" ;;
    randwrite4k) echo "--rw=randwrite --bs=4k --iodepth=32 --norandommap" ;;
    seqread1m) echo "--rw=read --bs=1M --iodepth=8" ;;
    seqwrite1m) echo "--rw=write --bs=1M --iodepth=8" ;;
    qd1read4k) echo "--rw=randread --bs=4k --iodepth=1 --norandommap" ;;
    randread16k) echo "--rw=randread --bs=16k --iodepth=32 --norandommap" ;;
    qd1read16k) echo "--rw=randread --bs=16k --iodepth=1 --norandommap" ;;
    read1mqd32) echo "--rw=read --bs=1M --iodepth=32" ;;
    qd1read1m) echo "--rw=read --bs=1M --iodepth=1" ;;
    conn4write4k)
        echo "--rw=randwrite --bs=4k --iodepth=8 --norandommap --numjobs=4 --group_reporting"
        ;;
    *) return 1 ;;
    esac
}

# fio_line JSON CPU_TICKS SECONDS: "iops mibs lat_mean_us lat_p99_us cpu_us_per_io" (tabs).
fio_line() {
    "$PY" - "$1" "$2" "$TCK" "$3" <<'EOF'
import json, sys
text = open(sys.argv[1]).read()  # fio may put warning lines before the JSON
t = json.loads(text[text.index("{"):])["jobs"][0]
d = t["write"] if t["write"]["io_bytes"] > t["read"]["io_bytes"] else t["read"]
ticks, tck, secs = int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
ios = d["iops"] * secs
cpu_us = ticks * 1e6 / tck / ios if ios else 0
lat = d.get("clat_ns", {})
p99 = lat.get("percentile", {}).get("99.000000", 0)
print("%.1f\t%.1f\t%.1f\t%.1f\t%.2f" % (d["iops"], d["bw"] / 1024.0, lat.get("mean", 0) / 1e3,
                                       p99 / 1e3, cpu_us))
EOF
}

# Other work on the machine skews single runs; the load average goes into the report.
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
RAW=$OUT_DIR/raw.tsv
printf 'workload\tserver\tround\tiops\tmibs\tlat_mean_us\tlat_p99_us\tcpu_us_per_io\n' >"$RAW"
IFS=, read -r -a WLS <<<"$WORKLOADS"
for w in "${WLS[@]}"; do
    wl_opts "$w" >/dev/null || { echo "bench: unknown workload $w" >&2; exit 2; }
done
total=$((ROUNDS * ${#WLS[@]} * ${#SRVS[@]}))
n=0
log "$ROUNDS rounds x ${#WLS[@]} workloads x ${#SRVS[@]} servers, ${RUNTIME}s (+${RAMP}s ramp)" \
    "each: ~$((total * (RUNTIME + RAMP + 1) / 60 + 1)) min"
for r in $(seq 1 "$ROUNDS"); do
    for w in "${WLS[@]}"; do
        order=()
        for i in "${!SRVS[@]}"; do
            order+=("${SRVS[$(((i + r - 1) % ${#SRVS[@]}))]}")
        done
        for s in "${order[@]}"; do
            n=$((n + 1))
            json=$OUT_DIR/$w-$s-r$r.json
            c0=$(cpu_ticks "${PID[$s]}")
            # shellcheck disable=SC2046
            fio --name="$w" --ioengine=nbd --uri="${URI[$s]}" $(wl_opts "$w") \
                --offset="${OFF[$s]}" --size="$FIO_SIZE" --time_based --runtime="$RUNTIME" \
                --ramp_time="$RAMP" --randseed=42 --output-format=json --output="$json" \
                >"$json.err" 2>&1 || {
                log "fio failed ($s $w round $r):"
                cat "$json.err" >&2
                exit 1
            }
            c1=$(cpu_ticks "${PID[$s]}")
            line=$(fio_line "$json" "$((c1 - c0))" "$((RUNTIME + RAMP))") || exit 1
            printf '%s\t%s\t%s\t%s\n' "$w" "$s" "$r" "$line" >>"$RAW"
            log "($n/$total) round $r $w $s: $(cut -f1 <<<"$line") IOPS" \
                "$(cut -f2 <<<"$line") MiB/s, $(cut -f5 <<<"$line") us CPU/IO"
        done
    done
done

LOAD_END=$(cut -d' ' -f1-3 /proc/loadavg)
HWM=""
for s in "${SRVS[@]}"; do
    HWM="$HWM $s=$(hwm_kib "${PID[$s]}")"
done

# ---------------------------------------------------------------- report

{
    cpu=$(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo)
    echo "raidkit serve vs ${SRVS[*]:1}, same ${FILE_SIZE} file on $SHM_DIR, fio nbd engine"
    echo "date $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores ($cpu), kernel $(uname -r)"
    echo "$("$RK" --version 2>/dev/null), $(fio --version), $(nbdkit --version | head -1)," \
        "$(qemu-nbd --version 2>/dev/null | head -1)"
    if [ "$CROWD" -gt 0 ]; then
        echo "crowd: $CROWD busy-loop processes beside the servers for the whole run"
    else
        echo "crowd: none"
    fi
    echo "load average at start $LOAD_START, at end $LOAD_END (other work competes for the cores)"
    echo "$ROUNDS rounds x ${RUNTIME}s (+${RAMP}s ramp) per server and workload, rotating;" \
        "median of rounds; CPU = server CPU time per I/O"
    echo
    "$PY" - "$RAW" "$HWM" <<'EOF'
import sys, collections
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])][1:]
data = collections.OrderedDict()
servers = []
for w, s, r, *v in rows:
    data.setdefault(w, {}).setdefault(s, []).append([float(x) for x in v])
    if s not in servers:
        servers.append(s)
servers.sort(key=lambda s: s != "raidkit")
desc = {"randread4k": "4K rand read qd32", "randwrite4k": "4K rand write qd32",
        "seqread1m": "1M seq read qd8", "seqwrite1m": "1M seq write qd8",
        "qd1read4k": "4K rand read qd1", "conn4write4k": "4K rand write 4 conn x qd8",
        "randread16k": "16K rand read qd32", "qd1read16k": "16K rand read qd1",
        "read1mqd32": "1M seq read qd32", "qd1read1m": "1M seq read qd1"}
def mean(v):  # the median of the rounds: robust against a round that a busy machine spoilt
    v = sorted(v)
    return v[len(v) // 2] if len(v) % 2 else (v[len(v) // 2 - 1] + v[len(v) // 2]) / 2
def col(s, i, by): return mean([x[i] for x in by[s]]) if s in by else float("nan")
print("%-26s" % "workload" + "".join("%26s" % ("%s IOPS (CPU us/IO)" % s[:8]) for s in servers)
      + "".join("%12s" % ("rk/" + s[:8]) for s in servers[1:]))
worst = None
for w, by in data.items():
    line = "%-26s" % desc.get(w, w)
    for s in servers:
        line += "%18.0f (%5.1f)" % (col(s, 0, by), col(s, 4, by))
    for s in servers[1:]:
        ratio = col("raidkit", 0, by) / col(s, 0, by) if col(s, 0, by) else float("nan")
        line += "%11.2fx" % ratio
        if s == "nbdkit":
            worst = ratio if worst is None else min(worst, ratio)
    print(line)
    if w == "qd1read4k":
        print("%-26s" % "  latency mean / p99 us" + "".join(
            "%26s" % ("%.0f / %.0f" % (col(s, 2, by), col(s, 3, by))) for s in servers))
print()
print("peak resident memory (VmHWM, KiB):%s" % sys.argv[2])
print("target raidkit/nbdkit >= 1.2 on every workload: %s (worst %.2fx)" % (
    "MET" if worst is not None and worst >= 1.2 else "NOT MET", worst or 0))
EOF
} | tee "$OUT_DIR/results.txt"
log "raw trials: $RAW, fio JSON and server logs: $OUT_DIR"
