#!/usr/bin/env bash
# Cost of the SSD cache tier (bench/RESULTS.md "SSD cache tier"), every ratio from one run with
# its reference measured in the same run, rounds alternating the order:
#   hot-read / hot-write  4K random read / write IOPS over a hot set that fits the cache, after a
#                         warm-up (2 passes of 64K random reads), through a writeback cache vs the
#                         raw cache member (the same SSD model alone)             target >= 0.8
#   seq-write             1M sequential writes (far above the 4 MiB cutoff) through a writeback
#                         cache vs the backing alone (the same HDD model)          target >= 0.9
#   drain                 writeback drain (`cache mode writethrough` writes every dirty block
#                         back) of 64K blocks every 512K, vs fio writing the same blocks in the
#                         same ascending order straight to the backing model      target >= 0.8
#   memory                resident memory of `serve` with a full MEM_CACHE writeback cache minus
#                         without, same load, per TiB of cache (no models)       target <= 1 GiB
# Cache: mushkin-ssd-2015 (bench/profiles), backing: one hdd-7200 member (linear), as seed 003.
#
# Usage: bench/cache-cost.sh RAIDKIT_BINARY
# Environment: ROUNDS [2]  RUNTIME [8] s  QD [16]  HOT [64M]  BACKING [1G]  CACHE [512M]
#              MEM_CACHE [2G]  SSD [bench/profiles/mushkin-ssd-2015.ini]  HDD [hdd-7200]
#              SHM_DIR [/dev/shm]  TESTS [hot seq drain memory]
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROUNDS=${ROUNDS:-2}
RUNTIME=${RUNTIME:-8}
QD=${QD:-16}
HOT=${HOT:-64M}
BACKING=${BACKING:-1G}
CACHE=${CACHE:-512M}
MEM_CACHE=${MEM_CACHE:-2G}
SSD=${SSD:-$HERE/profiles/mushkin-ssd-2015.ini}
HDD=${HDD:-hdd-7200}
SHM_DIR=${SHM_DIR:-/dev/shm}
TESTS=${TESTS:-hot seq drain memory}
PY=/usr/bin/python3
. "$HERE/lib.sh"
bench_binary "$@"
bench_need fio "$PY"
bench_workdir cache-cost

URI="nbd+unix:///?socket=$WORK/sock"

# stop: the running server, if any.
stop() {
    [ -n "$RK_PID" ] || return 0
    kill -TERM "$RK_PID" 2>/dev/null
    wait "$RK_PID" 2>/dev/null
    RK_PID=""
    rm -f "$WORK/sock" "$WORK/ctl"
}

# start ARGS...: raidkit serve ARGS on $WORK/sock with control $WORK/ctl.
start() {
    "$RK" serve --threads 64 --listen "unix:$WORK/sock" --control "$WORK/ctl" "$@" \
        2>"$WORK/serve.log" &
    RK_PID=$!
    wait_socket "$RK_PID" "$WORK/sock" "$WORK/serve.log"
}

# backing SIZE: a fresh linear array on $WORK/b.img.
backing() {
    rm -f "$WORK/b.img"
    "$RK" create --force --level linear --size "$1" "$WORK/b.img" >/dev/null 2>"$WORK/err" ||
        { cat "$WORK/err" >&2; return 1; }
}

# raw PROFILE SIZE: serve one member alone under PROFILE.
raw() {
    backing "$2" && start --emulate "$1" "$WORK/b.img"
}

# cached MODE [CACHESIZE]: backing + cache device, served with both models.
cached() {
    backing "$BACKING" || return 1
    rm -f "$WORK/c.img"
    truncate -s "${2:-$CACHE}" "$WORK/c.img"
    "$RK" cache create --mode "$1" "$WORK/c.img" "$WORK/b.img" >/dev/null 2>"$WORK/err" ||
        { log "cache create: $(tail -n1 "$WORK/err")"; return 1; }
    start --emulate "$HDD" --cache "$WORK/c.img" --cache-emulate "$SSD" "$WORK/b.img"
}

# fio_run FIELD ARGS...: fio against the server; prints FIELD of jobs[0] (read.iops, write.iops,
# write.bw_bytes, ...) summed over read and write when FIELD has no direction.
fio_run() {
    local field=$1
    shift
    fio --name=c --ioengine=nbd --uri="$URI" --output-format=json --output="$WORK/fio.json" \
        "$@" >/dev/null 2>"$WORK/fio.err" || { cat "$WORK/fio.err" >&2; return 1; }
    $PY -c 'import json,sys; j=json.load(open(sys.argv[1]))["jobs"][0]; d,f=sys.argv[2].split(".")
print(round(j[d][f], 1))' "$WORK/fio.json" "$field"
}

