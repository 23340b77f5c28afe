#!/bin/bash
# raid1 of local file + NBD member (nbdkit file plugin on a unix socket) vs raid1 of two local
# files, same run: fio 4K randwrite, queue depth 32, through raidkit's own socket.
# Usage: bench/remote-nbd.sh [RAIDKIT] [SECONDS]   (prints one line per configuration)
set -u
R=$(realpath "${1:-build/raidkit}")
S=${2:-10}
T=$(mktemp -d /tmp/rk-bench-nbd.XXXXXX)
trap 'kill $NK $SV 2>/dev/null; wait 2>/dev/null; rm -rf "$T"' EXIT
NK="" SV=""
truncate -s 256M "$T/a" "$T/b" "$T/c" "$T/d"
nbdkit -f -U "$T/nk.sock" file "$T/d" 2>/dev/null &
NK=$!
for i in $(seq 50); do [ -S "$T/nk.sock" ] && break; sleep 0.1; done
run() # NAME MEMBERS...
{
    local name=$1
    shift
    "$R" create --level raid1 "$@" >/dev/null 2>&1 || { echo "$name: create failed"; return; }
    "$R" serve --listen "unix:$T/rk.sock" "$@" 2>/dev/null &
    SV=$!
    for i in $(seq 50); do [ -S "$T/rk.sock" ] && break; sleep 0.1; done
    local iops
    [ -S "$T/rk.sock" ] || { echo "$name: serve did not listen"; return; }
    iops=$(cd "$T" && fio --name=b --ioengine=nbd --uri="nbd+unix:///?socket=$T/rk.sock" \
        --rw=randwrite --bs=4k --iodepth=32 --size=200M --time_based --runtime="$S" \
        --output-format=json 2>"$T/fio.err" | python3 -c 'import json,sys; t=sys.stdin.read(); print(round(json.loads(t[t.index("{"):])["jobs"][0]["write"]["iops"]))')
    kill -TERM "$SV"
    wait "$SV" 2>/dev/null
    rm -f "$T/rk.sock"
    SV=""
    echo "$name: 4K randwrite qd32 ${S}s: $iops IOPS"
}
run "raid1 local+local" "$T/a" "$T/b"
run "raid1 local+nbd(nbdkit file, unix socket)" "$T/c" "nbd+unix:///?socket=$T/nk.sock"
