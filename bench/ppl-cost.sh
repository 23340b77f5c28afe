#!/usr/bin/env bash
# Cost of the partial parity log (bench/RESULTS.md "Partial parity log"): raid5 (4 members) and
# raid6 (6 members) on tmpfs, created with --write-hole ppl and --write-hole none in turn on the
# same member files, measured with fio (nbd engine): 4K random writes (qd 32), 1M sequential
# writes (qd 8) and whole-stripe sequential writes (bs = the stripe width, qd 8). The ppl arm
# keeps the default write-intent bitmap; the none arm gets `--bitmap $BASE_BITMAP`, so with the
# default BASE_BITMAP=none the ratio is the whole cost of safety (bitmap + log vs neither), and
# with BASE_BITMAP=internal the cost of the log alone.
#
# Usage: bench/ppl-cost.sh RAIDKIT_BINARY [OTHER_BINARY...]
#   With several binaries (old vs new), every arm of every round runs each binary in turn, who
#   goes first rotating per round; the summary has one block per binary (medians of rounds).
# Environment: ROUNDS [3]  RUNTIME [4] s per run  MEMBER_SIZE [256M]  CHUNK_K [64]
#   SHM_DIR [/dev/shm]  OUT_DIR [<repo>/bench/out/ppl-cost-TIME]  BASE_BITMAP [none]
#   SPECS ["raid5 4,raid6 6"] level and member count per array
#   WORKLOADS ["randwrite4k randwrite4k-warm seqwrite1m seqwritefs"]
#     randwrite4k runs on the array as the workloads before it left it: first, on a fresh array,
#     so every first write into a bitmap region waits for that region's bit (a cold array).
#     randwrite4k-warm is the same job after an unmeasured sequential 1M pass over the whole area
#     (preconditioning): every region's bit is set, as on an array in use (bits clear only after
#     5 s without a write into their region), so it measures the steady state.
#   SERVE_ARGS [""] extra `raidkit serve` options, e.g. "--emulate sata-ssd-2014" (emulated members)
set -uo pipefail