warm() { fio_run read.iops --rw=randread --bs=64k --iodepth=16 --size="$HOT" --loops=2 >/dev/null; }

# cache_field KEY: a number of the status document's "cache" object ("" when absent).
cache_field() {
    "$RK" status --json --control "$WORK/ctl" 2>/dev/null | $PY -c 'import json,sys
d=json.load(sys.stdin); d=d.get("status", d); c=d.get("cache") or {}
v=c.get(sys.argv[1]); print("" if v is None else v)' "$1"
}

# hits DIR: "hits misses" of DIR (read/write) since start.
hits() { echo "$(cache_field "${1}_hits") $(cache_field "${1}_misses")"; }

# hit_ratio DIR BEFORE: hits / (hits + misses) of DIR since BEFORE (a `hits` line), percent.
hit_ratio() {
    local now
    now=$(hits "$1")
    # shellcheck disable=SC2086  # two numbers each
    $PY -c 'import sys; h0, m0, h1, m1 = map(int, sys.argv[1:5]); n = h1 - h0 + m1 - m0
print("%.1f%%" % (100.0 * (h1 - h0) / n) if n else "-")' $2 $now 2>/dev/null || echo "?"
}

ratio() { $PY -c "print('%.3f' % ($1 / $2))" 2>/dev/null || echo "?"; }

declare -A SUM CNT
add() { SUM[$1]=$($PY -c "print(${SUM[$1]:-0} + $2)"); CNT[$1]=$((${CNT[$1]:-0} + 1)); }
mean() { $PY -c "print(round(${SUM[$1]:-0} / max(1, ${CNT[$1]:-0}), 1))"; }

echo "cache-cost: $(date -u '+%F %H:%M UTC'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(fio --version)"
echo "cache $SSD ($CACHE), backing $HDD ($BACKING linear), hot set $HOT, QD $QD, ${RUNTIME}s runs"
FAILED=""

hot_round() { # ORDER ("raw cache" or "cache raw")
    local who r w
    for who in $1; do
        if [ "$who" = raw ]; then raw "$SSD" "$CACHE" || return 1; else cached writeback || return 1; fi
        warm || { stop; return 1; }
        local h0r h0w
        [ "$who" = cache ] && h0r=$(hits read)
        r=$(fio_run read.iops --rw=randread --bs=4k --iodepth="$QD" --size="$HOT" \
            --time_based --runtime="$RUNTIME" --randseed=7) || { stop; return 1; }
        [ "$who" = cache ] && h0w=$(hits write)
        w=$(fio_run write.iops --rw=randwrite --bs=4k --iodepth="$QD" --size="$HOT" \
            --time_based --runtime="$RUNTIME" --randseed=8) || { stop; return 1; }
        local hits=""
        [ "$who" = cache ] &&
            hits=" (hit ratio in the run: read $(hit_ratio read "$h0r"), write $(hit_ratio write "$h0w"))"
        echo "  hot $who: randread $r IOPS, randwrite $w IOPS$hits"
        add "hr.$who" "$r"
        add "hw.$who" "$w"
        stop
    done
}

seq_round() {
    local who v
    for who in $1; do
        if [ "$who" = raw ]; then raw "$HDD" "$BACKING" || return 1; else cached writeback || return 1; fi
        v=$(fio_run write.bw_bytes --rw=write --bs=1m --iodepth=4 --size="$BACKING" \
            --time_based --runtime="$RUNTIME") || { stop; return 1; }
        local extra=""
        [ "$who" = cache ] && extra=" (bypass counts: $("$RK" status --json --control "$WORK/ctl" 2>/dev/null |
            $PY -c 'import json,sys; d=json.load(sys.stdin); d=d.get("status",d); print((d.get("cache") or {}).get("bypass"))'))"
        echo "  seq-write $who: $($PY -c "print(round($v / 1e6, 2))") MB/s$extra"
        add "sw.$who" "$v"
        stop
    done
}

# The drain pattern: 64K blocks, one every 512K, over 512M: 1024 blocks, 64 MiB dirty (below the
# flusher's high watermark, so nothing drains before the mode switch).
PATTERN=(--rw=write:448k --bs=64k --size=512M --iodepth=4)

