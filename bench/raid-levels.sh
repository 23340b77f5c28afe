#!/usr/bin/env bash
# RAID write cost benchmark (bench/RESULTS.md "RAID5/RAID6 writes" and "Member I/O path"): raid0,
# raid1, raid5, raid6 and raid10 built in turn on the same 4 and 6 member files on tmpfs, served
# by `raidkit serve`, measured with fio (nbd engine), with the server's CPU time per host I/O.
#
# Usage: bench/raid-levels.sh RAIDKIT_BINARY [OTHER_BINARY...]
#   With several binaries (old vs new), each level of each round is served by every binary in
#   turn (who goes first rotates per round); the report has one block per binary.
# Environment (defaults in brackets):
#   ROUNDS [2]  RUNTIME [4] s per run  MEMBER_SIZE [512M]  CHUNK [64K]  MEMBERS [4,6]
#   LEVELS [raid0 raid1 raid5 raid6 raid10]  WORKLOADS [all] (a subset of the names below);
#   LEVEL:none (e.g. raid10:none) creates that level with `--bitmap none`, reported as its own row;
#   raid5:nogather / raid6:nogather serve that level with RAIDKIT_RAID5_GATHER_US=0 (stripe
#   gathering off) in the same run, for the "random writes not slower with gathering" target
#   SERVE_ENV [""] extra VAR=VALUE words for every `raidkit serve` (e.g. RAIDKIT_MEMBER_IO=inline)
#   CTX [1 when perf is installed] count the server's context switches per host I/O
#   (`perf stat -e context-switches -p PID` over the fio run; /proc/PID/task/*/status counters
#   read 0 on some kernels)
#   WARMUP [1] s of the same fio job before each measured run (not counted: first writes into
#   fresh write-intent bitmap regions pay an area write, which is not the steady state)
#   SHM_DIR [/dev/shm]  OUT_DIR [<repo>/bench/out/raid-levels-TIME]
#   WAIT_QUIET [0] s to wait for a 1-minute load average below QUIET_LOAD [1.5] before measuring
#   PARITY_PERF [<dir of RAIDKIT>/parity_perf] run it at the end too ("" to skip)
# Workloads: seqwrite1m (1M sequential write, qd 8), seqwritefs (sequential write with bs = the
# least common multiple of the raid0, raid5 and raid6 stripe widths, so every request of every
# level covers whole stripes; qd 8), randwrite4k (4K random write, qd 32), randwrite16k (16K
# random write, qd 32), seqwrite16k (16K sequential write, qd 8: sub-chunk writes into raid5/6
# stripes, the stream-fill case). Levels alternate within a round (and rotate who goes first every round);
# each level is created afresh on the same member files (`create --force`) and served on its
# own. Per-member I/O counters from `raidkit status --json` give the member reads/writes per host
# request; utime + stime of the server process (/proc/PID/stat, every thread including io_uring
# workers) over the fio run give the server CPU per host I/O. No ramp time: the counters cover
# the whole fio run, so fio's numbers must too. Targets (issue 13 item 1), printed as PASS/FAIL
# per binary and member count: CPU per 16K write raid10 <= 1.5x raid0, raid1 <= 2.5x raid0 (4
# members: 4 copies); 4K random write IOPS raid10 >= 0.9x raid0; (item 2) seqwrite16k on raid5/6:
# member reads per host write <= 0.05 and MiB/s >= 0.8 x (N-1)/N (raid6 (N-2)/N) x raid0;
# random 4K/16K writes with gathering (raid5, raid6) vs without (:nogather): server CPU per
# write <= 1.10x and IOPS >= 0.90x (medians; IOPS alone swing +-30% on a loaded machine).
# Figures are medians of rounds.
set -uo pipefail

