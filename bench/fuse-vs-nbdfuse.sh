#!/usr/bin/env bash
# Filesystem-path benchmark (bench/RESULTS.md "FUSE export"): ext4 through three paths, fio on a
# file inside the filesystem (direct I/O, libaio, queue depth 32):
#   fuse     raidkit fuse (one-member linear volume) -> losetup --direct-io=on -> ext4
#   nbdfuse  raidkit serve -> nbdfuse -> losetup --direct-io=on -> ext4
#   plain    a plain file (same directory as the member) -> losetup --direct-io=on -> ext4
# Root only (losetup, mount). Usage: bench/fuse-vs-nbdfuse.sh RAIDKIT_BINARY
# Environment: ROUNDS [2]  RUNTIME [10] s  SIZE [1G] member/loop file  FIO_SIZE [256M]
#   DIR [/tmp/rk-fsbench]  (member files live there; tmpfs /dev/shm isolates the disk)
#   FUSE_B_ENV [] / FUSE_B_BIN []: a second raidkit fuse path "fuse-b" in the same rotation, with
#     these environment assignments and/or another binary (an older build): an A/B of the FUSE
#     export; the summary adds fuse-b and fuse/fuse-b. Paths rotate who goes first per round.
# Prints one line per path and workload: MB/s (10^6 bytes/s) mean over the rounds, and the ratios
# fuse/nbdfuse and fuse/plain.
set -uo pipefail
if [ $# -ne 1 ] || [ ! -x "$1" ]; then
    echo "usage: $0 RAIDKIT_BINARY" >&2
    exit 2
fi
[ "$(id -u)" = 0 ] || { echo "$0: needs root (losetup, mount)" >&2; exit 2; }
RK=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
ROUNDS=${ROUNDS:-2}
RUNTIME=${RUNTIME:-10}
SIZE=${SIZE:-1G}
FIO_SIZE=${FIO_SIZE:-256M}
DIR=${DIR:-/tmp/rk-fsbench}
PY=/usr/bin/python3
export PATH=$PATH:/usr/sbin:/sbin

PIDS=()
LOOP=""
cleanup() {
    mountpoint -q "$DIR/fs" && umount "$DIR/fs"
    [ -n "$LOOP" ] && losetup -d "$LOOP" 2>/dev/null
    mountpoint -q "$DIR/exp" && fusermount3 -u "$DIR/exp"
    local p
    for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
    for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
    PIDS=()
}
trap cleanup EXIT
rm -rf "$DIR" && mkdir -p "$DIR/exp" "$DIR/fs" || exit 1

wait_file() { # FILE: wait (10 s) until FILE exists with a non-zero size
    local i
    for i in $(seq 100); do [ -s "$1" ] && return 0; sleep 0.1; done
    echo "$0: $1 did not appear" >&2
    return 1
}

# setup PATHNAME: start the export of PATHNAME, sets FILE (what losetup gets).
setup() {
    case $1 in
    fuse)
        "$RK" fuse "$DIR/exp" "$DIR/m0" 2>"$DIR/fuse.log" &
        PIDS+=($!)
        FILE=$DIR/exp/volume
        ;;
    fuse-b)
        # shellcheck disable=SC2086
        env $FUSE_B_ENV "$RK_B" fuse "$DIR/exp" "$DIR/m0" 2>"$DIR/fuse-b.log" &
        PIDS+=($!)
        FILE=$DIR/exp/volume
        ;;
    nbdfuse)
        "$RK" serve --listen "unix:$DIR/sock" "$DIR/m0" 2>"$DIR/serve.log" &
        PIDS+=($!)
        for _ in $(seq 100); do [ -S "$DIR/sock" ] && break; sleep 0.1; done
        nbdfuse "$DIR/exp/nbd" --unix "$DIR/sock" 2>"$DIR/nbdfuse.log" &
        PIDS+=($!)
        FILE=$DIR/exp/nbd
        ;;
    plain) FILE=$DIR/plain.img ;;
    esac
    wait_file "$FILE" || return 1
    LOOP=$(losetup --direct-io=on -f --show "$FILE") || return 1
    mkfs.ext4 -q -F "$LOOP" && mount "$LOOP" "$DIR/fs"
}

