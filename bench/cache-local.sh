#!/bin/bash
# usage: bench/cache-local.sh RAIDKIT
# The dispatch ceiling of the cache path (bench/RESULTS.md "Writeback cache over a local file vs
# raw fio"): the same file system (CACHE_DIR, the "local SSD") measured three ways, 4 KiB random
# at queue depth QD over a working set WSET that fits the cache:
#   raw     fio libaio O_DIRECT straight on a file in CACHE_DIR          (what the disk does)
#   linear  `raidkit serve` of a linear array over a file in CACHE_DIR   (NBD + member path)
#   cache   `raidkit serve --cache FILE` (CACHE_SIZE writeback, 4 KiB blocks, in CACHE_DIR) over
#           a linear array of a backing file in BACKING_DIR: randwrite, then two warm-up read
#           passes (a block is admitted on its 2nd miss), then randread (all hits)
# fio's nbd engine through raidkit's unix socket for the served rows. Prints one line per row,
# the ratios to raw, and the load average.
# Environment: RUNTIME [10] s  QD [32]  WSET [128M]  CACHE_SIZE [384M]  BACKING [1G]  WARM [40] s
#              CACHE_DIR [/var/tmp]  BACKING_DIR [/var/tmp]  ROWS [raw linear cache]
#              PREFILL [1] (0: the served files stay sparse; raw is always written first)
#              SERVE_ARGS [] (extra `serve` options)  PERF [0] (1: perf record -g of serve
#              during the cache row's randread and randwrite, into WORK_KEEP)  WORK_KEEP [] dir
set -u
. "$(dirname "$0")/lib.sh"
bench_binary "$@"
bench_need fio python3
RUNTIME=${RUNTIME:-10} QD=${QD:-32} WSET=${WSET:-128M} CACHE_SIZE=${CACHE_SIZE:-384M}
BACKING=${BACKING:-1G} WARM=${WARM:-40} ROWS=${ROWS:-raw linear cache} PERF=${PERF:-0}
PREFILL=${PREFILL:-1}
SERVE_ARGS=${SERVE_ARGS:-}
WORK=$(mktemp -d "${CACHE_DIR:-/var/tmp}/rk-cache-local.XXXXXX") || exit 1
BWORK=$(mktemp -d "${BACKING_DIR:-/var/tmp}/rk-cache-back.XXXXXX") || exit 1
RK_PID=""
cleanup() {
    [ -z "$RK_PID" ] || { kill -TERM "$RK_PID" 2>/dev/null; wait "$RK_PID" 2>/dev/null; }
    rm -rf "$WORK" "$BWORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# prefill FILE: write every byte of FILE once (1 MiB O_DIRECT writes), so later 4 KiB writes
# overwrite allocated blocks as on a block device (an allocating O_DIRECT write on ext4 takes the
# inode lock exclusively and converts extents: a file-system cost no SSD partition has).
prefill() {
    fio --name=fill --filename="$1" --rw=write --bs=1M --size="$(stat -c %s "$1")" --direct=1 \
        --ioengine=libaio --iodepth=4 >/dev/null 2>&1
}

# iops JSON RW: the job's IOPS from fio's JSON output.
iops() {
    python3 -c 'import json,sys; j=json.load(open(sys.argv[1]))["jobs"][0]; k="write" if sys.argv[2]=="randwrite" else "read"; print(round(j[k]["iops"]))' "$1" "$2" 2>/dev/null || echo 0
}

# fio_nbd NAME RW EXTRA...: one fio job against the running server; prints its IOPS.
fio_nbd() {
    local name=$1 rw=$2
    shift 2
    (cd "$WORK" && fio --name="$name" --ioengine=nbd --uri="nbd+unix:///?socket=$WORK/sock" \
        --rw="$rw" --bs=4k --iodepth="$QD" --size="$WSET" --randseed=1234 \
        --output-format=json --output="$WORK/$name.json" "$@" >/dev/null 2>"$WORK/$name.err") ||
        { cat "$WORK/$name.err" >&2; echo 0; return; }
    iops "$WORK/$name.json" "$rw"
}

# perf_start NAME / perf_stop: perf record -g of the server for the next phase (PERF=1).
perf_start() {
    [ "$PERF" = 1 ] || return 0
    perf record -F 999 -g -p "$RK_PID" -o "${WORK_KEEP:-$WORK}/perf.$1.data" \
        >/dev/null 2>&1 &
    PERF_PID=$!
}
perf_stop() {
    [ "$PERF" = 1 ] || return 0
    kill -INT "$PERF_PID" 2>/dev/null
    wait "$PERF_PID" 2>/dev/null
}

serve_start() {
    local label=$1
    shift
    rm -f "$WORK/sock"
    # shellcheck disable=SC2086  # SERVE_ARGS is a list of options
    "$RK" serve --listen "unix:$WORK/sock" --control "$WORK/ctl" $SERVE_ARGS "$@" \
        2>"$WORK/serve.$label.log" &
    RK_PID=$!
    wait_socket "$RK_PID" "$WORK/sock" "$WORK/serve.$label.log" || exit 1
}
serve_stop() {
    kill -TERM "$RK_PID"
    wait "$RK_PID"
    RK_PID=""
}

load0=$(cut -d' ' -f1-3 /proc/loadavg)
declare -A W R
for row in $ROWS; do
    case $row in
    raw)
        f=$WORK/raw.img
        truncate -s "$CACHE_SIZE" "$f"
        prefill "$f"
        for rw in randwrite randread; do
            log "raw: $rw ${RUNTIME}s"
            fio --name="raw-$rw" --filename="$f" --rw="$rw" --bs=4k --iodepth="$QD" \
                --size="$WSET" --direct=1 --ioengine=libaio --randseed=1234 --time_based \
                --runtime="$RUNTIME" --ramp_time=1 --output-format=json \
                --output="$WORK/raw-$rw.json" >/dev/null 2>&1
            [ "$rw" = randwrite ] && W[raw]=$(iops "$WORK/raw-$rw.json" $rw)
            [ "$rw" = randread ] && R[raw]=$(iops "$WORK/raw-$rw.json" $rw)
        done
        rm -f "$f"
        ;;
    linear)
        f=$WORK/linear.img
        truncate -s "$BACKING" "$f"
        [ "$PREFILL" = 1 ] && prefill "$f"
        "$RK" create --level linear "$f" >/dev/null 2>&1 || { echo "create $f failed" >&2; exit 1; }
        serve_start linear "$f"
        log "linear: randwrite ${RUNTIME}s"
        W[linear]=$(fio_nbd linear-w randwrite --time_based --runtime="$RUNTIME" --ramp_time=1)
        log "linear: randread ${RUNTIME}s"
        R[linear]=$(fio_nbd linear-r randread --time_based --runtime="$RUNTIME" --ramp_time=1)
        serve_stop
        rm -f "$f"
        ;;
    cache)
        b=$BWORK/backing.img cf=$WORK/cache.img
        truncate -s "$BACKING" "$b"
        truncate -s "$CACHE_SIZE" "$cf"
        [ "$PREFILL" = 1 ] && prefill "$b" && prefill "$cf"
        "$RK" create --level linear "$b" >/dev/null 2>&1 || { echo "create $b failed" >&2; exit 1; }
        "$RK" cache create --force --mode writeback --block 4K "$cf" "$b" >/dev/null 2>&1 ||
            { echo "cache create failed" >&2; exit 1; }
        serve_start cache --cache "$cf" "$b"
        log "cache: randwrite ${RUNTIME}s"
        perf_start cache-w
        W[cache]=$(fio_nbd cache-w randwrite --time_based --runtime="$RUNTIME" --ramp_time=1)
        perf_stop
        log "cache: warm-up (2 random read passes, at most ${WARM}s)"
        fio_nbd cache-warm randread --loops=2 --runtime="$WARM" >/dev/null
        log "cache: randread ${RUNTIME}s"
        perf_start cache-r
        R[cache]=$(fio_nbd cache-r randread --time_based --runtime="$RUNTIME" --ramp_time=1)
        perf_stop
        "$RK" status --json --control "$WORK/ctl" 2>/dev/null | python3 -c 'import json,sys
c=json.load(sys.stdin).get("cache") or {}
print("  cache: used_blocks %s dirty_blocks %s read_hit_ratio %s write_hit_ratio %s" % (c.get("used_blocks"), c.get("dirty_blocks"), c.get("read_hit_ratio"), c.get("write_hit_ratio")))'
        serve_stop
        rm -f "$b" "$cf"
        ;;
    *)
        echo "unknown row $row" >&2
        exit 2
        ;;
    esac
    echo "$row: 4K randwrite QD$QD ${W[$row]} IOPS, 4K randread QD$QD ${R[$row]} IOPS"
done
if [ -n "${W[raw]:-}" ]; then
    for row in $ROWS; do
        [ "$row" = raw ] && continue
        python3 -c 'import sys; a,b,c,d=map(float,sys.argv[2:]); print("%s / raw: randwrite %.2fx, randread %.2fx" % (sys.argv[1], c/max(a,1), d/max(b,1)))' \
            "$row" "${W[raw]}" "${R[raw]}" "${W[$row]}" "${R[$row]}"
    done
fi
echo "files in ${CACHE_DIR:-/var/tmp}, backing in ${BACKING_DIR:-/var/tmp}"
echo "load average before: $load0, after: $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) CPUs)"