if [ $# -lt 1 ]; then
    echo "usage: $0 RAIDKIT_BINARY [OTHER_BINARY...]" >&2
    exit 2
fi
BINS=()
for b in "$@"; do
    [ -x "$b" ] || { echo "$0: $b: not an executable" >&2; exit 2; }
    BINS+=("$(cd "$(dirname "$b")" && pwd)/$(basename "$b")")
done
RK=${BINS[0]}
REPO=$(cd "$(dirname "$0")/.." && pwd)
ROUNDS=${ROUNDS:-2}
RUNTIME=${RUNTIME:-4}
MEMBER_SIZE=${MEMBER_SIZE:-512M}
CHUNK=${CHUNK:-64K}
MEMBERS=${MEMBERS:-4,6}
SHM_DIR=${SHM_DIR:-/dev/shm}
WAIT_QUIET=${WAIT_QUIET:-0}
QUIET_LOAD=${QUIET_LOAD:-1.5}
PARITY_PERF=${PARITY_PERF-$(dirname "$RK")/parity_perf}
OUT_DIR=${OUT_DIR:-$REPO/bench/out/raid-levels-$(date +%Y%m%d-%H%M%S)}
PY=/usr/bin/python3
SERVE_ENV=${SERVE_ENV:-}
if [ -z "${CTX:-}" ]; then
    CTX=0
    command -v perf >/dev/null 2>&1 && CTX=1
fi

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bench_need fio nbdinfo "$PY"
bench_workdir raid-levels
mkdir -p "$OUT_DIR" || exit 1

# counters CONTROL: "reads writes read_bytes write_bytes" summed over the members
counters() {
    "$RK" status --json --control "$1" | "$PY" -c '
import json, sys
d = json.load(sys.stdin)
t = [0, 0, 0, 0]
for s in d["slots"]:
    io = s.get("io")
    if isinstance(io, dict):
        for i, k in enumerate(("reads", "writes", "read_bytes", "write_bytes")):
            t[i] += io.get(k, 0)
print(*t)'
}

# ---------------------------------------------------------------- plan

CH_K=$(($("$PY" -c "
import sys
s = sys.argv[1].upper().rstrip('B').rstrip('I')
m = {'K': 1, 'M': 1024}
print(int(s[:-1]) * m[s[-1]] if s[-1] in m else int(s) // 1024)" "$CHUNK")))
IFS=, read -r -a NS <<<"$MEMBERS"
declare -A FS_BS
for n in "${NS[@]}"; do
    # lcm of the data members per stripe of raid0 (n), raid5 (n-1) and raid6 (n-2), in chunks
    FS_BS[$n]=$(("$("$PY" -c "import math; print(math.lcm($n, $n - 1, $n - 2))")" * CH_K))K
done
read -r -a LEVELS <<<"${LEVELS:-raid0 raid1 raid5 raid6 raid10}"
WORKLOADS=${WORKLOADS:-seqwrite1m seqwritefs seqwrite16k randwrite4k randwrite16k}
WARMUP=${WARMUP:-1}
level_wls() {
    local all w out=""
    case ${1%%:*} in
    raid0 | raid5 | raid6) all="seqwrite1m seqwritefs seqwrite16k randwrite4k randwrite16k" ;;
    raid1 | raid10) all="randwrite4k randwrite16k" ;;
    esac
    [ "${1#*:}" = nogather ] && all="seqwrite16k randwrite4k randwrite16k"
    for w in $all; do
        case " $WORKLOADS " in *" $w "*) out="$out $w" ;; esac
    done
    echo "$out"
}
# server CPU time of PID in clock ticks (utime + stime of every thread)
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
TCK=$(getconf CLK_TCK)
wl_opts() { # WORKLOAD N
    case $1 in
    seqwrite1m) echo "--rw=write --bs=1M --iodepth=8" ;;
    seqwrite16k) echo "--rw=write --bs=16k --iodepth=8" ;;
    seqwritefs) echo "--rw=write --bs=${FS_BS[$2]} --iodepth=8" ;;
    randwrite4k) echo "--rw=randwrite --bs=4k --iodepth=32 --norandommap --randrepeat=0" ;;
    randwrite16k) echo "--rw=randwrite --bs=16k --iodepth=32 --norandommap --randrepeat=0" ;;
    esac
}

total=0
for n in "${NS[@]}"; do
    for l in "${LEVELS[@]}"; do
        for _ in $(level_wls "$l"); do total=$((total + 1)); done
    done