teardown() {
    umount "$DIR/fs"
    losetup -d "$LOOP"
    LOOP=""
    if mountpoint -q "$DIR/exp"; then
        # nbdfuse: unmount it first; raidkit fuse: unmount = clean stop
        fusermount3 -u "$DIR/exp"
    fi
    cleanup
    rm -f "$DIR/sock"
}

# run_fio NAME RW BS: MB/s of one fio run on a file in the mounted filesystem.
run_fio() {
    fio --name="$1" --directory="$DIR/fs" --filename=fio.dat --size="$FIO_SIZE" --rw="$2" \
        --bs="$3" --direct=1 --ioengine=libaio --iodepth=32 --time_based --runtime="$RUNTIME" \
        --ramp_time=2 --output-format=json --output="$DIR/fio.json" >/dev/null 2>&1 || return 1
    "$PY" -c 'import json,sys; j=json.load(open(sys.argv[1]))["jobs"][0]
print("%.1f" % ((j["read"]["io_bytes"]+j["write"]["io_bytes"])/1e6/(max(j["read"]["runtime"], j["write"]["runtime"])/1000.0)))' \
        "$DIR/fio.json"
}

WL=("randrw16k randrw 16k" "seqwrite1m write 1m" "seqread1m read 1m")
PATHS=(fuse nbdfuse plain)
RK_B=$RK
if [ -n "${FUSE_B_ENV:-}${FUSE_B_BIN:-}" ]; then
    [ -n "${FUSE_B_BIN:-}" ] && RK_B=$(cd "$(dirname "$FUSE_B_BIN")" && pwd)/$(basename "$FUSE_B_BIN")
    [ -x "$RK_B" ] || { echo "$0: FUSE_B_BIN $RK_B is not executable" >&2; exit 2; }
    PATHS=(fuse fuse-b nbdfuse plain)
    echo "# fuse-b: ${FUSE_B_ENV:-(no extra environment)} $RK_B"
fi
declare -A SUM
echo "# $(date -u +%FT%TZ) load: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores, fio $(fio --version)"
for ((r = 1; r <= ROUNDS; r++)); do
    # who goes first rotates per round, so drift in the machine hits every path alike
    ORDER=("${PATHS[@]:$(((r - 1) % ${#PATHS[@]}))}" "${PATHS[@]:0:$(((r - 1) % ${#PATHS[@]}))}")
    for p in "${ORDER[@]}"; do
        rm -f "$DIR/m0" "$DIR/plain.img"
        truncate -s "$SIZE" "$DIR/m0" "$DIR/plain.img"
        [ $p = plain ] || "$RK" create --level linear "$DIR/m0" >/dev/null 2>&1 || exit 1
        setup $p || { echo "setup $p failed" >&2; cat "$DIR"/*.log >&2; exit 1; }
        for w in "${WL[@]}"; do
            read -r name rw bs <<<"$w"
            v=$(run_fio "$name" "$rw" "$bs") || { echo "fio $name on $p failed" >&2; exit 1; }
            echo "round $r  $p  $name  $v MB/s"
            SUM[$p.$name]=$(awk -v a="${SUM[$p.$name]:-0}" -v b="$v" 'BEGIN{print a+b}')
        done
        teardown
    done
done
echo
printf '%-12s %10s %10s %10s %12s %12s' workload fuse nbdfuse plain fuse/nbdfuse fuse/plain
[ ${#PATHS[@]} = 4 ] && printf ' %10s %12s' fuse-b fuse/fuse-b
echo
for w in "${WL[@]}"; do
    read -r name _ _ <<<"$w"
    awk -v n="$name" -v r="$ROUNDS" -v f="${SUM[fuse.$name]}" -v b="${SUM[nbdfuse.$name]}" \
        -v p="${SUM[plain.$name]}" -v fb="${SUM[fuse-b.$name]:-}" 'BEGIN {
        printf "%-12s %10.1f %10.1f %10.1f %11.2fx %11.2fx", n, f/r, b/r, p/r, (b ? f/b : 0),
            (p ? f/p : 0)
        if (fb != "") printf " %10.1f %11.2fx", fb/r, (fb ? f/fb : 0)
        printf "\n" }'
done
