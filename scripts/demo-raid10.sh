#!/usr/bin/env bash
# The main job (`make demo`): builds a 4-member RAID10 volume on sparse files, serves it over NBD
# and checks it with real clients (nbdinfo, nbdcopy + ext4 + e2fsck, fio --verify), then degraded.
#
# Usage: scripts/demo-raid10.sh RAIDKIT_BINARY
# Environment: DEMO_DIR (default <repo>/demo-run/raid10: its own directory, wiped at start;
#              never demo-run/ itself, which holds the report of `make demo`), MEMBER_SIZE (256M),
#              FIO_RUNTIME (20 seconds), FIO_SIZE (128M), DOC_MIB (6), KEEP=1 keeps member images.
# Exit status: 0 when every check passed, 1 when one failed (the server log is shown), 2 on misuse.
set -uo pipefail

if [ $# -ne 1 ] || [ ! -x "$1" ]; then
    echo "usage: $0 RAIDKIT_BINARY   (an executable raidkit, e.g. build/raidkit)" >&2
    exit 2
fi
RK=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
REPO=$(cd "$(dirname "$0")/.." && pwd)
DIR=${DEMO_DIR:-$REPO/demo-run/raid10}
MEMBER_SIZE=${MEMBER_SIZE:-256M}
CHUNK=64K
FIO_RUNTIME=${FIO_RUNTIME:-20}
FIO_SIZE=${FIO_SIZE:-128M}
FIO_OFFSET=64M          # fio's region starts past the ext4 image, which must survive it
IMG_SIZE=32M
DOC_MIB=${DOC_MIB:-6}
# mke2fs and e2fsck live in /usr/sbin, which is not on an ordinary user's PATH on Debian.
export PATH=$PATH:/usr/sbin:/sbin
PY=/usr/bin/python3     # the system python has the libnbd module; a pyenv python3 may not

T0=$(date +%s.%N)
SERVER_PID=""
SERVER_LOG=""
SOCK_DIR=""
NAMES=()
RESULTS=()
FAILED=0

# ---------------------------------------------------------------- helpers

elapsed() { awk -v a="$T0" -v b="$(date +%s.%N)" 'BEGIN { printf "%5.1f", b - a }'; }
say() { printf '[demo %ss] %s\n' "$(elapsed)" "$*"; }
indent() { sed 's/^/        /'; }

# record NAME PASS|FAIL [detail]: one row of the final summary.
record() {
    NAMES+=("$1")
    RESULTS+=("$2${3:+  ($3)}")
    if [ "$2" = PASS ]; then
        say "  PASS  $1${3:+  ($3)}"
    else
        say "  FAIL  $1${3:+  ($3)}"
        FAILED=1
    fi
}

show_server_log() {
    [ -n "$SERVER_LOG" ] && [ -f "$SERVER_LOG" ] || return 0
    echo "---- last lines of the server log ($SERVER_LOG) ----"
    tail -n 40 "$SERVER_LOG"
    echo "----"
}

# start_server LOGNAME ARGS...: runs `raidkit serve` in the background and waits until it listens.
start_server() {
    local name=$1
    shift
    SERVER_LOG=$DIR/$name.log
    rm -f "$SOCK"
    "$RK" serve --listen "unix:$SOCK" "$@" 2>"$SERVER_LOG" &
    SERVER_PID=$!
    local i
    for i in $(seq 1 150); do
        if grep -q 'raidkit: serving' "$SERVER_LOG" 2>/dev/null && [ -S "$SOCK" ]; then
            return 0
        fi
        if ! kill -0 "$SERVER_PID" 2>/dev/null; then
            wait "$SERVER_PID"
            say "raidkit serve exited early with status $?"
            SERVER_PID=""
            return 1
        fi
        sleep 0.1
    done
    say "raidkit serve did not report 'serving' within 15 s"
    return 1
}

# stop_server: SIGTERM, then the contract says: finish requests, flush, mark clean, exit 0.
stop_server() {
    local rc i
    [ -n "$SERVER_PID" ] || return 1
    kill -TERM "$SERVER_PID" 2>/dev/null
    for i in $(seq 1 150); do
        kill -0 "$SERVER_PID" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$SERVER_PID" 2>/dev/null; then
        say "server ignored SIGTERM for 15 s; killing it"
        kill -KILL "$SERVER_PID" 2>/dev/null
        wait "$SERVER_PID" 2>/dev/null
        SERVER_PID=""
        return 1
    fi
    wait "$SERVER_PID"
    rc=$?
    SERVER_PID=""
    return $rc
}

# shellcheck disable=SC2317  # runs from the EXIT trap
cleanup() {
    local _
    if [ -n "$SERVER_PID" ]; then
        kill -TERM "$SERVER_PID" 2>/dev/null
        for _ in $(seq 1 50); do
            kill -0 "$SERVER_PID" 2>/dev/null || break
            sleep 0.1
        done
        kill -KILL "$SERVER_PID" 2>/dev/null
        wait "$SERVER_PID" 2>/dev/null
    fi
    [ -n "$SOCK_DIR" ] && rm -rf "$SOCK_DIR"
}
trap cleanup EXIT
trap 'echo; say "interrupted"; exit 130' INT TERM

# die MESSAGE: a step that everything after it depends on failed; summarise and stop.
die() {
    say "$*"
    show_server_log
    say "demo FAILED after $(elapsed) s (files kept in $DIR)"
    exit 1
}

# sha256 of the first LEN bytes of FILE
sha_of() { head -c "$2" "$1" | sha256sum | cut -d' ' -f1; }

# readback TAG: copies the whole export out with nbdcopy, keeps exactly the image's length, and
# checks it against the image (sha256) and with e2fsck.
readback() {
    local tag=$1 out=$DIR/readback-$1.img sha
    rm -f "$out"
    if ! nbdcopy "$URI" "$out" 2>"$DIR/nbdcopy-out-$tag.err"; then
        indent <"$DIR/nbdcopy-out-$tag.err"
        record "$tag: nbdcopy volume -> file" FAIL "see $DIR/nbdcopy-out-$tag.err"
        return
    fi
    truncate -s "$IMG_LEN" "$out"
    sha=$(sha_of "$out" "$IMG_LEN")
    if [ "$sha" = "$IMG_SHA" ]; then
        record "$tag: ext4 image reads back identical" PASS "sha256 ${sha:0:16}…, $IMG_LEN bytes"
    else
        record "$tag: ext4 image reads back identical" FAIL \
            "sha256 ${sha:0:16}… != ${IMG_SHA:0:16}…"
    fi
    if e2fsck -fn "$out" >"$DIR/e2fsck-$tag.log" 2>&1; then
        record "$tag: e2fsck -fn of the read-back image" PASS \
            "$(tail -n 1 "$DIR/e2fsck-$tag.log" | sed 's/^[^:]*: //')"
    else
        indent <"$DIR/e2fsck-$tag.log" | tail -n 15
        record "$tag: e2fsck -fn of the read-back image" FAIL "see $DIR/e2fsck-$tag.log"
    fi
}

# ---------------------------------------------------------------- preflight

missing=()
for t in nbdinfo nbdcopy fio mke2fs e2fsck sha256sum truncate "$PY"; do
    command -v "$t" >/dev/null 2>&1 || missing+=("$t")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "demo: missing tools: ${missing[*]} (run scripts/install-deps.sh)" >&2
    exit 1
fi

rm -rf "$DIR"
mkdir -p "$DIR" || exit 1
# A unix socket path must fit in 108 bytes; fall back to /tmp when the repo path is long.
SOCK=$DIR/nbd.sock
if [ ${#SOCK} -gt 100 ]; then
    SOCK_DIR=$(mktemp -d /tmp/raidkit-demo.XXXXXX)
    SOCK=$SOCK_DIR/nbd.sock
fi
URI="nbd+unix:///?socket=$SOCK"

echo "raidkit demo: RAID10 over 4 member files, served over NBD, checked with real clients"
echo "  binary: $RK ($("$RK" --version 2>/dev/null || echo 'version unknown'))"
echo "  workdir: $DIR"
echo

# ---------------------------------------------------------------- 1. build the volume

MEMBERS=()
for i in 0 1 2 3; do
    truncate -s "$MEMBER_SIZE" "$DIR/m$i.img" || die "cannot create $DIR/m$i.img"
    MEMBERS+=("$DIR/m$i.img")
done
say "created 4 sparse member files of $MEMBER_SIZE: m0.img .. m3.img"
say "\$ raidkit create --level 10 --chunk $CHUNK --name demo m0.img m1.img m2.img m3.img"
if create_out=$("$RK" create --level 10 --chunk "$CHUNK" --name demo "${MEMBERS[@]}" 2>&1); then
    echo "$create_out" | indent
    record "raidkit create --level 10" PASS
else
    echo "$create_out" | indent
    record "raidkit create --level 10" FAIL
    die "cannot continue without a volume"
fi

"$RK" info --json "${MEMBERS[@]}" >"$DIR/info.json" 2>"$DIR/info.err" ||
    die "raidkit info --json failed: $(cat "$DIR/info.err")"
read -r LEVEL ARRAY_CHUNK ARRAY_SIZE NMEMBERS < <("$PY" - "$DIR/info.json" <<'EOF'
import json, sys
j = json.load(open(sys.argv[1]))
a = j.get("array", j)  # `info --json` nests the array record under "array"
level = str(a.get("level", "?")).replace("raid", "")
n = a.get("members")
if not isinstance(n, int):
    n = len(a.get("slots", j.get("members", [])))
print(level, a.get("chunk", "?"), a.get("size", a.get("array_size", "?")), n)
EOF
) || die "cannot parse raidkit info --json output ($DIR/info.json)"
say "volume: level $LEVEL, $NMEMBERS members, chunk $ARRAY_CHUNK bytes, size $ARRAY_SIZE bytes"

# ---------------------------------------------------------------- 2. serve it

say "\$ raidkit serve --listen unix:$SOCK m0.img m1.img m2.img m3.img &"
start_server server "${MEMBERS[@]}" || die "the server did not start"
record "raidkit serve starts and listens" PASS "pid $SERVER_PID"

# ---------------------------------------------------------------- 3. nbdinfo

say "\$ nbdinfo $URI"
if nbdinfo "$URI" >"$DIR/nbdinfo.txt" 2>&1 && nbdinfo --json "$URI" >"$DIR/nbdinfo.json" 2>&1; then
    grep -E 'export-size|block_size|is_read_only|can_(flush|fua|trim|zero|multi_conn)' \
        "$DIR/nbdinfo.txt" | sed 's/^[[:space:]]*//' | indent
    NBD_SIZE=$("$PY" -c 'import json, sys
print(json.load(open(sys.argv[1]))["exports"][0]["export-size"])' "$DIR/nbdinfo.json" 2>/dev/null)
    if [ "${NBD_SIZE:-x}" = "$ARRAY_SIZE" ]; then
        record "nbdinfo: export size matches the array size" PASS "$NBD_SIZE bytes"
    else
        record "nbdinfo: export size matches the array size" FAIL \
            "nbd ${NBD_SIZE:-?} vs array $ARRAY_SIZE"
    fi
else
    indent <"$DIR/nbdinfo.txt"
    record "nbdinfo" FAIL "see $DIR/nbdinfo.txt"
fi

# ---------------------------------------------------------------- 4. a real ext4 image

# A few MiB of /usr/share/doc, whole package directories in name order, so the run is repeatable.
mkdir -p "$DIR/stage"
budget=$((DOC_MIB * 1024))
used=0
nfiles=0
if [ -d /usr/share/doc ]; then
    while read -r kib name; do
        [ $used -ge $budget ] && break
        [ $((used + kib)) -gt $((budget * 2)) ] && continue
        cp -a "/usr/share/doc/$name" "$DIR/stage/" 2>/dev/null || continue
        used=$((used + kib))
    done < <(cd /usr/share/doc && du -s --apparent-size -k -- * 2>/dev/null | sort -k2)
fi
# A minimal container may ship almost no docs: top up with a fixed pseudo-random file.
if [ $used -lt 1024 ]; then
    "$PY" -c 'import random, sys
random.seed(1)
sys.stdout.buffer.write(random.randbytes(2 << 20))' \
        >"$DIR/stage/filler.bin"
    say "(little in /usr/share/doc: added a 2 MiB generated file)"
    used=$((used + 2048))
fi
nfiles=$(find "$DIR/stage" -type f | wc -l)
IMG=$DIR/ext4.img
truncate -s "$IMG_SIZE" "$IMG"
say "\$ mke2fs -t ext4 -d stage/ ext4.img" \
    "  ($nfiles files, $((used / 1024)) MiB copied from /usr/share/doc, $IMG_SIZE image)"
if ! mke2fs -q -F -t ext4 -L raidkit-demo -d "$DIR/stage" "$IMG" >"$DIR/mke2fs.log" 2>&1; then
    indent <"$DIR/mke2fs.log"
    die "mke2fs failed"
fi
IMG_LEN=$(stat -c %s "$IMG")
IMG_SHA=$(sha_of "$IMG" "$IMG_LEN")
say "image sha256 ${IMG_SHA:0:16}…, $IMG_LEN bytes"

say "\$ nbdcopy ext4.img $URI"
if nbdcopy "$IMG" "$URI" 2>"$DIR/nbdcopy-in.err"; then
    record "nbdcopy ext4 image -> volume" PASS
    readback healthy
else
    indent <"$DIR/nbdcopy-in.err"
    record "nbdcopy ext4 image -> volume" FAIL "see $DIR/nbdcopy-in.err"
fi

# ---------------------------------------------------------------- 5. fio with verification

FIO_JSON=$DIR/fio.json
say "\$ fio --ioengine=nbd --rw=randrw --bs=4k --iodepth=32 --runtime=$FIO_RUNTIME" \
    "--offset=$FIO_OFFSET --size=$FIO_SIZE --verify=crc32c   (${FIO_RUNTIME} s)"
fio --name=demo-randrw --ioengine=nbd --uri="$URI" --rw=randrw --bs=4k --iodepth=32 \
    --time_based --runtime="$FIO_RUNTIME" --offset="$FIO_OFFSET" --size="$FIO_SIZE" \
    --randseed=20261130 --verify=crc32c --verify_fatal=1 --verify_backlog=4096 \
    --verify_state_save=0 \
    --output-format=json --output="$FIO_JSON" >"$DIR/fio.out" 2>&1
fio_rc=$?
FIO_LINE=$("$PY" - "$FIO_JSON" <<'EOF' 2>/dev/null
import json, sys
text = open(sys.argv[1]).read()  # fio may put warning lines before the JSON
t = json.loads(text[text.index("{"):])["jobs"][0]
r, w = t["read"], t["write"]
print(t["error"], r["io_bytes"], w["io_bytes"],
      "%.1f" % (r["bw"] / 1024.0), "%.0f" % r["iops"],
      "%.1f" % (w["bw"] / 1024.0), "%.0f" % w["iops"])
EOF
)
read -r fio_err fio_rbytes fio_wbytes RD_MIBS RD_IOPS WR_MIBS WR_IOPS \
    <<<"${FIO_LINE:-x 0 0 - - - -}"
if [ $fio_rc -eq 0 ] && [ "$fio_err" = 0 ] && [ "$fio_rbytes" -gt 0 ] &&
    [ "$fio_wbytes" -gt 0 ]; then
    record "fio randrw 4k qd32 --verify=crc32c" PASS \
        "read $RD_MIBS MiB/s $RD_IOPS IOPS, write $WR_MIBS MiB/s $WR_IOPS IOPS"
else
    tail -n 20 "$DIR/fio.out" | indent
    record "fio randrw 4k qd32 --verify=crc32c" FAIL \
        "exit $fio_rc, error ${fio_err:-?}; see $DIR/fio.out"
fi

# ---------------------------------------------------------------- 6. clean shutdown

say "stopping the server (SIGTERM)"
if stop_server; then
    record "server exits 0 on SIGTERM" PASS
else
    record "server exits 0 on SIGTERM" FAIL "see $SERVER_LOG"
    show_server_log
fi

# ---------------------------------------------------------------- 7. degraded

mkdir -p "$DIR/failed"
mv "$DIR/m1.img" "$DIR/failed/m1.img"
say "\"failing\" member m1: moved to failed/m1.img"
LIVE=("$DIR/m0.img" "$DIR/m2.img" "$DIR/m3.img")

# Without --degraded a missing member must be refused.
say "\$ raidkit serve m0.img m2.img m3.img   (no --degraded: must refuse)"
rm -f "$SOCK"
timeout 15 "$RK" serve --listen "unix:$SOCK" "${LIVE[@]}" >"$DIR/refuse.log" 2>&1
rc=$?
if [ $rc -ne 0 ] && [ $rc -ne 124 ]; then
    record "serve refuses a missing member without --degraded" PASS \
        "exit $rc: $(head -n 1 "$DIR/refuse.log")"
else
    record "serve refuses a missing member without --degraded" FAIL "exit $rc; see $DIR/refuse.log"
fi

say "\$ raidkit serve --degraded m0.img m2.img m3.img &"
if start_server server-degraded --degraded "${LIVE[@]}"; then
    record "raidkit serve --degraded starts with 3 of 4 members" PASS "pid $SERVER_PID"
    if "$RK" info --json "${LIVE[@]}" >"$DIR/info-degraded.json" 2>/dev/null; then
        say "\$ raidkit info --json m0.img m2.img m3.img   (while serving)"
        "$PY" - "$DIR/info-degraded.json" <<'EOF' 2>/dev/null | indent
import json, sys
j = json.load(open(sys.argv[1]))
a = j.get("array", j)
for m in a.get("slots", a.get("members", [])):
    print("slot %s  %-8s %s" % (m.get("slot"), m.get("state"), m.get("path") or "(missing)"))
for p in j.get("problems", []):
    print("note: %s" % p)
EOF
    fi
    readback degraded
    say "stopping the degraded server (SIGTERM)"
    if stop_server; then
        record "degraded server exits 0 on SIGTERM" PASS
    else
        record "degraded server exits 0 on SIGTERM" FAIL "see $SERVER_LOG"
        show_server_log
    fi
else
    record "raidkit serve --degraded starts with 3 of 4 members" FAIL
    show_server_log
fi

# ---------------------------------------------------------------- summary

TOTAL=$(elapsed)
echo
echo "==================== raidkit demo summary ===================="
printf '  volume      RAID%s, %s members of %s (sparse files), chunk %s bytes\n' \
    "$LEVEL" "$NMEMBERS" "$MEMBER_SIZE" "$ARRAY_CHUNK"
size_mib="?"
[[ $ARRAY_SIZE =~ ^[0-9]+$ ]] && size_mib=$((ARRAY_SIZE / 1048576))
printf '  size        %s bytes (%s MiB), served on %s\n' "$ARRAY_SIZE" "$size_mib" "$URI"
printf '  fio         randrw 4k iodepth 32, %s s, crc32c verify:\n' "$FIO_RUNTIME"
printf '                read  %8s MiB/s %8s IOPS\n' "$RD_MIBS" "$RD_IOPS"
printf '                write %8s MiB/s %8s IOPS\n' "$WR_MIBS" "$WR_IOPS"
echo "  checks:"
for i in "${!NAMES[@]}"; do
    printf '    %-52s %s\n' "${NAMES[$i]}" "${RESULTS[$i]%%  (*}"
done
printf '  total time  %s s\n' "$TOTAL"
if [ $FAILED -ne 0 ]; then
    echo "  RESULT      FAIL (logs kept in $DIR)"
    for SERVER_LOG in "$DIR/server.log" "$DIR/server-degraded.log"; do
        show_server_log
    done
    exit 1
fi
echo "  RESULT      PASS"
if [ "${KEEP:-0}" != 1 ]; then
    rm -rf "$DIR/stage" "$DIR"/*.img "$DIR/failed"
fi
exit 0
