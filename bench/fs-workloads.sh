#!/usr/bin/env bash
# Filesystem workloads of the seed studies (docs/BENCHMARKS.md "Filesystem workloads"): ext4 made
# on a raidkit volume through `raidkit fuse` + `losetup --direct-io=on`, and the same workloads on
# ext4 over a plain loop file ("plain", the peer row). Each tool runs on a fresh filesystem;
# after each, the filesystem is unmounted and checked with `e2fsck -fn` (a corrupted filesystem
# fails the run, exit 1). Rows print: measured raidkit | measured plain | seed 000 figure (btrfs
# "Single Disk") | seed 003 figure (ext4, "120GB Mushkin SSD"), with units.
#
# Usage: bench/fs-workloads.sh RAIDKIT_BINARY          (root: losetup, mount)
# Environment (defaults sized for 2 cores):
#   LEVEL [raid10] MEMBERS [4] MEMBER_SIZE [512M] EMULATE [] (e.g. sata-ssd-2014: members timed
#   like the seed's disks)  DIR [/tmp/rk-fswl]  SQLITE_N [500] inserts  FSMARK_N [64] files
#   POSTMARK_TX [2000] transactions  FIO_RUNTIME [8] s  BONNIE_MB [256] (bonnie++ -s; -r half)
#   TOOLS [sqlite,fsmark,postmark,fio,iozone-eq,bonnie]; seed 001's bonnie++ table was btrfs RAID-1
#   over two partitions of one SSD: LEVEL=raid1 MEMBERS=2 is that configuration.
# Rows of the seeds not run here, and why: docs/BENCHMARKS.md.
set -uo pipefail
if [ $# -ne 1 ] || [ ! -x "$1" ]; then
    echo "usage: $0 RAIDKIT_BINARY" >&2
    exit 2
fi
[ "$(id -u)" = 0 ] || { echo "$0: needs root (losetup, mount)" >&2; exit 2; }
RK=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
LEVEL=${LEVEL:-raid10}
MEMBERS=${MEMBERS:-4}
MEMBER_SIZE=${MEMBER_SIZE:-512M}
EMULATE=${EMULATE:-}
DIR=${DIR:-/tmp/rk-fswl}
SQLITE_N=${SQLITE_N:-500}
FSMARK_N=${FSMARK_N:-64}
POSTMARK_TX=${POSTMARK_TX:-2000}
FIO_RUNTIME=${FIO_RUNTIME:-8}
TOOLS=${TOOLS:-sqlite,fsmark,postmark,fio,iozone-eq,bonnie}
BONNIE_MB=${BONNIE_MB:-256}
PY=/usr/bin/python3
export PATH=$PATH:/usr/sbin:/sbin

FUSE_PID=""
LOOP=""
cleanup() {
    mountpoint -q "$DIR/fs" && umount "$DIR/fs"
    [ -n "$LOOP" ] && losetup -d "$LOOP" 2>/dev/null
    LOOP=""
    if [ -n "$FUSE_PID" ]; then
        mountpoint -q "$DIR/exp" && fusermount3 -u "$DIR/exp"
        wait "$FUSE_PID" || echo "$0: raidkit fuse exited with status $?" >&2
        FUSE_PID=""
    fi
}
trap cleanup EXIT
rm -rf "$DIR" && mkdir -p "$DIR/exp" "$DIR/fs" || exit 1

# fs_up PATH: fresh members (raidkit) or plain file, export, loop, mkfs.ext4, mount on $DIR/fs.
fs_up() {
    local f i m=()
    rm -f "$DIR"/m* "$DIR/plain.img"
    if [ "$1" = raidkit ]; then
        for ((i = 0; i < MEMBERS; i++)); do
            truncate -s "$MEMBER_SIZE" "$DIR/m$i" && m+=("$DIR/m$i")
        done
        "$RK" create --level "$LEVEL" "${m[@]}" >/dev/null 2>"$DIR/create.err" ||
            { cat "$DIR/create.err" >&2; return 1; }
        "$RK" fuse "$DIR/exp" ${EMULATE:+--emulate "$EMULATE"} "${m[@]}" 2>>"$DIR/fuse.log" &
        FUSE_PID=$!
        f=$DIR/exp/volume
        for i in $(seq 100); do [ -s "$f" ] && break; sleep 0.1; done
    else
        truncate -s "$MEMBER_SIZE" "$DIR/plain.img"
        f=$DIR/plain.img
    fi
    LOOP=$(losetup --direct-io=on -f --show "$f") || return 1
    mkfs.ext4 -q -F "$LOOP" && mount "$LOOP" "$DIR/fs"
}

# fs_down: unmount, e2fsck -fn (exit 1 on any problem), detach, stop the export.
fs_down() {
    umount "$DIR/fs" || return 1
    if ! e2fsck -fn "$LOOP" >"$DIR/fsck.txt" 2>&1; then
        echo "$0: e2fsck -fn found problems after $CUR: $(tail -n 5 "$DIR/fsck.txt")" >&2
        exit 1
    fi
    cleanup
}

# Each workload prints one number on stdout.
wl_sqlite() { # seconds for SQLITE_N single-statement transactions (INSERT into an indexed table)
    "$PY" - "$DIR/fs/t.db" "$SQLITE_N" <<'EOF'
import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("PRAGMA synchronous=FULL")
db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, k TEXT, v TEXT)")
db.execute("CREATE INDEX tk ON t(k)")
t0 = time.monotonic()
for i in range(int(sys.argv[2])):
    db.execute("INSERT INTO t (k, v) VALUES (?, ?)", ("key%08d" % (i * 7919 % 1000003), "x" * 100))
print("%.2f" % (time.monotonic() - t0))
EOF
}
wl_fsmark() { # Files/s; $1 = extra fs_mark options (run in $DIR: fs_mark writes fs_log.txt in its cwd)
    (cd "$DIR" && fs_mark -d "$DIR/fs/fsm" -s 1048576 "$@") >"$DIR/fsmark.txt" 2>&1 || return 1
    awk '$1 ~ /^[0-9]+$/ && NF >= 5 { v = $4 } END { if (v == "") exit 1; print v }' "$DIR/fsmark.txt"
}
wl_postmark() { # transactions/s
    printf 'set location %s\nset transactions %s\nset size 5120 524288\nset number 500\nrun\nquit\n' \
        "$DIR/fs" "$POSTMARK_TX" >"$DIR/pm.cfg"
    postmark "$DIR/pm.cfg" >"$DIR/postmark.txt" 2>&1 || return 1
    grep -Eo '\(([0-9.]+) per second\)' "$DIR/postmark.txt" | head -n 1 | grep -Eo '[0-9.]+'
}
wl_fio() { # MB/s; $1 rw $2 bs $3 extra
    fio --name=f --directory="$DIR/fs" --filename=fio.dat --size=256M --rw="$1" --bs="$2" \
        --ioengine=libaio --iodepth=32 --time_based --runtime="$FIO_RUNTIME" $3 \
        --output-format=json --output="$DIR/fio.json" >/dev/null 2>&1 || return 1
    "$PY" -c 'import json,sys; j=json.load(open(sys.argv[1]))["jobs"][0]
b=j["read"]["io_bytes"]+j["write"]["io_bytes"]; t=max(j["read"]["runtime"], j["write"]["runtime"])
print("%.1f" % (b/1e6/(t/1000.0)))' "$DIR/fio.json"
}

