#!/bin/bash
# Remote NBD members (issue 14): raid1 over two NBD members vs raid1 over the same two files
# local, and the same raid1 behind a 50 ms per-request delay at queue depth 1/8/32.
#  (A) the two member files served by nbdkit's file plugin over TCP on 127.0.0.1 (loopback)
#      vs opened directly: fio 4K randread/randwrite at qd 32, 1M sequential read/write at qd 8.
#  (B) latency: each member behind nbdkit's delay filter (50 ms per read and write; used where
#      tc netem is unavailable, as on kernels without sch_netem), 4K randread at qd 1, 8, 32:
#      IOPS should grow with the requests in flight (about qd / 50 ms).
# fio runs through raidkit's own unix socket (nbd engine). Prints one line per measurement.
# Usage: bench/remote-nbd.sh [RAIDKIT] [SECONDS] [A|B|AB]
set -u
R=$(realpath "${1:-build/raidkit}")
S=${2:-10}
WHAT=${3:-AB}
T=$(mktemp -d /var/tmp/rk-bench-nbd.XXXXXX)
NK=() SV=""
trap 'for p in "${NK[@]}" $SV; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$T"' EXIT
port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
listening() { local i; for i in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done; return 1; }

# nk FILE ARGS...: nbdkit serving FILE over TCP 127.0.0.1 (ARGS: filters first); sets NKURI
# (not a command substitution: nbdkit exits with its parent).
nk()
{
    local f=$1 p
    shift
    p=$(port)
    local filt=() par=() x
    for x in "$@"; do [[ $x == --filter=* ]] && filt+=("$x") || par+=("$x"); done
    nbdkit -f --exit-with-parent --threads 64 -i 127.0.0.1 -p "$p" "${filt[@]}" file "$f" "${par[@]}" 2>/dev/null &
    NK+=($!)
    listening "$p" || { echo "nbdkit did not listen" >&2; exit 1; }
    NKURI="nbd://127.0.0.1:$p/"
}

# start MEMBERS...: create a raid1 over MEMBERS (fresh) and serve it on $T/rk.sock.
start()
{
    "$R" create --force --assume-clean --level raid1 "$@" >/dev/null 2>"$T/create.err" ||
        { echo "create failed: $(cat "$T/create.err")" >&2; exit 1; }
    "$R" serve --listen "unix:$T/rk.sock" "$@" 2>"$T/serve.log" &
    SV=$!
    local i
    for i in $(seq 100); do [ -S "$T/rk.sock" ] && return 0; sleep 0.1; done
    echo "serve did not listen" >&2
    exit 1
}
stop() { kill -TERM "$SV"; wait "$SV" 2>/dev/null; SV=""; rm -f "$T/rk.sock"; }

# run RW BS QD: one time-based fio run; prints "IOPS MiB/s".
run()
{
    (cd "$T" && fio --name=b --ioengine=nbd --uri="nbd+unix:///?socket=$T/rk.sock" --rw="$1" \
        --bs="$2" --iodepth="$3" --size=200M --time_based --runtime="$S" --ramp_time=1 \
        --output-format=json 2>"$T/fio.err") | /usr/bin/python3 -c '
import json, sys
t = sys.stdin.read(); j = json.loads(t[t.index("{"):])["jobs"][0]
d = j["read"] if j["read"]["io_bytes"] else j["write"]
print("%.0f IOPS %.1f MiB/s" % (d["iops"], d["bw"] / 1024))'
}

truncate -s 256M "$T/a" "$T/b"
echo "load: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores; members 256 MiB files on $(df -T "$T" | awk 'NR==2{print $2}')"
if [[ $WHAT == *A* ]]; then
    nk "$T/a"
    UA=$NKURI
    nk "$T/b"
    UB=$NKURI
    for cfg in local nbd; do
        if [ $cfg = local ]; then start "$T/a" "$T/b"; else start "$UA" "$UB"; fi
        for w in "randread 4k 32" "randwrite 4k 32" "read 1M 8" "write 1M 8"; do
            set -- $w
            echo "A raid1 $cfg: $1 $2 qd$3 ${S}s: $(run "$1" "$2" "$3")"
        done
        stop
    done
fi
if [[ $WHAT == *B* ]]; then
    nk "$T/a" --filter=delay delay-read=50ms delay-write=50ms
    UA=$NKURI
    nk "$T/b" --filter=delay delay-read=50ms delay-write=50ms
    UB=$NKURI
    start "$UA" "$UB"
    for qd in 1 8 32; do
        echo "B raid1 nbd, 50 ms per request: randread 4k qd$qd ${S}s: $(run randread 4k "$qd")"
    done
    stop
fi
