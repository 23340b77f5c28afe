#!/bin/bash
# usage: bench/cache-mem.sh RAIDKIT SIZE DIR: serve RSS of a SIZE linear array on sparse files in DIR
# alone (after 256 MiB of 64K random writes), then with a SIZE writeback cache after the same
# warm-up and after 64K random writes over SIZE (every cache block used): bytes per cache block
# and MiB per TiB. Needs SIZE of free space in DIR (the cache fills); removes its files.
RK=$1; SZ=$2; D=$3; W=${W:-/tmp/rk-cachemem}; mkdir -p "$W"
rss() { awk '/^VmRSS/ { print $2 }' /proc/$1/status; }
rm -f $D/cfb-b.img $D/cfb-c.img $W/msock $W/mctl
"$RK" create --force --level linear --size $SZ $D/cfb-b.img >/dev/null || exit 1
"$RK" serve --threads 64 --listen "unix:$W/msock" --control "$W/mctl" $D/cfb-b.img 2>$W/mserve.log &
pid=$!
for i in $(seq 100); do [ -S $W/msock ] && break; sleep 0.1; done
fio --name=w --ioengine=nbd --uri="nbd+unix:///?socket=$W/msock" --rw=randwrite --bs=64k --iodepth=16 --size=256m >/dev/null 2>&1
base=$(rss $pid)
kill -TERM $pid; wait $pid
rm -f $D/cfb-b.img; "$RK" create --force --level linear --size $SZ $D/cfb-b.img >/dev/null || exit 1
truncate -s $SZ $D/cfb-c.img
"$RK" cache create --mode writeback $D/cfb-c.img $D/cfb-b.img >/dev/null || exit 1
"$RK" serve --threads 64 --listen "unix:$W/msock" --control "$W/mctl" --cache $D/cfb-c.img $D/cfb-b.img 2>$W/mserve.log &
pid=$!
for i in $(seq 100); do [ -S $W/msock ] && break; sleep 0.1; done
U="nbd+unix:///?socket=$W/msock"
fio --name=w --ioengine=nbd --uri=$U --rw=randwrite --bs=64k --iodepth=16 --size=256m >/dev/null 2>&1
a=$(rss $pid)
fio --name=f --ioengine=nbd --uri=$U --rw=randwrite --bs=64k --iodepth=16 --size=$SZ >/dev/null 2>$W/mfio.err || cat $W/mfio.err
b=$(rss $pid)
st=$("$RK" status --json --control $W/mctl | python3 -c 'import json,sys; d=json.load(sys.stdin); d=d.get("status",d); c=d.get("cache") or {}; print(c.get("used_blocks"), c.get("blocks"))')
kill -TERM $pid; wait $pid
python3 - $a $b $st $base <<'PY'
import sys
a,b,used,blocks,base=map(int,sys.argv[1:6])
bpb=(b-a)*1024/used
t=(b-base)*1024/blocks
print("serve RSS without cache %d KiB, with the full cache %d KiB: %.1f B per cache block all included = %.0f MiB per TiB" % (base,b,t,t*16777216/2**20))
print("RSS %d KiB after 256 MiB, %d KiB full (%d/%d blocks used): %.1f B/block, %.0f MiB per TiB" % (a,b,used,blocks,bpb,bpb*16777216/2**20))
PY
rm -f $D/cfb-b.img $D/cfb-c.img
