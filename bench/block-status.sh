#!/bin/bash
# block-status.sh: nbdcopy out of a big sparse raid5 volume holding 100 MiB, with block status
# (nbdcopy's default) and without it (--no-extents): wall time and member bytes read.
# Usage: bench/block-status.sh RAIDKIT [DIR] [MEMBER_SIZE]  (members sparse in DIR, /dev/shm).
set -eu -o pipefail
RK=$1 DIR=${2:-/dev/shm} MSIZE=${3:-2G}
W=$(mktemp -d "$DIR/rk-bs.XXXXXX")
trap 'kill "$PID" 2>/dev/null; wait 2>/dev/null; rm -rf "$W"' EXIT
truncate -s "$MSIZE" "$W/m0" "$W/m1" "$W/m2"
"$RK" create --level raid5 "$W/m0" "$W/m1" "$W/m2" >/dev/null
"$RK" serve --listen "unix:$W/s" --control "$W/c" "$W/m0" "$W/m1" "$W/m2" 2>"$W/log" &
PID=$!
for _ in $(seq 100); do [ -S "$W/s" ] && break; sleep 0.1; done
U="nbd+unix:///?socket=$W/s"
# 100 MiB in ten 10 MiB pieces spread over the volume.
SIZE=$(nbdinfo --size "$U")
PY=""
for i in $(seq 0 9); do PY+="h.pwrite(b'\\x5a' * (10 << 20), $((SIZE / 10 * i / 1048576 * 1048576))); "; done
PATH=/usr/bin:$PATH nbdsh -u "$U" -c "$PY"
reads() {
    "$RK" status --json --control "$W/c" | /usr/bin/python3 -c 'import json,sys
print(sum(x.get("io", {}).get("read_bytes", 0) for x in json.load(sys.stdin)["slots"]))'
}
for mode in --no-extents ""; do
    b=$(reads)
    t0=$(date +%s.%N)
    nbdcopy $mode "$U" null:
    t1=$(date +%s.%N)
    a=$(reads)
    printf 'nbdcopy %-13s volume %d MiB: %.2f s, member bytes read %d MiB\n' "${mode:-(extents)}" \
        $((SIZE >> 20)) "$(echo "$t1 - $t0" | bc)" $(((a - b) >> 20))
done
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
