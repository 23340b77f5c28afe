#!/usr/bin/env bash
# Cost of the write-intent bitmap (bench/RESULTS.md "Write-intent bitmap"): 4K random write IOPS
# of raid1 (2 members) and raid5 (4 members) on tmpfs members, created with the default internal
# bitmap and with --bitmap none, alternating within each round, measured with fio (nbd engine).
# Prints one line per run and the ratio bitmap/none of the mean IOPS per level.
#
# Usage: bench/bitmap-cost.sh RAIDKIT_BINARY
# Environment: ROUNDS [3]  RUNTIME [5] s  MEMBER_SIZE [256M]  SHM_DIR [/dev/shm]  LEVELS [raid1 raid5]
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bench_binary "$@"
ROUNDS=${ROUNDS:-3}
RUNTIME=${RUNTIME:-5}
MEMBER_SIZE=${MEMBER_SIZE:-256M}
SHM_DIR=${SHM_DIR:-/dev/shm}
LEVELS=${LEVELS:-raid1 raid5}
bench_need fio /usr/bin/python3
bench_workdir bitmap-cost

# run LEVEL N BITMAP: create, serve, fio 4K randwrite qd32; print IOPS.
run() {
    local level=$1 n=$2 bm=$3 i m=()
    for ((i = 0; i < n; i++)); do
        rm -f "$WORK/m$i"
        truncate -s "$MEMBER_SIZE" "$WORK/m$i"
        m+=("$WORK/m$i")
    done
    "$RK" create --force --level "$level" --bitmap "$bm" "${m[@]}" >/dev/null 2>&1 || return 1
    "$RK" serve --listen "unix:$WORK/sock" "${m[@]}" 2>"$WORK/serve.log" &
    RK_PID=$!
    for i in $(seq 100); do
        [ -S "$WORK/sock" ] && break
        sleep 0.1
    done
    fio --name=r --ioengine=nbd --uri="nbd+unix:///?socket=$WORK/sock" --rw=randwrite --bs=4k \
        --iodepth=32 --time_based --runtime="$RUNTIME" --size=100% --randseed=42 \
        --output-format=json --output="$WORK/fio.json" >/dev/null 2>&1
    kill -TERM "$RK_PID" 2>/dev/null
    wait "$RK_PID" 2>/dev/null
    RK_PID=""
    /usr/bin/python3 -c 'import json,sys; print(round(json.load(open(sys.argv[1]))["jobs"][0]["write"]["iops"]))' "$WORK/fio.json"
}

declare -A SUM
for ((round = 1; round <= ROUNDS; round++)); do
    for level in $LEVELS; do
        n=2
        [ "$level" = raid5 ] && n=4
        order="internal none"
        [ $((round % 2)) = 0 ] && order="none internal"
        for bm in $order; do
            iops=$(run "$level" "$n" "$bm") || { echo "run $level $bm failed" >&2; exit 1; }
            echo "round $round $level bitmap=$bm: $iops IOPS"
            SUM[$level.$bm]=$(( ${SUM[$level.$bm]:-0} + iops ))
        done
    done
done
for level in $LEVELS; do
    a=${SUM[$level.internal]} b=${SUM[$level.none]}
    echo "$level: bitmap $((a / ROUNDS)) IOPS, none $((b / ROUNDS)) IOPS, ratio $(/usr/bin/python3 -c "print(round($a/$b, 3))")"
done
