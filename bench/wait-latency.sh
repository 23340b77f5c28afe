#!/usr/bin/env bash
# How long `replace --wait` and `scrub` take for a tiny job (issue 13 item 4; bench/RESULTS.md
# "replace --wait and scrub"): raid1 over two small tmpfs members, fail slot 1, replace it with
# --wait, then scrub (which waits by default); each RUNS times, wall-clock seconds per command.
#
# Usage: bench/wait-latency.sh RAIDKIT_BINARY
# Environment: RUNS [3]  MEMBER_SIZE [16M]  SHM_DIR [/dev/shm]
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bench_binary "$@"
RUNS=${RUNS:-3}
MEMBER_SIZE=${MEMBER_SIZE:-16M}
SHM_DIR=${SHM_DIR:-/dev/shm}
bench_workdir wait-latency
now() { date +%s.%N; }
for r in $(seq 1 "$RUNS"); do
    rm -f "$WORK"/m* "$WORK/s" "$WORK/c"
    for i in 0 1 2; do truncate -s "$MEMBER_SIZE" "$WORK/m$i"; done
    "$RK" create --force --level raid1 "$WORK/m0" "$WORK/m1" >/dev/null 2>&1 || exit 1
    "$RK" serve --listen "unix:$WORK/s" --control "$WORK/c" "$WORK/m0" "$WORK/m1" \
        2>"$WORK/log" &
    RK_PID=$!
    wait_socket "$RK_PID" "$WORK/c" "$WORK/log" || exit 1
    "$RK" fail --slot 1 --control "$WORK/c" >/dev/null || exit 1
    t0=$(now)
    "$RK" replace --slot 1 --with "$WORK/m2" --wait --control "$WORK/c" >/dev/null 2>&1 || exit 1
    t1=$(now)
    "$RK" scrub --control "$WORK/c" >/dev/null 2>&1 || exit 1
    t2=$(now)
    kill -TERM "$RK_PID"; wait "$RK_PID"; RK_PID=""
    awk -v r="$r" -v a="$t0" -v b="$t1" -v c="$t2" \
        'BEGIN { printf "run %d: replace --wait %.3f s, scrub %.3f s\n", r, b - a, c - b }'
done
