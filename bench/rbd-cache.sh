#!/bin/bash
# usage: bench/rbd-cache.sh RAIDKIT
# A writeback cache over a Ceph RBD image vs the RBD image alone (bench/RESULTS.md "RBD backing"):
# a one-node cluster (scripts/ceph-one-node.sh, by default a bluestore OSD on a local file, so
# an RBD write is committed to a disk as on a real cluster; on 127.0.0.1) holds a 1 GiB image,
# the array is linear over `rbd:rk/bench`. For each configuration, through `raidkit serve`
# (fio nbd engine, 4 KiB, queue depth QD, a working set of WSET that fits the cache):
#   randwrite  RUNTIME s of 4K random writes            -> write IOPS
#   warm-up    two passes of 4K random reads over the set (a read block is admitted on its 2nd
#              miss), at most WARM s
#   randread   RUNTIME s of 4K random reads             -> read IOPS after warm-up
# Configurations: rbd (serve rbd:rk/bench), cache (serve --cache FILE, a CACHE_SIZE writeback
# cache of 4 KiB blocks on a local file in CACHE_DIR), and the cache file alone (fio, O_DIRECT:
# the ceiling of the cached figures). Prints one line per figure, the ratios and the load
# average.
# Environment: RUNTIME [15] s  QD [32]  WSET [128M]  CACHE_SIZE [384M]  WARM [60] s
#              CACHE_DIR [/var/tmp] (the "local SSD")  WORK_DIR [/tmp] (the OSD's file)
#              CEPH_OBJECTSTORE [bluestore] (memstore: the OSD keeps objects in memory)
#              WAIT_QUIET [0] s  QUIET_LOAD [2]  PREFILL [1] (0: the cache file stays sparse)
set -u
. "$(dirname "$0")/lib.sh"
bench_binary "$@"
bench_need fio python3 rbd
SRC=$(cd "$(dirname "$0")/.." && pwd)
RUNTIME=${RUNTIME:-15} QD=${QD:-32} WSET=${WSET:-128M} CACHE_SIZE=${CACHE_SIZE:-384M}
WARM=${WARM:-60} WAIT_QUIET=${WAIT_QUIET:-0} QUIET_LOAD=${QUIET_LOAD:-2}
WORK=$(mktemp -d "${WORK_DIR:-/tmp}/rk-rbd-bench.XXXXXX") || exit 1
CACHE_FILE=$(mktemp "${CACHE_DIR:-/var/tmp}/rk-rbd-cache.XXXXXX") || exit 1
RK_PID=""
cleanup() {
    [ -z "$RK_PID" ] || { kill -TERM "$RK_PID" 2>/dev/null; wait "$RK_PID" 2>/dev/null; }
    bash "$SRC/scripts/ceph-one-node.sh" stop "$WORK/ceph" >/dev/null 2>&1
    rm -rf "$WORK" "$CACHE_FILE"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

export CEPH_OBJECTSTORE=${CEPH_OBJECTSTORE:-bluestore}
out=$(bash "$SRC/scripts/ceph-one-node.sh" start "$WORK/ceph" 2>&1) || { echo "$out" >&2; exit 1; }
export CEPH_CONF="$WORK/ceph/ceph.conf"
rbd create --size 1G --image-feature layering rk/bench || exit 1
R=rbd:rk/bench
"$RK" create --level linear "$R" >/dev/null 2>&1 || { echo "create over $R failed" >&2; exit 1; }

# fio_iops NAME RW EXTRA...: one fio job against the running server; prints its IOPS.
fio_iops() {
    local name=$1 rw=$2
    shift 2
    (cd "$WORK" && fio --name="$name" --ioengine=nbd --uri="nbd+unix:///?socket=$WORK/sock" \
        --rw="$rw" --bs=4k --iodepth="$QD" --size="$WSET" --randseed=1234 \
        --verify_state_save=0 --output-format=json --output="$WORK/$name.json" "$@" \
        >/dev/null 2>"$WORK/$name.err") || { cat "$WORK/$name.err" >&2; echo 0; return; }
    python3 -c 'import json,sys; j=json.load(open(sys.argv[1]))["jobs"][0]; k="write" if sys.argv[2]=="randwrite" else "read"; print(round(j[k]["iops"]))' \
        "$WORK/$name.json" "$rw"
}

# run LABEL SERVE_ARGS...: the three phases on one server; sets W_IOPS and R_IOPS.
run() {
    local label=$1
    shift
    rm -f "$WORK/sock"
    "$RK" serve --listen "unix:$WORK/sock" --control "$WORK/ctl" "$@" 2>"$WORK/serve.$label.log" &
    RK_PID=$!
    wait_socket "$RK_PID" "$WORK/sock" "$WORK/serve.$label.log" || exit 1
    wait_quiet
    log "$label: randwrite ${RUNTIME}s"
    W_IOPS=$(fio_iops "$label-w" randwrite --time_based --runtime="$RUNTIME" --ramp_time=2)
    log "$label: warm-up (2 random read passes, at most ${WARM}s)"
    fio_iops "$label-warm" randread --loops=2 --runtime="$WARM" >/dev/null
    log "$label: randread ${RUNTIME}s"
    R_IOPS=$(fio_iops "$label-r" randread --time_based --runtime="$RUNTIME")
    if [ "$label" = cache ]; then
        "$RK" status --json --control "$WORK/ctl" 2>/dev/null | python3 -c 'import json,sys
c=json.load(sys.stdin).get("cache") or {}
print("  cache: used_blocks %s dirty_blocks %s read_hit_ratio %s write_hit_ratio %s" % (c.get("used_blocks"), c.get("dirty_blocks"), c.get("read_hit_ratio"), c.get("write_hit_ratio")))'
    fi
    kill -TERM "$RK_PID"
    wait "$RK_PID"
    RK_PID=""
    echo "$label: 4K randwrite QD$QD ${W_IOPS} IOPS, 4K randread QD$QD after warm-up ${R_IOPS} IOPS (working set $WSET)"
}

load0=$(cut -d' ' -f1-3 /proc/loadavg)
run rbd "$R"
RW=$W_IOPS RR=$R_IOPS
truncate -s "$CACHE_SIZE" "$CACHE_FILE"
# Every byte of the cache file written once (PREFILL=1, the default): a cache write then
# overwrites allocated blocks as on an SSD partition, instead of an allocating O_DIRECT write
# (ext4: exclusive inode lock and an extent conversion per new block; bench/RESULTS.md
# "Writeback cache over a local file vs raw fio").
[ "${PREFILL:-1}" = 1 ] && fio --name=fill --filename="$CACHE_FILE" --rw=write --bs=1M \
    --size="$CACHE_SIZE" --direct=1 --ioengine=libaio --iodepth=4 >/dev/null 2>&1
# The cache device alone (fio on the cache file, O_DIRECT, the same 4K pattern over the working
# set): the ceiling of the cached figures, whatever the cache does.
dev_iops() {
    (cd "$WORK" && fio --name="dev-$1" --filename="$CACHE_FILE" --rw="$1" --bs=4k --iodepth="$QD" \
        --size="$WSET" --direct=1 --ioengine=io_uring --randseed=1234 --time_based \
        --runtime="$RUNTIME" --output-format=json --output="$WORK/dev-$1.json" >/dev/null 2>&1) ||
        { echo 0; return; }
    python3 -c 'import json,sys; j=json.load(open(sys.argv[1]))["jobs"][0]; print(round(j["write" if sys.argv[2]=="randwrite" else "read"]["iops"]))' \
        "$WORK/dev-$1.json" "$1"
}
log "cache device alone: randwrite, randread ${RUNTIME}s each"
DW=$(dev_iops randwrite) DR=$(dev_iops randread)
echo "cache device alone (fio io_uring O_DIRECT on the cache file): 4K randwrite QD$QD ${DW} IOPS, 4K randread QD$QD ${DR} IOPS"
"$RK" cache create --force --mode writeback --block 4K "$CACHE_FILE" "$R" >/dev/null 2>&1 ||
    { echo "cache create failed" >&2; exit 1; }
run cache --cache "$CACHE_FILE" "$R"
python3 -c 'import sys; a,b,c,d,e,f=map(float,sys.argv[1:]); print("ratio cache/rbd: randwrite %.1fx, randread %.1fx\nratio cache/cache device: randwrite %.2fx, randread %.2fx (the ceiling of cache/rbd here: %.1fx, %.1fx)" % (c/max(a,1), d/max(b,1), c/max(e,1), d/max(f,1), e/max(a,1), f/max(b,1)))' \
    "$RW" "$RR" "$W_IOPS" "$R_IOPS" "$DW" "$DR"
echo "objectstore $CEPH_OBJECTSTORE, cache file in ${CACHE_DIR:-/var/tmp}"
echo "load average before: $load0, after: $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) CPUs)"
