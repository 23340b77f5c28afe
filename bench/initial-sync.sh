#!/usr/bin/env bash
# Initial sync rate vs the members' sequential bandwidth on emulated members (issue 8 "Speed":
# initial sync >= 0.8x the members' sequential bandwidth; bench/RESULTS.md "Initial sync").
# Each level is created with RAIDKIT_TEST_NO_ZERO=1 (create cannot zero the members, so the
# first serve runs the initial sync as a full resync job) and served with --emulate PROFILE; the
# job's elapsed time (polled every 20 ms on the control socket) gives member data-area bytes per
# second. The member's sequential bandwidth is measured on the same emulation: a linear volume
# over one member, fio 1M sequential read and write at qd 8.
#
# Members are filled with random bytes (FILL=random: every member different, so every chunk of
# a copy level and every stripe of a parity level is rewritten, the worst case) or left sparse
# (FILL=zero: all already consistent, the sync only reads and compares or copies).
# The job's own time comes from its "resync finished ... in S s" log line; the time from serve
# start (assembly included) is printed too.
#
# Usage: bench/initial-sync.sh RAIDKIT_BINARY
# Environment: MEMBER_SIZE [256M]  PROFILE [sata-ssd-2014]
#   SPECS ["raid1 2,raid10 4,raid5 4,raid6 4"]  FILL [random]  RUNTIME [3] s per fio run
#   SHM_DIR [/dev/shm]
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bench_binary "$@"
MEMBER_SIZE=${MEMBER_SIZE:-256M}
PROFILE=${PROFILE:-sata-ssd-2014}
SPECS=${SPECS:-raid1 2,raid10 4,raid5 4,raid6 4}
FILL=${FILL:-random}
RUNTIME=${RUNTIME:-3}
SHM_DIR=${SHM_DIR:-/dev/shm}
PY=/usr/bin/python3
bench_need fio "$PY"
bench_workdir initial-sync
echo "load average at start $(cut -d' ' -f1-3 /proc/loadavg); profile $PROFILE, members $MEMBER_SIZE, fill $FILL"
# fill_member FILE I: a member of MEMBER_SIZE; random: the random pattern rotated by I MiB + 4K
# (each member different, made at copy speed).
if [ "$FILL" = random ]; then
    head -c "$MEMBER_SIZE" /dev/urandom >"$WORK/pattern" || exit 1
fi
fill_member() {
    rm -f "$1"
    if [ "$FILL" = random ]; then
        local off=$(($2 * 1048576 + 4096))
        { tail -c +$((off + 1)) "$WORK/pattern"; head -c "$off" "$WORK/pattern"; } >"$1"
    else
        truncate -s "$MEMBER_SIZE" "$1"
    fi
}

# member sequential bandwidth on the emulation (MB/s): linear over one member
truncate -s "$MEMBER_SIZE" "$WORK/lin"
"$RK" create --force --level linear "$WORK/lin" >/dev/null 2>&1 || exit 1
"$RK" serve --listen "unix:$WORK/s" --emulate "$PROFILE" "$WORK/lin" 2>"$WORK/log" &
RK_PID=$!
wait_socket "$RK_PID" "$WORK/s" "$WORK/log" || exit 1
declare -A BW
for rw in read write; do
    fio --name=bw --ioengine=nbd --uri="nbd+unix:///?socket=$WORK/s" --rw="$rw" --bs=1M \
        --iodepth=8 --size=200M --time_based --runtime="$RUNTIME" --output-format=json \
        --output="$WORK/bw.json" >/dev/null 2>&1 || { echo "fio failed" >&2; exit 1; }
    BW[$rw]=$("$PY" -c 'import json,sys; print("%.1f" % (json.load(open(sys.argv[1]))["jobs"][0][sys.argv[2]]["bw_bytes"] / 1e6))' "$WORK/bw.json" "$rw")
done
kill -TERM "$RK_PID"; wait "$RK_PID"; RK_PID=""
echo "member sequential bandwidth ($PROFILE, through raidkit linear + NBD): read ${BW[read]} MB/s, write ${BW[write]} MB/s"

IFS=, read -r -a SPECL <<<"$SPECS"
for spec in "${SPECL[@]}"; do
    read -r level n <<<"$spec"
    m=()
    for i in $(seq 0 $((n - 1))); do
        fill_member "$WORK/m$i" "$i"
        m+=("$WORK/m$i")
    done
    RAIDKIT_TEST_NO_ZERO=1 "$RK" create --force --level "$level" "${m[@]}" >/dev/null 2>&1 || exit 1
    rm -f "$WORK/s" "$WORK/c"
    t0=$(date +%s.%N)
    "$RK" serve --listen "unix:$WORK/s" --control "$WORK/c" --emulate "$PROFILE" "${m[@]}" \
        2>"$WORK/log" &
    RK_PID=$!
    wait_socket "$RK_PID" "$WORK/c" "$WORK/log" || exit 1
    line=""
    while :; do
        line=$("$RK" status --json --control "$WORK/c" | "$PY" -c '
import json, sys
j = json.load(sys.stdin).get("job") or {}
print(j.get("kind"), j.get("state"), j.get("end", 0), j.get("rate_mib_s", 0))')
        case $line in resync\ running*) sleep 0.02 ;; *) break ;; esac
    done
    t1=$(date +%s.%N)
    kill -TERM "$RK_PID"; wait "$RK_PID"; RK_PID=""
    read -r kind state end _ <<<"$line"
    jt=$(sed -n 's/.*resync finished: .* resynced in \([0-9.]*\) s.*/\1/p' "$WORK/log" | tail -1)
    "$PY" - "$level" "$n" "$kind" "$state" "$end" "$t0" "$t1" "${BW[read]}" "${BW[write]}" "${jt:-0}" <<'PYEOF'
import sys
level, n, kind, state, end, t0, t1, rd, wr, jt = sys.argv[1:]
sec, jt = float(t1) - float(t0), float(jt)
rate = int(end) / sec / 1e6
jrate = int(end) / jt / 1e6 if jt > 0 else 0
print("%s over %s: initial sync (%s %s) of %d MB per member: job %.2f s = %.1f MB/s per member "
      "= %.2fx member read, %.2fx member write bandwidth; from serve start %.2f s = %.2fx read" % (
          level, n, kind, state, int(end) / 1e6, jt, jrate, jrate / float(rd), jrate / float(wr),
          sec, rate / float(rd)))
PYEOF
done
echo "load average at end $(cut -d' ' -f1-3 /proc/loadavg)"
