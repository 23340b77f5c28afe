#!/bin/bash
# nbdkit-plugin.sh: the same raid5 volume (3 sparse members on tmpfs) served by `raidkit serve`
# and by `nbdkit raidkit` (plugin/), fio nbd engine: 4K random read/write 70/30 qd16 and 1M
# sequential write qd4, RUNTIME s each (alternating servers). Prints IOPS / MiB/s and the ratio.
# Usage: bench/nbdkit-plugin.sh BUILD_DIR [DIR]   Environment: RUNTIME [8] MSIZE [1G]
set -eu -o pipefail
B=$(cd "$1" && pwd) DIR=${2:-/dev/shm} RUNTIME=${RUNTIME:-8} MSIZE=${MSIZE:-1G}
W=$(mktemp -d "$DIR/rk-nkp.XXXXXX")
PID=""
trap '[ -n "$PID" ] && kill "$PID" 2>/dev/null; wait 2>/dev/null; cat "$W/log" >&2; rm -rf "$W"' EXIT
truncate -s "$MSIZE" "$W/m0" "$W/m1" "$W/m2"
"$B/raidkit" create --level raid5 "$W/m0" "$W/m1" "$W/m2" >/dev/null
U="nbd+unix:///?socket=$W/s"
start() {
    rm -f "$W/s"
    if [ "$1" = serve ]; then
        "$B/raidkit" serve --listen "unix:$W/s" "$W/m0" "$W/m1" "$W/m2" 2>>"$W/log" &
    else
        nbdkit -f -U "$W/s" "$B/plugin/nbdkit-raidkit-plugin.so" member="$W/m0" member="$W/m1" \
            member="$W/m2" 2>>"$W/log" &
    fi
    PID=$!
    for _ in $(seq 100); do [ -S "$W/s" ] && break; sleep 0.1; done
}
stop() { kill "$PID"; wait "$PID" || true; PID=""; }
run() { # NAME FIO-ARGS... -> prints iops and bw (MiB/s) summed over read+write
    (cd "$W" && fio --name="$1" --ioengine=nbd --uri="$U" --size=256M --time_based \
        --runtime="$RUNTIME" --output-format=json --output="$W/fio.json" "${@:2}" >/dev/null)
    /usr/bin/python3 -c 'import json,sys
j=json.load(open(sys.argv[1]))["jobs"][0]
print("%.0f %.1f" % (j["read"]["iops"]+j["write"]["iops"], (j["read"]["bw"]+j["write"]["bw"])/1024))' "$W/fio.json"
}
declare -A R
for srv in serve nbdkit; do
    start $srv
    R[$srv,rand]=$(run rand --rw=randrw --rwmixread=70 --bs=4k --iodepth=16)
    R[$srv,seq]=$(run seq --rw=write --bs=1M --iodepth=4)
    stop
done
for w in rand seq; do
    read -r si sb <<<"${R[serve,$w]}"
    read -r ni nb <<<"${R[nbdkit,$w]}"
    printf '%-5s raidkit serve %8s IOPS %8s MiB/s | nbdkit raidkit %8s IOPS %8s MiB/s | ratio nbdkit/serve %.2f\n' \
        "$w" "$si" "$sb" "$ni" "$nb" "$(echo "$nb / $sb" | bc -l)"
done
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