done
total=$((total * ROUNDS * ${#BINS[@]}))

log "members: ${NS[*]} x $MEMBER_SIZE on $SHM_DIR (zero-filled so no run pays for page allocation)"
MAXN=0
for n in "${NS[@]}"; do [ "$n" -gt "$MAXN" ] && MAXN=$n; done
for i in $(seq 0 $((MAXN - 1))); do
    truncate -s "$MEMBER_SIZE" "$WORK/m$i" || exit 1
    dd if=/dev/zero of="$WORK/m$i" bs=1M count=$(($(stat -c %s "$WORK/m$i") / 1048576)) \
        conv=notrunc status=none || exit 1
done

wait_quiet
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
RAW=$OUT_DIR/raw.tsv
printf 'n\tlevel\tworkload\tround\tbs\tiops\tmibs\thost_ios\tm_reads\tm_writes\tm_rbytes\tm_wbytes\tcpu_s\tbin\tctx\n' \
    >"$RAW"
log "$ROUNDS rounds, $total fio runs of ${RUNTIME}s: ~$((total * (RUNTIME + 1) / 60 + 1)) min;" \
    "chunk $CHUNK; full-stripe bs: $(for n in "${NS[@]}"; do printf '%s members %s  ' "$n" \
        "${FS_BS[$n]}"; done)"

k=0
for r in $(seq 1 "$ROUNDS"); do
    for n in "${NS[@]}"; do
        members=()
        for i in $(seq 0 $((n - 1))); do members+=("$WORK/m$i"); done
        rot=$(((r - 1) % ${#LEVELS[@]}))
        order=("${LEVELS[@]:$rot}" "${LEVELS[@]:0:$rot}")
        for l in "${order[@]}"; do
            nb=${#BINS[@]}
            for j in $(seq 0 $((nb - 1))); do
                bi=$(((j + r - 1) % nb))
                RK=${BINS[$bi]}
                # zero-filled members agree already: --assume-clean keeps create from punching
                # holes into them (the first writes would then pay for tmpfs page allocation,
                # which raid0, never zeroed, does not). LEVEL:none = --bitmap none.
                copts=()
                [ "${l%%:*}" != raid0 ] && copts+=(--assume-clean)
                [ "${l#*:}" = none ] && copts+=(--bitmap none)
                "$RK" create --force --level "${l%%:*}" --chunk "$CHUNK" "${copts[@]}" "${members[@]}" \
                    >"$OUT_DIR/create-$n-$l.txt" 2>&1 || {
                    log "create failed ($n members $l):"
                    cat "$OUT_DIR/create-$n-$l.txt" >&2
                    exit 1
                }
                sock=$WORK/nbd.sock ctl=$WORK/ctl.sock
                rm -f "$sock" "$ctl"
                slog=$OUT_DIR/serve-b$bi-$n-$l-r$r.log
                senv=()
                [ "${l#*:}" = nogather ] && senv+=(RAIDKIT_RAID5_GATHER_US=0)
                # shellcheck disable=SC2206
                senv+=($SERVE_ENV)
                env "${senv[@]}" "$RK" serve --listen "unix:$sock" --control "$ctl" \
                    "${members[@]}" 2>"$slog" &
                RK_PID=$!
                wait_socket "$RK_PID" "$sock" "$slog" || exit 1
                uri="nbd+unix:///?socket=$sock"
                vsize=$(nbdinfo --size "$uri") || exit 1
                for w in $(level_wls "$l"); do
                    k=$((k + 1))
                    json=$OUT_DIR/b$bi-$n-$l-$w-r$r.json
                    # whole requests only: a size that is a multiple of the block size
                    bs_b=$("$PY" -c "
s = '$(wl_opts "$w" "$n")'.split('--bs=')[1].split()[0]
print(int(s[:-1]) * {'k': 1024, 'K': 1024, 'M': 1048576}[s[-1]])")
                    fsize=$((vsize / bs_b * bs_b))
                    if [ "$WARMUP" != 0 ]; then
                        # shellcheck disable=SC2046
                        fio --name="$w" --ioengine=nbd --uri="$uri" $(wl_opts "$w" "$n") \
                            --size="$fsize" --time_based --runtime="$WARMUP" --randseed=7 \
                            --output=/dev/null >/dev/null 2>&1
                    fi
                    before=$(counters "$ctl") || { log "status failed"; exit 1; }
                    c0=$(cpu_ticks "$RK_PID")
                    pstat=$OUT_DIR/ctx-b$bi-$n-$l-$w-r$r.txt
                    PS_PID=""
                    if [ "$CTX" = 1 ]; then
                        perf stat -x, -e context-switches -p "$RK_PID" -o "$pstat" 2>/dev/null &
                        PS_PID=$!
                    fi
                    # shellcheck disable=SC2046
                    fio --name="$w" --ioengine=nbd --uri="$uri" $(wl_opts "$w" "$n") \
                        --size="$fsize" --time_based --runtime="$RUNTIME" --randseed=42 \
                        --output-format=json --output="$json" >"$json.err" 2>&1 || {
                        log "fio failed ($n members $l $w round $r):"
                        cat "$json.err" >&2
                        tail -n 20 "$slog" >&2
                        exit 1
                    }
                    c1=$(cpu_ticks "$RK_PID")
                    ctx=-1
                    if [ -n "$PS_PID" ]; then
                        kill -INT "$PS_PID" 2>/dev/null
                        wait "$PS_PID" 2>/dev/null
                        ctx=$(awk -F, '/context-switches/ { print $1 + 0 }' "$pstat" 2>/dev/null)
                        [ -n "$ctx" ] || ctx=-1
                    fi
                    after=$(counters "$ctl") || { log "status failed"; exit 1; }
                    line=$("$PY" - "$json" "$before" "$after" <<'EOF'
import json, sys
text = open(sys.argv[1]).read()  # fio may put warning lines before the JSON
t = json.loads(text[text.index("{"):])["jobs"][0]["write"]
b = [int(x) for x in sys.argv[2].split()]
a = [int(x) for x in sys.argv[3].split()]
d = [y - x for x, y in zip(b, a)]
print("%.1f\t%.1f\t%d\t%d\t%d\t%d\t%d" % (t["iops"], t["bw"] / 1024.0, t["total_ios"], *d))
EOF
) || exit 1
                    cpu_s=$("$PY" -c "print(($c1 - $c0) / $TCK)")
                    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$n" "$l" "$w" "$r" "$bs_b" \
                        "$line" "$cpu_s" "$bi" "$ctx" >>"$RAW"
                    log "($k/$total) round $r, $n members, $l $w: $(cut -f1 <<<"$line") IOPS" \
                        "$(cut -f2 <<<"$line") MiB/s"
                done
                kill -TERM "$RK_PID"
                wait "$RK_PID"
                rc=$?
                RK_PID=""
                if [ "$rc" -ne 0 ]; then
                    log "raidkit serve exited $rc ($n members $l round $r):"
                    tail -n 20 "$slog" >&2
                    exit 1
                fi
            done
        done
    done
done
LOAD_END=$(cut -d' ' -f1-3 /proc/loadavg)

# ---------------------------------------------------------------- report

{
    cpu=$(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo)
    echo "raid0/1/5/6/10 on the same ${MEMBER_SIZE} member files on $SHM_DIR, chunk $CHUNK," \
        "fio nbd engine, one job"
    echo "date $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores ($cpu), kernel $(uname -r)"
    echo "$("$RK" --version 2>/dev/null), $(fio --version)"
    echo "load average at start $LOAD_START, at end $LOAD_END"
    echo "$ROUNDS rounds x ${RUNTIME}s per level and workload, levels alternating;" \
        "median (min..max) of rounds${SERVE_ENV:+; serve env: $SERVE_ENV}"
    echo
    for j in $(seq 0 $((${#BINS[@]} - 1))); do echo "bin $j: ${BINS[$j]}"; done
    echo
    "$PY" - "$RAW" <<'EOF'
import sys, collections, statistics
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])][1:]
data = collections.OrderedDict()
for n, lv, w, r, bs, iops, mibs, hios, mr, mw, mrb, mwb, cpu, b, ctx in rows:
    data.setdefault((int(b), int(n)), {}).setdefault(w, {}).setdefault(lv, []).append(
        (float(iops), float(mibs), int(hios), int(mr), int(mw), int(mrb), int(mwb), int(bs),
         float(cpu), float(ctx)))
med = statistics.median
def cpu_us(v):  # server CPU per host I/O, median over rounds
    return med([x[8] * 1e6 / x[2] for x in v if x[2]] or [0])
def ctx_io(v):  # server context switches per host I/O, median over rounds (-1: not counted)
    c = [x[9] / x[2] for x in v if x[2] and x[9] >= 0]
    return med(c) if c else -1
def verdict(ok): return "PASS" if ok else "FAIL"
for (b, n), by_w in sorted(data.items()):
    print("== bin %d, %d members" % (b, n))
    print("%-12s %-14s %9s %9s %16s %10s %10s %9s %9s %8s" % (
        "workload", "level", "IOPS", "MiB/s", "MiB/s range", "rd/host io", "wr/host io",
        "wr bytes x", "cpu us/io", "ctx/io"))
    for w, by_l in by_w.items():
        for lv, v in by_l.items():
            hios = sum(x[2] for x in v)
            hbytes = sum(x[2] * x[7] for x in v)
            mr, mw = sum(x[3] for x in v), sum(x[4] for x in v)
            mwb = sum(x[6] for x in v)
            c = ctx_io(v)
            print("%-12s %-14s %9.0f %9.1f %7.1f..%-7.1f %10.2f %10.2f %9.3f %9.1f %8s" % (
                w, lv, med([x[0] for x in v]), med([x[1] for x in v]),
                min(x[1] for x in v), max(x[1] for x in v), mr / hios if hios else 0,
                mw / hios if hios else 0, mwb / hbytes if hbytes else 0, cpu_us(v),
                "%.2f" % c if c >= 0 else "-"))
    print()
    for w in ("seqwrite1m", "seqwritefs", "seqwrite16k"):
        if w not in by_w or "raid0" not in by_w[w]:
            continue
        r0 = med([x[1] for x in by_w[w]["raid0"]])
        for lv, p in (("raid5", 1), ("raid6", 2), ("raid5:nogather", 1), ("raid6:nogather", 2)):
            if lv not in by_w[w]:
                continue
            v = by_w[w][lv]
            ratio = med([x[1] for x in v]) / r0
            f = 0.8 if w == "seqwrite16k" else 0.9
            target = f * (n - p) / n
            line = "%s %s/raid0 MiB/s = %.3f (target >= %.1f x (N-%d)/N = %.3f)" % (
                w, lv, ratio, f, p, target)
            if lv.endswith(":nogather"):
                print("info: " + line + " [gathering off]")
                continue
            print("%s: %s" % (verdict(ratio >= target), line))
            if w == "seqwrite16k":
                hios = sum(x[2] for x in v)
                rd = sum(x[3] for x in v) / hios if hios else 0
                print("%s: %s %s member reads per host write = %.3f (target ~0: <= 0.05)" % (
                    verdict(rd <= 0.05), w, lv, rd))
    w = "randwrite4k"
    if w in by_w and "raid10" in by_w[w]:
        r10 = med([x[0] for x in by_w[w]["raid10"]])
        for lv in ("raid5", "raid6"):
            if lv in by_w[w]:
                print("info: %s %s/raid10 IOPS = %.3f" % (w, lv, med([x[0] for x in by_w[w][lv]]) / r10))
    # issue 13 item 1 targets
    w16 = by_w.get("randwrite16k", {})
    if "raid0" in w16:
        c0 = cpu_us(w16["raid0"])
        for lv, lim in (("raid10", 1.5), ("raid1", 2.5), ("raid10:none", 1.5), ("raid1:none", 2.5)):
            if lv in w16:
                x = cpu_us(w16[lv]) / c0
                print("%s: cpu per 16K write %s/raid0 = %.1f/%.1f us = %.2fx (target <= %.1fx%s)"
                      % (verdict(x <= lim), lv, cpu_us(w16[lv]), c0, x, lim,
                         ", %d copies" % n if lv.startswith("raid1:") or lv == "raid1" else ""))
    w4 = by_w.get("randwrite4k", {})
    for lv in ("raid10", "raid10:none"):
        if "raid0" in w4 and lv in w4:
            x = med([y[0] for y in w4[lv]]) / med([y[0] for y in w4["raid0"]])
            print("%s: 4K random write IOPS %s/raid0 = %.2fx (target >= 0.9x)" % (verdict(x >= 0.9), lv, x))
    # issue 13 item 2: random writes must not get slower with gathering
    for w in ("randwrite4k", "randwrite16k"):
        for lv in ("raid5", "raid6"):
            on, off = by_w.get(w, {}).get(lv), by_w.get(w, {}).get(lv + ":nogather")
            if not on or not off:
                continue
            xc = cpu_us(on) / cpu_us(off)
            xi = med([y[0] for y in on]) / med([y[0] for y in off])
            print("%s: %s %s gathering on/off: cpu per write %.1f/%.1f us = %.2fx (target <= 1.10x),"
                  " IOPS %.2fx (target >= 0.90x)" % (verdict(xc <= 1.10 and xi >= 0.90), w, lv,
                                                     cpu_us(on), cpu_us(off), xc, xi))
    print()
print("rd/host io, wr/host io: member reads / writes per fio request; wr bytes x: member bytes")
print("written / host bytes (status --json counters over the whole run); cpu us/io: server")
print("utime+stime per fio request; ctx/io: server context switches per fio request (perf stat;")
print("- = not counted); IOPS, MiB/s, cpu, ctx: medians of rounds. Theory for 4K random writes:")
print("raid5 2+2, raid6 3+3, raid10 0+2, raid1 0+N; full-stripe writes read nothing and write")
print("N/(N-1) (raid5) or N/(N-2) (raid6) times the data.")
EOF
} | tee "$OUT_DIR/results.txt"

if [ -n "$PARITY_PERF" ] && [ -x "$PARITY_PERF" ]; then
    log "parity kernels: $PARITY_PERF"
    { echo; echo "parity kernels ($PARITY_PERF):"; "$PARITY_PERF"; } | tee -a "$OUT_DIR/results.txt"
fi
log "raw trials: $RAW, fio JSON and server logs: $OUT_DIR"