if [ $# -lt 1 ]; then
    echo "usage: $0 RAIDKIT_BINARY [OTHER_BINARY...]" >&2
    exit 2
fi
BINS=()
for b in "$@"; do
    [ -x "$b" ] || { echo "$0: $b: not an executable" >&2; exit 2; }
    BINS+=("$(cd "$(dirname "$b")" && pwd)/$(basename "$b")")
done
REPO=$(cd "$(dirname "$0")/.." && pwd)
ROUNDS=${ROUNDS:-3}
RUNTIME=${RUNTIME:-4}
MEMBER_SIZE=${MEMBER_SIZE:-256M}
CHUNK_K=${CHUNK_K:-64}
SHM_DIR=${SHM_DIR:-/dev/shm}
OUT_DIR=${OUT_DIR:-$REPO/bench/out/ppl-cost-$(date +%Y%m%d-%H%M%S)}
PY=/usr/bin/python3
WAIT_QUIET=${WAIT_QUIET:-0}
QUIET_LOAD=${QUIET_LOAD:-1.5}
BASE_BITMAP=${BASE_BITMAP:-none}
SPECS=${SPECS:-raid5 4,raid6 6}
WORKLOADS=${WORKLOADS:-randwrite4k randwrite4k-warm seqwrite1m seqwritefs}
read -r -a SERVE_EXTRA <<<"${SERVE_ARGS:-}"

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bench_need fio nbdinfo "$PY"
bench_workdir ppl-cost
mkdir -p "$OUT_DIR" || exit 1

for i in 0 1 2 3 4 5; do
    truncate -s "$MEMBER_SIZE" "$WORK/m$i" || exit 1
    dd if=/dev/zero of="$WORK/m$i" bs=1M count=$(($(stat -c %s "$WORK/m$i") / 1048576)) \
        conv=notrunc status=none || exit 1
done
wl_opts() { # WORKLOAD DATA_MEMBERS
    case $1 in
    randwrite4k | randwrite4k-warm) echo "--rw=randwrite --bs=4k --iodepth=32 --norandommap --randrepeat=0" ;;
    seqwrite1m) echo "--rw=write --bs=1M --iodepth=8" ;;
    seqwritefs) echo "--rw=write --bs=$(($2 * CHUNK_K))K --iodepth=8" ;;
    esac
}
RAW=$OUT_DIR/raw.tsv
printf 'bin\tlevel\tmode\tworkload\tround\tiops\tmibs\tcpu_us\n' >"$RAW"
TCK=$(getconf CLK_TCK)
wait_quiet
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
IFS=, read -r -a SPECL <<<"$SPECS"
nb=${#BINS[@]}
for r in $(seq 1 "$ROUNDS"); do
    for spec in "${SPECL[@]}"; do
        read -r level n <<<"$spec"
        [ "$level" = raid5 ] && nd=$((n - 1)) || nd=$((n - 2))
        members=()
        for i in $(seq 0 $((n - 1))); do members+=("$WORK/m$i"); done
        modes=(ppl none)
        [ $((r % 2)) -eq 0 ] && modes=(none ppl)
        for mode in "${modes[@]}"; do
            for j in $(seq 0 $((nb - 1))); do
                bi=$(((j + r - 1) % nb))
                RK=${BINS[$bi]}
                extra=()
                [ "$mode" = none ] && extra=(--bitmap "$BASE_BITMAP")
                "$RK" create --force --assume-clean --level "$level" --chunk "${CHUNK_K}K" \
                    --write-hole "$mode" "${extra[@]}" "${members[@]}" >/dev/null 2>&1 || exit 1
                sock=$WORK/nbd.sock
                rm -f "$sock"
                slog=$OUT_DIR/serve-b$bi-$level-$mode-r$r.log
                "$RK" serve --listen "unix:$sock" "${SERVE_EXTRA[@]}" "${members[@]}" 2>"$slog" &
                RK_PID=$!
                wait_socket "$RK_PID" "$sock" "$slog" || exit 1
                uri="nbd+unix:///?socket=$sock"
                vsize=$(nbdinfo --size "$uri") || exit 1
                for w in $WORKLOADS; do
                    json=$OUT_DIR/b$bi-$level-$mode-$w-r$r.json
                    area=$(((vsize / (nd * CHUNK_K * 1024)) * nd * CHUNK_K * 1024))
                    if [ "$w" = randwrite4k-warm ]; then # preconditioning, not measured
                        fio --name=precondition --ioengine=nbd --uri="$uri" --rw=write --bs=1M \
                            --iodepth=8 --size="$area" --output="$json.pre" >"$json.pre.err" 2>&1 ||
                            { cat "$json.pre.err" >&2; exit 1; }
                    fi
                    c0=$(awk '{ print $14 + $15 }' "/proc/$RK_PID/stat")
                    # shellcheck disable=SC2046
                    fio --name="$w" --ioengine=nbd --uri="$uri" $(wl_opts "$w" "$nd") \
                        --size="$area" \
                        --time_based --runtime="$RUNTIME" --randseed=42 --output-format=json \
                        --output="$json" >"$json.err" 2>&1 || { cat "$json.err" >&2; exit 1; }
                    c1=$(awk '{ print $14 + $15 }' "/proc/$RK_PID/stat")
                    line=$("$PY" -c '
import json, sys
text = open(sys.argv[1]).read()
t = json.loads(text[text.index("{"):])["jobs"][0]["write"]
cpu = (int(sys.argv[3]) - int(sys.argv[2])) * 1e6 / int(sys.argv[4]) / max(t["total_ios"], 1)
print("%.1f\t%.1f\t%.1f" % (t["iops"], t["bw"] / 1024.0, cpu))' "$json" "$c0" "$c1" "$TCK") || exit 1
                    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$bi" "$level" "$mode" "$w" "$r" "$line" >>"$RAW"
                    log "round $r bin $bi $level $mode $w: $(cut -f1 <<<"$line") IOPS" \
                        "$(cut -f2 <<<"$line") MiB/s"
                done
                kill -TERM "$RK_PID"
                wait "$RK_PID"
                RK_PID=""
            done
        done
    done
done
LOAD_END=$(cut -d' ' -f1-3 /proc/loadavg)
{
    echo "load average at start $LOAD_START, at end $LOAD_END; serve ${SERVE_ARGS:-(no extra options)}"
    for j in $(seq 0 $((nb - 1))); do echo "bin $j: ${BINS[$j]}"; done
    "$PY" - "$RAW" <<'EOF2'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
print("bin level  workload     none IOPS   ppl IOPS   ppl/none   cpu us/io none  ppl"
      "  (medians of %d rounds)" % len({r["round"] for r in rows}))
for b in sorted({r["bin"] for r in rows}):
    for level in sorted({r["level"] for r in rows}):
        for w in dict.fromkeys(r["workload"] for r in rows):
            med, cpu = {}, {}
            for mode in ("none", "ppl"):
                sel = [r for r in rows if r["bin"] == b and r["level"] == level
                       and r["workload"] == w and r["mode"] == mode]
                med[mode] = statistics.median([float(r["iops"]) for r in sel]) if sel else float("nan")
                cpu[mode] = statistics.median([float(r["cpu_us"]) for r in sel]) if sel else float("nan")
            print("%-3s %-6s %-12s %10.0f %10.0f   %.2f %14.1f %5.1f" % (
                b, level, w, med["none"], med["ppl"], med["ppl"] / med["none"], cpu["none"],
                cpu["ppl"]))
EOF2
} | tee "$OUT_DIR/summary.txt"