# bonnie_rows: bonnie++ once per path (block output, rewrite, block input, seeks; -f skips the
# per-character tests), four rows beside seed 001 (btrfs RAID-1 over two partitions of one SSD).
# "+++++" is bonnie++'s own mark for a phase too short to time.
bonnie_rows() {
    local p csv=() i
    for p in raidkit plain; do
        CUR="bonnie++ on $p"
        fs_up "$p" || { echo "$0: setup $p failed" >&2; exit 1; }
        mkdir -p "$DIR/fs/bon"
        csv+=("$(bonnie++ -d "$DIR/fs/bon" -s "$BONNIE_MB" -r $((BONNIE_MB / 2)) -n 0 -f -u root \
            -q 2>"$DIR/bonnie.err" | tail -n 1)")
        fs_down
    done
    local names=("bonnie++ ${BONNIE_MB}M block output (seed: 2G)" "bonnie++ ${BONNIE_MB}M rewrite"
        "bonnie++ ${BONNIE_MB}M block input" "bonnie++ ${BONNIE_MB}M random seeks")
    local fields=(12 14 18 20) seeds=(28299 18633 85702 3094) units=(K/s K/s K/s seeks/s)
    for i in 0 1 2 3; do
        printf '%-44s %10s %10s %9s %9s  %s\n' "${names[$i]}" \
            "$(cut -d, -f"${fields[$i]}" <<<"${csv[0]}")" "$(cut -d, -f"${fields[$i]}" <<<"${csv[1]}")" \
            "s001:${seeds[$i]}" - "${units[$i]}"
    done
}

