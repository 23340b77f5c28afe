#!/usr/bin/env bash
# Served calibration of the built-in device models: one emulated device (raidkit serve --emulate)
# under each seed workload through fio's nbd engine, next to the seed's single-disk figure and the
# same command without a model (the host's ceiling). Prints a table; docs/BENCHMARKS.md and
# bench/RESULTS.md record its output.
#
# Usage: bench/calibrate.sh RAIDKIT_BINARY
# Environment: RUNTIME (10 s), RAMP (2 s), PROFILES (sata-ssd-2014,hdd-7200; also
# mushkin-ssd-2015, the INI in bench/profiles), IODEPTH (64; seed 003's rows are read as 1)
set -euo pipefail
[ $# -eq 1 ] && [ -x "$1" ] || { echo "usage: $0 RAIDKIT_BINARY" >&2; exit 2; }
RK=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
RUNTIME=${RUNTIME:-10}
RAMP=${RAMP:-2}
PROFILES=${PROFILES:-sata-ssd-2014,hdd-7200}
IODEPTH=${IODEPTH:-64}
PY=/usr/bin/python3
command -v fio >/dev/null || { echo "calibrate: fio missing (scripts/install-deps.sh)" >&2; exit 1; }

T=$(mktemp -d /dev/shm/rk-calibrate.XXXXXX)
SRV=""
cleanup() { [ -n "$SRV" ] && kill "$SRV" 2>/dev/null && wait "$SRV" 2>/dev/null; rm -rf "$T"; }
trap cleanup EXIT
"$RK" create --level linear --size 2G "$T/m.img" >/dev/null

serve() # [--emulate PROFILE]
{
    "$RK" serve --threads 128 --listen "unix:$T/s" "$@" "$T/m.img" 2>"$T/serve.log" &
    SRV=$!
    for _ in $(seq 100); do [ -S "$T/s" ] && return 0; sleep 0.1; done
    cat "$T/serve.log" >&2
    return 1
}
unserve() { kill "$SRV"; wait "$SRV" || true; SRV=""; rm -f "$T/s"; }

# run RW BS -> MB/s (10^6 bytes/s), reads + writes
run()
{
    fio --name=cal --ioengine=nbd --uri="nbd+unix:///?socket=$T/s" --rw="$1" --bs="$2" \
        --iodepth="$IODEPTH" --size=1g --ramp_time="$RAMP" --runtime="$RUNTIME" --time_based \
        --output-format=json --output="$T/o.json" >/dev/null 2>"$T/fio.err" ||
        { cat "$T/fio.err" >&2; return 1; }
    $PY -c 'import json,sys; j=json.load(open(sys.argv[1]))["jobs"][0]
print("%.2f" % ((j["read"]["bw_bytes"] + j["write"]["bw_bytes"]) / 1e6))' "$T/o.json"
}

# profile workload(rw) bs seed-MB/s
rows=()
IFS=, read -ra P <<<"$PROFILES"
for p in "${P[@]}"; do
    case $p in
    sata-ssd-2014) rows+=("$p randread 16k 236.89" "$p randwrite 16k 170.35" "$p read 16k 239.98"
                          "$p write 16k 169.40") ;;
    hdd-7200) rows+=("$p randwrite 4k 1.47" "$p read 4k 2.75" "$p write 4k 107.00") ;;
    mushkin-ssd-2015) rows+=("$p randread 4k 48.09" "$p randwrite 4k 139.76" "$p read 4k 84.88"
                             "$p write 4k 144.11") ;;
    *) echo "calibrate: no seed figures for profile $p" >&2; exit 2 ;;
    esac
done

echo "served calibration: fio nbd engine, iodepth $IODEPTH, ${RUNTIME}s (+${RAMP}s ramp), 1 GiB region"
echo "$(date -u '+%F %H:%M UTC'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(fio --version)"
printf '%-14s %-10s %4s %9s %9s %8s %12s\n' profile workload bs seed served error "no model"
for r in "${rows[@]}"; do
    read -r prof rw bs seed <<<"$r"
    emu=$prof
    [ "$prof" = mushkin-ssd-2015 ] && emu="$(dirname "$0")/profiles/$prof.ini"
    serve --emulate "$emu"
    got=$(run "$rw" "$bs")
    unserve
    serve
    ceil=$(run "$rw" "$bs")
    unserve
    err=$($PY -c "print('%+.1f%%' % (($got / $seed - 1) * 100))")
    note=""
    $PY -c "import sys; sys.exit(0 if $got >= 0.9 * $ceil else 1)" && note=" (host-bound)"
    printf '%-14s %-10s %4s %9s %9s %8s %12s%s\n' "$prof" "$rw" "$bs" "$seed" "$got" "$err" "$ceil" "$note"
    echo "[calibrate] $prof $rw $bs: $got MB/s (seed $seed, ceiling $ceil)" >&2
done
