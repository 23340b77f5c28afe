#!/usr/bin/env bash
# Kernel-RAID peer rows, like for like (issue 13 item 3; docs/BENCHMARKS.md "Kernel peer rows",
# bench/RESULTS.md): for every level, the same member files on tmpfs carry in turn
#   btrfs      kernel btrfs RAID (mkfs.btrfs -d PROFILE -m PROFILE; raid5/6: metadata raid1) over
#              one loop device per member (--direct-io=on), fio on a file in the mounted fs
#   fuse+loop  raidkit over the same member files, exported by `raidkit fuse`, one loop device
#              (--direct-io=on) over the exported file, fio on /dev/loopN
#   nbd        raidkit serve, fio's nbd engine (the other bench rows' path)
# with the same fio job (16K, iodepth 64, randread / randwrite / read / write, as seed 000's
# kernel btrfs rows). raidkit rows also give the server's CPU per I/O (utime + stime of the
# raidkit process over the run).
#
# Usage: bench/kernel-peer.sh RAIDKIT_BINARY
# Environment (defaults in brackets): MEMBERS [4]  MEMBER_SIZE [1280M]  FSIZE [192M] fio file
#   or region size  RUNTIME [5] s  ROUNDS [1]  CHUNK [64K]  LEVELS [raid0 raid1 raid10 raid5
#   raid6]  WORKLOADS [randread randwrite read write]  SHM_DIR [/dev/shm]
#   OUT_DIR [<repo>/bench/out/kernel-peer-TIME]
# raidkit raid1 over N members is an N-way mirror; its btrfs row uses raid1c3/raid1c4 for 3/4
# members (raid1 for 2), so both keep the same number of copies. Needs root, losetup, mkfs.btrfs,
# the btrfs module, /dev/fuse, fio (libaio and nbd engines); exits 77 naming what is missing.
set -uo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bench_binary "$@"
REPO=$(cd "$(dirname "$0")/.." && pwd)
MEMBERS=${MEMBERS:-4}
MEMBER_SIZE=${MEMBER_SIZE:-1280M}
FSIZE=${FSIZE:-192M}
RUNTIME=${RUNTIME:-5}
ROUNDS=${ROUNDS:-1}
CHUNK=${CHUNK:-64K}
SHM_DIR=${SHM_DIR:-/dev/shm}
read -r -a LEVELS <<<"${LEVELS:-raid0 raid1 raid10 raid5 raid6}"
read -r -a WLS <<<"${WORKLOADS:-randread randwrite read write}"
OUT_DIR=${OUT_DIR:-$REPO/bench/out/kernel-peer-$(date +%Y%m%d-%H%M%S)}
PY=/usr/bin/python3

skip() { echo "kernel-peer: skipped: $*" >&2; exit 77; }
[ "$(id -u)" = 0 ] || skip "needs root (loop devices, mount)"
for t in losetup mkfs.btrfs mount umount fio fusermount3 "$PY"; do
    command -v "$t" >/dev/null 2>&1 || skip "$t is missing (scripts/install-deps.sh)"
done
[ -c /dev/fuse ] || skip "/dev/fuse is missing"
grep -qw nbd <<<"$(fio --enghelp 2>/dev/null)" || skip "fio has no nbd engine"
grep -qw btrfs /proc/filesystems || modprobe btrfs 2>/dev/null || skip "no btrfs in this kernel"

bench_workdir kernel-peer
mkdir -p "$OUT_DIR" "$WORK/mnt" "$WORK/fuse" || exit 1
LOOPS=()
FUSE_PID=""
peer_cleanup() {
    local l
    mountpoint -q "$WORK/mnt" && umount "$WORK/mnt"
    for l in "${LOOPS[@]}"; do losetup -d "$l" 2>/dev/null; done
    LOOPS=()
    if [ -n "$FUSE_PID" ]; then
        kill -TERM "$FUSE_PID" 2>/dev/null
        wait "$FUSE_PID" 2>/dev/null
        FUSE_PID=""
    fi
    bench_cleanup
}
trap peer_cleanup EXIT

MEM=()
for i in $(seq 0 $((MEMBERS - 1))); do
    MEM+=("$WORK/m$i")
done
# zero-filled members: no run pays for tmpfs page allocation, and raidkit's mirrors and parity
# are consistent as they are (create --assume-clean)
fill_members() {
    local m
    for m in "${MEM[@]}"; do
        rm -f "$m"
        truncate -s "$MEMBER_SIZE" "$m" || exit 1
        dd if=/dev/zero of="$m" bs=1M count=$(($(stat -c %s "$m") / 1048576)) conv=notrunc \
            status=none || exit 1
    done
}

btrfs_profile() { # LEVEL -> data profile
    case $1 in
    raid1) case $MEMBERS in 2) echo raid1 ;; 3) echo raid1c3 ;; *) echo raid1c4 ;; esac ;;
    *) echo "$1" ;;
    esac
}

cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
TCK=$(getconf CLK_TCK)
RAW=$OUT_DIR/raw.tsv
printf 'level\trow\tworkload\tround\tmbs\tiops\tios\tcpu_s\n' >"$RAW"

# run_fio LEVEL ROW WORKLOAD ROUND PID|- FIO_ARGS...: one measured run, a line in $RAW
run_fio() {
    local lv=$1 row=$2 w=$3 r=$4 pid=$5 c0=0 c1=0
    shift 5
    local json=$OUT_DIR/$lv-$row-$w-r$r.json
    [ "$pid" != - ] && c0=$(cpu_ticks "$pid")
    fio --name="$w" --rw="$w" --bs=16k --iodepth=64 --size="$FSIZE" --time_based \
        --runtime="$RUNTIME" --randrepeat=0 --norandommap --output-format=json \
        --output="$json" "$@" >"$json.err" 2>&1 || {
        log "fio failed ($lv $row $w): $(tail -n 5 "$json.err")"
        exit 1
    }
    [ "$pid" != - ] && c1=$(cpu_ticks "$pid")
    "$PY" - "$json" "$lv" "$row" "$w" "$r" "$(((c1 - c0)))" "$TCK" >>"$RAW" <<'EOF'
import json, sys
text = open(sys.argv[1]).read()
j = json.loads(text[text.index("{"):])["jobs"][0]
d = j["read"] if sys.argv[4] in ("read", "randread") else j["write"]
print("%s\t%s\t%s\t%s\t%.1f\t%.0f\t%d\t%.3f" % (sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5],
      d["bw_bytes"] / 1e6, d["iops"], d["total_ios"], int(sys.argv[6]) / int(sys.argv[7])))
EOF
    log "$lv $row $w: $(tail -n 1 "$RAW" | cut -f5) MB/s"
}

# lay down the fio file / region first (reads then read data, not holes)
prefill() { fio --name=fill --rw=write --bs=1M --iodepth=8 --size="$FSIZE" "$@" \
    --output=/dev/null >/dev/null 2>&1; }

row_btrfs() { # LEVEL ROUND
    local lv=$1 r=$2 m l prof w
    prof=$(btrfs_profile "$lv")
    fill_members
    for m in "${MEM[@]}"; do
        l=$(losetup --direct-io=on -f --show "$m") || { log "losetup $m failed"; exit 1; }
        LOOPS+=("$l")
    done
    local meta=$prof
    case $prof in raid5 | raid6) meta=raid1 ;; esac
    mkfs.btrfs -f -d "$prof" -m "$meta" "${LOOPS[@]}" >"$OUT_DIR/mkfs-$lv.txt" 2>&1 || {
        log "mkfs.btrfs -d $prof failed: $(tail -n 3 "$OUT_DIR/mkfs-$lv.txt")"
        exit 1
    }
    mount -t btrfs "${LOOPS[0]}" "$WORK/mnt" || exit 1
    local f=$WORK/mnt/fio.dat
    prefill --ioengine=libaio --direct=1 --filename="$f"
    for w in "${WLS[@]}"; do
        run_fio "$lv" btrfs "$w" "$r" - --ioengine=libaio --direct=1 --filename="$f"
    done
    umount "$WORK/mnt" || exit 1
    for l in "${LOOPS[@]}"; do losetup -d "$l"; done
    LOOPS=()
}

rk_create() { # LEVEL
    local ac=(--assume-clean)
    [ "$1" = raid0 ] && ac=()
    fill_members
    "$RK" create --force --level "$1" --chunk "$CHUNK" "${ac[@]}" "${MEM[@]}" \
        >"$OUT_DIR/create-$1.txt" 2>&1 || { log "create $1 failed: $(cat "$OUT_DIR/create-$1.txt")"; exit 1; }
}

row_fuse() { # LEVEL ROUND
    local lv=$1 r=$2 w l
    rk_create "$lv"
    "$RK" fuse "$WORK/fuse" --name vol "${MEM[@]}" 2>"$OUT_DIR/fuse-$lv-r$r.log" &
    FUSE_PID=$!
    for _ in $(seq 100); do
        [ -f "$WORK/fuse/vol" ] && break
        kill -0 "$FUSE_PID" 2>/dev/null || { log "raidkit fuse exited: $(tail -n 5 "$OUT_DIR/fuse-$lv-r$r.log")"; exit 1; }
        sleep 0.1
    done
    l=$(losetup --direct-io=on -f --show "$WORK/fuse/vol") || { log "losetup on the FUSE file failed"; exit 1; }
    LOOPS+=("$l")
    prefill --ioengine=libaio --direct=1 --filename="$l"
    for w in "${WLS[@]}"; do
        run_fio "$lv" fuse+loop "$w" "$r" "$FUSE_PID" --ioengine=libaio --direct=1 --filename="$l"
    done
    losetup -d "$l"
    LOOPS=()
    kill -TERM "$FUSE_PID"
    wait "$FUSE_PID" || { log "raidkit fuse exited $? ($lv)"; exit 1; }
    FUSE_PID=""
}

