#!/bin/bash
# usage: bench/cache-coldwrite.sh RAIDKIT: cold 4K random writes at QD1 (the seed003 randwrite shape,
# fio nbd engine) through a fresh 576 MiB writeback cache (mushkin-ssd-2015 model) over a 1 GiB
# hdd-7200 linear array, against the same array alone. RT=seconds (default 15). Scratch: $W.
RK=$(realpath "$1"); W=${W:-/tmp/rk-coldwrite}; RT=${RT:-15}; mkdir -p "$W"
cd "$(dirname "$0")/.."
run() { # label, serve args...
  local l=$1; shift
  rm -f $W/sock $W/ctl
  "$RK" serve --threads 64 --listen "unix:$W/sock" --control "$W/ctl" "$@" 2>$W/serve.log &
  local pid=$!
  for i in $(seq 100); do [ -S $W/sock ] && break; sleep 0.1; done
  fio --name=c --ioengine=nbd --uri="nbd+unix:///?socket=$W/sock" --rw=randwrite --bs=4k --iodepth=1 \
     --size=1g --time_based --runtime=$RT --ramp_time=2 --output-format=json --output=$W/fio.json >/dev/null 2>$W/fio.err || cat $W/fio.err
  python3 -c 'import json,sys; j=json.load(open(sys.argv[1]))["jobs"][0]["write"]; print(sys.argv[2], round(j["bw_bytes"]/1e6,3), "MB/s", round(j["iops"],1), "IOPS")' $W/fio.json "$l"
  [ -n "$CACHE" ] && "$RK" status --json --control $W/ctl 2>/dev/null | python3 -c 'import json,sys; d=json.load(sys.stdin); d=d.get("status",d); c=d.get("cache") or {}; print("   bypass", c.get("bypass"), "dirty", c.get("dirty_blocks"))'
  kill -TERM $pid; wait $pid
}
rm -f $W/b.img $W/c.img
"$RK" create --force --level linear --size 1G $W/b.img >/dev/null
CACHE= run backing --emulate hdd-7200 $W/b.img
truncate -s 576M $W/c.img
"$RK" cache create --mode writeback $W/c.img $W/b.img >/dev/null || exit 1
CACHE=1 run cache-writeback --cache $W/c.img --cache-emulate bench/profiles/mushkin-ssd-2015.ini --emulate hdd-7200 $W/b.img