# row NAME UNIT SEED000 SEED003 CMD...: run CMD on raidkit and on plain, print the row.
row() {
    local name=$1 unit=$2 s0=$3 s3=$4 p v
    shift 4
    local out=()
    for p in raidkit plain; do
        CUR="$name on $p"
        fs_up "$p" || { echo "$0: setup $p failed: $(tail -n 3 "$DIR/fuse.log")" >&2; exit 1; }
        v=$("$@") || v=error
        fs_down
        out+=("$v")
    done
    printf '%-44s %10s %10s %9s %9s  %s\n' "$name" "${out[0]}" "${out[1]}" "$s0" "$s3" "$unit"
}

has() { [[ ",$TOOLS," == *",$1,"* ]]; }
echo "# $(date -u +%FT%TZ) $LEVEL x$MEMBERS of $MEMBER_SIZE${EMULATE:+ emulate $EMULATE}, load $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores"
printf '%-44s %10s %10s %9s %9s  %s\n' workload raidkit plain seed000 seed003 unit
if has sqlite; then
    row "SQLite-equivalent: $SQLITE_N INSERT txns (s)" "s, lower better" - 680.90 wl_sqlite
fi
if has fsmark && command -v fs_mark >/dev/null; then
    row "FS-Mark $FSMARK_N files 1MB (seed: 1000)" "Files/s" 40.53 20.23 wl_fsmark -n "$FSMARK_N"
    row "FS-Mark $FSMARK_N files 1MB 4 threads (seed: 5000)" "Files/s" 79.93 70.27 \
        wl_fsmark -n $((FSMARK_N / 4)) -t 4
    row "FS-Mark $FSMARK_N files 32 dirs 1MB (seed: 4000)" "Files/s" 40.80 20.03 \
        wl_fsmark -n "$FSMARK_N" -D 32
elif has fsmark; then
    echo "FS-Mark: fs_mark not installed (Debian package fsmark) - rows skipped"
fi
if has postmark && command -v postmark >/dev/null; then
    row "PostMark $POSTMARK_TX txns (seed: PTS count)" "TPS" - 4777 wl_postmark
elif has postmark; then
    echo "PostMark: postmark not installed (Debian package postmark) - row skipped"
fi
if has fio; then
    row "fio 4K random read, direct, in ext4" "MB/s" - 48.09 wl_fio randread 4k --direct=1
    row "fio 4K random write, direct, in ext4" "MB/s" - 139.76 wl_fio randwrite 4k --direct=1
    row "fio 4K sequential read, direct, in ext4" "MB/s" - 84.88 wl_fio read 4k --direct=1
    row "fio 4K sequential write, direct, in ext4" "MB/s" - 144.11 wl_fio write 4k --direct=1
fi
if has bonnie && command -v bonnie++ >/dev/null; then
    bonnie_rows
elif has bonnie; then
    echo "bonnie++: not installed (Debian package bonnie++) - rows skipped"
fi
if has iozone-eq; then
    row "IOzone-equivalent (fio) 4K write, buffered" "MB/s" 481.77 479.21 \
        wl_fio write 4k "--direct=0 --end_fsync=1 --time_based=0 --runtime=0"
fi
echo "# seed figures: seed 000 btrfs 'Single Disk' (2014 SATA SSD), seed 003 ext4 '120GB Mushkin SSD';"
echo "# this machine's members are files on a shared, loaded disk: absolute figures are host-bound."