row_nbd() { # LEVEL ROUND
    local lv=$1 r=$2 w sock=$WORK/nbd.sock
    rk_create "$lv"
    rm -f "$sock"
    "$RK" serve --listen "unix:$sock" "${MEM[@]}" 2>"$OUT_DIR/serve-$lv-r$r.log" &
    RK_PID=$!
    wait_socket "$RK_PID" "$sock" "$OUT_DIR/serve-$lv-r$r.log" || exit 1
    local uri="nbd+unix:///?socket=$sock"
    prefill --ioengine=nbd --uri="$uri"
    for w in "${WLS[@]}"; do
        run_fio "$lv" nbd "$w" "$r" "$RK_PID" --ioengine=nbd --uri="$uri"
    done
    kill -TERM "$RK_PID"
    wait "$RK_PID" || { log "raidkit serve exited $? ($lv)"; exit 1; }
    RK_PID=""
}

LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
log "$MEMBERS members x $MEMBER_SIZE on $SHM_DIR, fio 16K iodepth 64, ${RUNTIME}s per run," \
    "$ROUNDS round(s), levels ${LEVELS[*]}"
ROWS=(btrfs fuse+loop nbd)
for r in $(seq 1 "$ROUNDS"); do
    for lv in "${LEVELS[@]}"; do
        rot=$(((r - 1) % 3)) # who goes first rotates per round
        for k in 0 1 2; do
            case ${ROWS[$(((k + rot) % 3))]} in
            btrfs) row_btrfs "$lv" "$r" ;;
            fuse+loop) row_fuse "$lv" "$r" ;;
            nbd) row_nbd "$lv" "$r" ;;
            esac
        done
    done
done
LOAD_END=$(cut -d' ' -f1-3 /proc/loadavg)

{
    echo "kernel peer rows: $MEMBERS members x $MEMBER_SIZE on $SHM_DIR (zero-filled), chunk $CHUNK," \
        "fio 16K iodepth 64 over $FSIZE, ${RUNTIME}s, median of $ROUNDS round(s)"
    echo "date $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, kernel $(uname -r)," \
        "$("$RK" --version 2>/dev/null), $(fio --version), $(mkfs.btrfs --version 2>&1 | head -n 1)"
    echo "load average at start $LOAD_START, at end $LOAD_END"
    echo
    "$PY" - "$RAW" "$MEMBERS" <<'EOF'
import sys, statistics, collections
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])][1:]
d = collections.OrderedDict()
for lv, row, w, r, mbs, iops, ios, cpu in rows:
    d.setdefault(lv, collections.OrderedDict()).setdefault(w, {}).setdefault(row, []).append(
        (float(mbs), int(ios), float(cpu)))
med = lambda v: statistics.median(v)
print("%-7s %-9s %10s %14s %10s %9s %9s %12s %12s" % ("level", "workload", "btrfs MB/s",
      "fuse+loop MB/s", "nbd MB/s", "fuse/btr", "nbd/btr", "fuse cpu us", "nbd cpu us"))
for lv, ws in d.items():
    for w, rs in ws.items():
        b = med([x[0] for x in rs.get("btrfs", [(0, 0, 0)])])
        f = med([x[0] for x in rs.get("fuse+loop", [(0, 0, 0)])])
        n = med([x[0] for x in rs.get("nbd", [(0, 0, 0)])])
        cu = lambda row: med([x[2] * 1e6 / x[1] for x in rs.get(row, []) if x[1]] or [0])
        print("%-7s %-9s %10.1f %14.1f %10.1f %9.2f %9.2f %12.1f %12.1f" % (lv, w, b, f, n,
              f / b if b else 0, n / b if b else 0, cu("fuse+loop"), cu("nbd")))
print()
print("btrfs: loop --direct-io=on per member, btrfs RAID (CoW, data checksums), fio libaio direct=1")
print("  on a file in it. fuse+loop: raidkit fuse, loop --direct-io=on over the exported file,")
print("  fio libaio direct=1 on the loop device (no file system). nbd: raidkit serve, fio nbd")
print("  engine. cpu us: raidkit process utime+stime per fio request. raid1 btrfs row: raid1cN")
print("  (same number of copies as raidkit's N-way raid1). docs/BENCHMARKS.md \"Kernel peer rows\".")
EOF
} | tee "$OUT_DIR/results.txt"
log "raw: $RAW, fio JSON and logs: $OUT_DIR"
