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
# bench/sync_ceiling (next to the binary) gives the honest ceiling on this machine: one member
# alone and each level's sync I/O pattern moved by the emulation without RAID code.
# Then the resync after a crash, per level over zeroed members: one 4 KiB write then SIGKILL
# (one region's bit set) vs a write of the whole array then SIGKILL (every bit set), each
# followed by a serve with the emulation that runs the bitmap resync: the two job times.
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

# The honest ceiling (bench/sync_ceiling.c, built next to the binary): the emulation alone moving
# each level's sync bytes with the sync's step shape, no RAID code; 0 when the tool is missing.
declare -A CEIL=()
CEIL_BIN=$(dirname "$RK")/sync_ceiling
ceil_pattern() { # LEVEL N: the sync_ceiling pattern of a level's full sync over random members
    case $1 in
    raid1 | raid10) echo "copy $2" ;;
    raid5) echo "parity $2 1" ;;
    raid6) echo "parity $2 2" ;;
    esac
}
if [ -x "$CEIL_BIN" ]; then
    IFS=, read -r -a CSPEC <<<"$SPECS"
    pats=(read)
    for spec in "${CSPEC[@]}"; do
        read -r level n <<<"$spec"
        pats+=("$(ceil_pattern "$level" "$n")")
    done
    while read -r line; do
        echo "ceiling: $line"
        name=$(echo "$line" | sed 's/ *[0-9.]* s .*//')
        CEIL[$name]=$(echo "$line" | sed -n 's/.* \([0-9.]*\) MB\/s per member.*/\1/p')
    done < <("$CEIL_BIN" "$WORK" "$PROFILE" "$(numfmt --from=iec "$MEMBER_SIZE")" "${pats[@]}")
fi

# serve_job MEMBER...: serve the members with the emulation and the control socket, wait for the
# job to leave "running" (20 ms polls); sets LINE ("kind state end"), T0/T1 (serve start, job
# end) and JT (the job's own seconds from its "resync finished" log line, 0 if none); stops.
serve_job() {
    rm -f "$WORK/s" "$WORK/c"
    T0=$(date +%s.%N)
    "$RK" serve --listen "unix:$WORK/s" --control "$WORK/c" --emulate "$PROFILE" "$@" \
        2>"$WORK/log" &
    RK_PID=$!
    wait_socket "$RK_PID" "$WORK/c" "$WORK/log" || exit 1
    while :; do
        LINE=$("$RK" status --json --control "$WORK/c" | "$PY" -c '
import json, sys
j = json.load(sys.stdin).get("job") or {}
print(j.get("kind"), j.get("state"), j.get("end", 0))')
        case $LINE in *\ running\ *) sleep 0.02 ;; *) break ;; esac
    done
    T1=$(date +%s.%N)
    kill -TERM "$RK_PID"; wait "$RK_PID"; RK_PID=""
    JT=$(sed -n 's/.*resync finished: .* resynced in \([0-9.]*\) s.*/\1/p' "$WORK/log" | tail -1)
    JT=${JT:-0}
}

# dirty MiB MEMBER...: serve the members (no emulation), write MiB MiB (1M sequential from
# offset 0; 0: one 4 KiB write) through NBD, SIGKILL the server right away: the write-intent
# bits of what was written stay set (they clear only after 5 s idle).
dirty() {
    local mib=$1
    shift
    rm -f "$WORK/s"
    # No bit clears while the writes run, however slow the machine (tests-only knob, docs/CLI.md).
    RAIDKIT_BITMAP_IDLE_MS=3600000 "$RK" serve --listen "unix:$WORK/s" "$@" 2>"$WORK/dlog" &
    RK_PID=$!
    wait_socket "$RK_PID" "$WORK/s" "$WORK/dlog" || exit 1
    local bs=1M size=${mib}M
    [ "$mib" = 0 ] && bs=4k size=4k
    fio --name=dirty --ioengine=nbd --uri="nbd+unix:///?socket=$WORK/s" --rw=write --bs="$bs" \
        --iodepth=8 --size="$size" --output="$WORK/dirty.out" >/dev/null 2>&1 ||
        { echo "fio (dirty) failed" >&2; exit 1; }
    kill -KILL "$RK_PID"; wait "$RK_PID" 2>/dev/null; RK_PID=""
}

