#!/usr/bin/env bash
# Cost of the partial parity log (bench/RESULTS.md "Partial parity log"): raid5 (4 members) and
# raid6 (6 members) on tmpfs, created with --write-hole ppl and --write-hole none in turn on the
# same member files, measured with fio (nbd engine): 4K random writes (qd 32), 1M sequential
# writes (qd 8) and whole-stripe sequential writes (bs = the stripe width, qd 8). The ppl arm
# keeps the default write-intent bitmap; the none arm gets `--bitmap $BASE_BITMAP`, so with the
# default BASE_BITMAP=none the ratio is the whole cost of safety (bitmap + log vs neither), and
# with BASE_BITMAP=internal the cost of the log alone.
#
# Usage: bench/ppl-cost.sh RAIDKIT_BINARY
# Environment: ROUNDS [3]  RUNTIME [4] s per run  MEMBER_SIZE [256M]  CHUNK [64K]
#   SHM_DIR [/dev/shm]  OUT_DIR [<repo>/bench/out/ppl-cost-TIME]  BASE_BITMAP [none]
set -uo pipefail

if [ $# -ne 1 ] || [ ! -x "$1" ]; then
    echo "usage: $0 RAIDKIT_BINARY" >&2
    exit 2
fi
RK=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
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
    randwrite4k) echo "--rw=randwrite --bs=4k --iodepth=32 --norandommap --randrepeat=0" ;;
    seqwrite1m) echo "--rw=write --bs=1M --iodepth=8" ;;
    seqwritefs) echo "--rw=write --bs=$(($2 * CHUNK_K))K --iodepth=8" ;;
    esac
}
RAW=$OUT_DIR/raw.tsv
printf 'level\tmode\tworkload\tround\tiops\tmibs\n' >"$RAW"
wait_quiet
for r in $(seq 1 "$ROUNDS"); do
    for spec in "raid5 4" "raid6 6"; do
        read -r level n <<<"$spec"
        [ "$level" = raid5 ] && nd=$((n - 1)) || nd=$((n - 2))
        members=()
        for i in $(seq 0 $((n - 1))); do members+=("$WORK/m$i"); done
        modes=(ppl none)
        [ $((r % 2)) -eq 0 ] && modes=(none ppl)
        for mode in "${modes[@]}"; do
            extra=()
            [ "$mode" = none ] && extra=(--bitmap "$BASE_BITMAP")
            "$RK" create --force --assume-clean --level "$level" --chunk "${CHUNK_K}K" \
                --write-hole "$mode" "${extra[@]}" "${members[@]}" >/dev/null 2>&1 || exit 1
            sock=$WORK/nbd.sock
            rm -f "$sock"
            slog=$OUT_DIR/serve-$level-$mode-r$r.log
            "$RK" serve --listen "unix:$sock" "${members[@]}" 2>"$slog" &
            RK_PID=$!
            wait_socket "$RK_PID" "$sock" "$slog" || exit 1
            uri="nbd+unix:///?socket=$sock"
            vsize=$(nbdinfo --size "$uri") || exit 1
            for w in randwrite4k seqwrite1m seqwritefs; do
                json=$OUT_DIR/$level-$mode-$w-r$r.json
                # shellcheck disable=SC2046
                fio --name="$w" --ioengine=nbd --uri="$uri" $(wl_opts "$w" "$nd") \
                    --size="$(((vsize / (nd * CHUNK_K * 1024)) * nd * CHUNK_K * 1024))" \
                    --time_based --runtime="$RUNTIME" --randseed=42 --output-format=json \
                    --output="$json" >"$json.err" 2>&1 || { cat "$json.err" >&2; exit 1; }
                line=$("$PY" -c '
import json, sys
text = open(sys.argv[1]).read()
t = json.loads(text[text.index("{"):])["jobs"][0]["write"]
print("%.1f\t%.1f" % (t["iops"], t["bw"] / 1024.0))' "$json") || exit 1
                printf '%s\t%s\t%s\t%s\t%s\n' "$level" "$mode" "$w" "$r" "$line" >>"$RAW"
                log "round $r $level $mode $w: $(cut -f1 <<<"$line") IOPS $(cut -f2 <<<"$line") MiB/s"
            done
            kill -TERM "$RK_PID"
            wait "$RK_PID"
            RK_PID=""
        done
    done
done
"$PY" - "$RAW" <<'EOF2' | tee "$OUT_DIR/summary.txt"
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
print("level  workload     none IOPS   ppl IOPS   ppl/none (median of %d rounds)"
      % len({r["round"] for r in rows}))
for level in ("raid5", "raid6"):
    for w in ("randwrite4k", "seqwrite1m", "seqwritefs"):
        med = {}
        for mode in ("none", "ppl"):
            v = [float(r["iops"]) for r in rows
                 if r["level"] == level and r["workload"] == w and r["mode"] == mode]
            med[mode] = statistics.median(v)
        print("%-6s %-12s %10.0f %10.0f   %.2f" % (level, w, med["none"], med["ppl"],
                                                   med["ppl"] / med["none"]))
EOF2