drain_round() {
    local who v t0 t1 dirty
    for who in $1; do
        if [ "$who" = raw ]; then
            raw "$HDD" "$BACKING" || return 1
            v=$(fio_run write.bw_bytes "${PATTERN[@]}") || { stop; return 1; }
            echo "  drain pattern straight to the backing model: $($PY -c "print(round($v / 1e6, 2))") MB/s"
        else
            cached writeback || return 1
            fio_run write.bw_bytes "${PATTERN[@]}" >/dev/null || { stop; return 1; }
            dirty=$(cache_field dirty_bytes)
            [ -n "$dirty" ] || dirty=$((64 << 20))
            t0=$(date +%s.%N)
            "$RK" cache mode writethrough --control "$WORK/ctl" >/dev/null 2>"$WORK/err" ||
                { log "cache mode: $(tail -n1 "$WORK/err")"; stop; return 1; }
            t1=$(date +%s.%N)
            v=$($PY -c "print($dirty / ($t1 - $t0))")
            echo "  drain: $((dirty >> 20)) MiB dirty (status dirty_bytes) in $($PY -c "print(round($t1 - $t0, 2))") s = $($PY -c "print(round($v / 1e6, 2))") MB/s"
        fi
        add "dr.$who" "$v"
        stop
    done
}

rss_kib() { awk '/^VmRSS/ { print $2 }' "/proc/$RK_PID/status"; }

# memory_test: resident memory of serve over a plain backing, without and with a full writeback
# cache of MEM_CACHE (no models: memory does not depend on timing, and filling is fast). Both
# get the same fio load first (64K random writes over MEM_CACHE bytes, every block once), so
# the difference is what the cache holds for MEM_CACHE of cached blocks.
memory_test() {
    local base with used fill=(--rw=randwrite --bs=64k --iodepth=16 --size="$MEM_CACHE")
    rm -f "$WORK/b.img" "$WORK/c.img"
    "$RK" create --force --level linear --size "$MEM_CACHE" "$WORK/b.img" >/dev/null 2>&1 || return 1
    start "$WORK/b.img" || return 1
    fio_run write.iops "${fill[@]}" >/dev/null || { stop; return 1; }
    base=$(rss_kib)
    stop
    truncate -s "$MEM_CACHE" "$WORK/c.img"
    "$RK" cache create --mode writeback "$WORK/c.img" "$WORK/b.img" >/dev/null 2>"$WORK/err" ||
        { log "cache create: $(tail -n1 "$WORK/err")"; return 1; }
    start --cache "$WORK/c.img" "$WORK/b.img" || return 1
    fio_run write.iops "${fill[@]}" >/dev/null || { stop; return 1; }
    with=$(rss_kib) used=$(cache_field used_blocks)/$(cache_field blocks)
    stop
    $PY - "$base" "$with" "$MEM_CACHE" "$used" <<'EOF'
import sys
base, with_, size, used = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
mult = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
b = int(size[:-1]) * mult[size[-1].upper()] if size[-1].isalpha() else int(size)
per_tib = (with_ - base) * 1024 * (2**40 / b)
print("  memory: serve RSS %d KiB without cache, %d KiB with a full %s cache (blocks used %s):"
      " %.1f MiB per TiB of cache" % (base, with_, size, used, per_tib / 2**20))
EOF
}

for ((round = 1; round <= ROUNDS; round++)); do
    order="raw cache"
    [ $((round % 2)) = 0 ] && order="cache raw"
    echo "round $round ($order)"
    for t in $TESTS; do
        case $t in
        hot) hot_round "$order" || FAILED+=" hot" ;;
        seq) seq_round "$order" || FAILED+=" seq" ;;
        drain) drain_round "$order" || FAILED+=" drain" ;;
        esac
    done
done
case " $TESTS " in *" memory "*) memory_test || FAILED+=" memory" ;; esac

echo "summary (means over $ROUNDS rounds; ratio = cache / reference)"
for k in hr:"hot 4K randread IOPS":0.8 hw:"hot 4K randwrite IOPS":0.8 sw:"seq 1M write B/s":0.9 \
    dr:"writeback drain B/s":0.8; do
    IFS=: read -r key name target <<<"$k"
    [ -n "${CNT[$key.cache]:-}" ] && [ -n "${CNT[$key.raw]:-}" ] || continue
    c=$(mean "$key.cache") r=$(mean "$key.raw")
    echo "  $name: cache $c, reference $r, ratio $(ratio "$c" "$r") (target >= $target)"
done
[ -z "$FAILED" ] || { echo "not run / failed:$FAILED (messages above)"; exit 1; }
