#!/usr/bin/env bash
# Cost of a re-add vs a full rebuild of the same slot (bench/RESULTS.md "Re-add"): raid5 of 4
# members on tmpfs; slot 1 is failed, WRITES random 4 KiB writes land while it is away, then
# `raidkit re-add --wait` takes it back (only the marked regions). Then slot 1 is failed again
# and `raidkit replace --wait` rebuilds it onto a fresh file (everything). Prints bytes
# resynced and wall time of each, per round, and the ratios.
#
# Usage: bench/readd-cost.sh RAIDKIT_BINARY
# Environment: ROUNDS [3]  WRITES [16]  MEMBER_SIZE [512M]  SHM_DIR [/dev/shm]
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bench_binary "$@"
ROUNDS=${ROUNDS:-3}
WRITES=${WRITES:-16}
MEMBER_SIZE=${MEMBER_SIZE:-512M}
SHM_DIR=${SHM_DIR:-/dev/shm}
bench_need /usr/bin/python3
bench_workdir readd-cost
CTL="$WORK/ctl"

now() { date +%s.%N; }

# job_bytes: resynced_bytes of the last job.
job_bytes() {
    "$RK" status --json --control "$CTL" |
        /usr/bin/python3 -c 'import json,sys; print(int(json.load(sys.stdin)["job"]["resynced_bytes"]))'
}

# timed CMD...: run CMD, print its wall time in seconds.
timed() {
    local t0 t1
    t0=$(now)
    "$@" >/dev/null 2>"$WORK/cmd.err" || { cat "$WORK/cmd.err" >&2; return 1; }
    t1=$(now)
    awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }'
}

log "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
for ((round = 1; round <= ROUNDS; round++)); do
    m=()
    for i in 0 1 2 3; do
        rm -f "$WORK/m$i"
        truncate -s "$MEMBER_SIZE" "$WORK/m$i"
        m+=("$WORK/m$i")
    done
    rm -f "$WORK/new"
    truncate -s "$MEMBER_SIZE" "$WORK/new"
    "$RK" create --force --level raid5 "${m[@]}" >/dev/null 2>&1 || exit 1
    "$RK" serve --listen "unix:$WORK/sock" --control "$CTL" "${m[@]}" 2>"$WORK/serve.log" &
    RK_PID=$!
    wait_socket "$RK_PID" "$WORK/sock" "$WORK/serve.log" || exit 1
    "$RK" fail --slot 1 --control "$CTL" >/dev/null || exit 1
    PATH=/usr/bin:$PATH /usr/bin/python3 - "nbd+unix:///?socket=$WORK/sock" "$WRITES" "$round" <<'PY' || exit 1
import random, sys, nbd
h = nbd.NBD()
h.connect_uri(sys.argv[1])
rnd = random.Random(int(sys.argv[3]))
n = h.get_size() // 4096
for _ in range(int(sys.argv[2])):
    h.pwrite(bytes([rnd.randrange(256)]) * 4096, rnd.randrange(n) * 4096)
h.flush()
h.shutdown()
PY
    t_readd=$(timed "$RK" re-add --slot 1 "${m[1]}" --control "$CTL" --wait) || exit 1
    b_readd=$(job_bytes)
    "$RK" fail --slot 1 --control "$CTL" >/dev/null || exit 1
    t_full=$(timed "$RK" replace --slot 1 --with "$WORK/new" --control "$CTL" --wait) || exit 1
    b_full=$(job_bytes)
    kill -TERM "$RK_PID" 2>/dev/null
    wait "$RK_PID" 2>/dev/null
    RK_PID=""
    echo "round $round: re-add after $WRITES writes: $b_readd bytes in ${t_readd} s; full rebuild: $b_full bytes in ${t_full} s"
    awk -v a="$b_readd" -v b="$b_full" -v c="$t_readd" -v d="$t_full" \
        'BEGIN { printf "round %d ratios re-add/full: bytes %.4f, time %.3f\n", '"$round"', a / b, c / d }'
done
log "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