IFS=, read -r -a SPECL <<<"$SPECS"
echo "--- initial sync (RAIDKIT_TEST_NO_ZERO=1 create: the first serve runs a full resync)"
for spec in "${SPECL[@]}"; do
    read -r level n <<<"$spec"
    m=()
    for i in $(seq 0 $((n - 1))); do
        fill_member "$WORK/m$i" "$i"
        m+=("$WORK/m$i")
    done
    RAIDKIT_TEST_NO_ZERO=1 "$RK" create --force --level "$level" "${m[@]}" >/dev/null 2>&1 || exit 1
    serve_job "${m[@]}"
    read -r kind state end <<<"$LINE"
    pat=$(ceil_pattern "$level" "$n")
    "$PY" - "$level" "$n" "$kind" "$state" "$end" "$T0" "$T1" "${BW[read]}" "${BW[write]}" "$JT" \
        "${CEIL[read]:-0}" "${CEIL[$pat]:-0}" <<'PYEOF'
import sys
level, n, kind, state, end, t0, t1, rd, wr, jt, c1, cl = sys.argv[1:]
sec, jt = float(t1) - float(t0), float(jt)
rate = int(end) / sec / 1e6
jrate = int(end) / jt / 1e6 if jt > 0 else 0
print("%s over %s: initial sync (%s %s) of %d MB per member: job %.2f s = %.1f MB/s per member "
      "= %.2fx member read, %.2fx member write bandwidth; from serve start %.2f s = %.2fx read" % (
          level, n, kind, state, int(end) / 1e6, jt, jrate, jrate / float(rd), jrate / float(wr),
          sec, rate / float(rd)))
if float(c1) > 0 and float(cl) > 0:
    print("  vs the emulation alone (sync_ceiling): %.2fx one member's read (%s MB/s), %.2fx the "
          "level's own pattern (%s MB/s per member)" % (jrate / float(c1), c1, jrate / float(cl), cl))
PYEOF
done

echo "--- resync after a crash (SIGKILL right after the writes): 1 region dirty vs all dirty"
for spec in "${SPECL[@]}"; do
    read -r level n <<<"$spec"
    m=()
    for i in $(seq 0 $((n - 1))); do
        rm -f "$WORK/m$i"
        truncate -s "$MEMBER_SIZE" "$WORK/m$i"
        m+=("$WORK/m$i")
    done
    "$RK" create --force --level "$level" "${m[@]}" >/dev/null 2>&1 || exit 1
    asize=$("$RK" info --json "${m[@]}" | "$PY" -c 'import json,sys; d=json.load(sys.stdin); print(d.get("array_size") or d["array"]["size"])')
    declare -A RT=()
    for what in one all; do
        if [ "$what" = one ]; then dirty 0 "${m[@]}"; else dirty $((asize / 1048576)) "${m[@]}"; fi
        serve_job "${m[@]}"
        regions=$(sed -n 's/.*resync started ([a-z]*): \([0-9]*\) of \([0-9]*\) regions of \([0-9]*\) bytes.*/\1 \2 \3/p' "$WORK/log" | tail -1)
        RT[$what]="$JT ${regions:-0 0 0} $LINE"
    done
    "$PY" - "$level" "$n" "${RT[one]}" "${RT[all]}" <<'PYEOF'
import sys
level, n = sys.argv[1:3]
def parse(s):
    f = s.split()
    return float(f[0]), int(f[1]), int(f[2]), int(f[3]), f[4] + " " + f[5]
o, a = parse(sys.argv[3]), parse(sys.argv[4])
print("%s over %s: resync of %d of %d regions (%d KiB each) in %.3f s (%s); of %d of %d regions "
      "in %.3f s (%s): all/one time ratio %.0fx, region ratio %dx" % (
          level, n, o[1], o[2], o[3] // 1024, o[0], o[4], a[1], a[2], a[0], a[4],
          a[0] / o[0] if o[0] > 0 else 0, a[1] // max(o[1], 1)))
PYEOF
done
echo "load average at end $(cut -d' ' -f1-3 /proc/loadavg)"
