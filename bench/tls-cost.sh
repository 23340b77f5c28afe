#!/usr/bin/env bash
# Cost of TLS on the NBD path (bench/RESULTS.md "TLS"): one `raidkit serve --tls on` over a raid0
# of two tmpfs members serves plaintext (nbd+unix) and TLS (nbds+unix, X.509 from a throw-away CA
# that libnbd finds in $HOME/.pki/libnbd, since fio's nbd engine cannot pass tls-* URI files)
# clients at once; fio (nbd engine) runs 4K random read and write at qd16 and 1M sequential read
# at qd4 over each, alternating within each round. Prints every run and the TLS/plain ratio of the
# mean IOPS per workload (targets: >= 0.8 for 4K, >= 0.7 for 1M), and the CPU time per I/O of
# the server (/proc/PID/stat) and of the client (fio's usr+sys), which the load does not skew.
#
# Usage: bench/tls-cost.sh RAIDKIT_BINARY
# Environment: ROUNDS [3]  RUNTIME [5] s  MEMBER_SIZE [256M]  SHM_DIR [/dev/shm]
#   WORKLOADS ["randread,4k,16 randwrite,4k,16 read,1m,4"] (rw,bs,iodepth ...)
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bench_binary "$@"
ROUNDS=${ROUNDS:-3}
RUNTIME=${RUNTIME:-5}
MEMBER_SIZE=${MEMBER_SIZE:-256M}
SHM_DIR=${SHM_DIR:-/dev/shm}
bench_need fio certtool /usr/bin/python3
bench_workdir tls-cost

P="$WORK/pki"
mkdir -p "$P" "$WORK/home/.pki/libnbd"
printf 'cn = bench CA\nca\ncert_signing_key\nexpiration_days = 2\n' >"$P/ca.info"
printf 'cn = localhost\ndns_name = localhost\ntls_www_server\nencryption_key\nsigning_key\nexpiration_days = 2\n' >"$P/srv.info"
(
    cd "$P" && certtool --generate-privkey --outfile ca-key.pem &&
        certtool --generate-self-signed --load-privkey ca-key.pem --template ca.info --outfile ca-cert.pem &&
        certtool --generate-privkey --outfile server-key.pem &&
        certtool --generate-certificate --load-privkey server-key.pem --load-ca-certificate ca-cert.pem \
            --load-ca-privkey ca-key.pem --template srv.info --outfile server-cert.pem
) >/dev/null 2>&1 || { log "certtool failed"; exit 1; }
cp "$P/ca-cert.pem" "$WORK/home/.pki/libnbd/"

m=("$WORK/m0" "$WORK/m1")
truncate -s "$MEMBER_SIZE" "${m[@]}"
"$RK" create --force --level raid0 "${m[@]}" >/dev/null 2>&1 || exit 1
"$RK" serve --listen "unix:$WORK/sock" --tls on --tls-certificates "$P" "${m[@]}" 2>"$WORK/serve.log" &
RK_PID=$!
wait_socket "$RK_PID" "$WORK/sock" "$WORK/serve.log" || exit 1
PLAIN="nbd+unix:///?socket=$WORK/sock"
TLS="nbds+unix:///?socket=$WORK/sock"

# cpu_ticks PID: user+system clock ticks of PID so far.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# run URI RW BS QD: fio over URI; prints "IOPS SERVER_US_PER_IO CLIENT_US_PER_IO".
run() {
    local dir=read t0 t1
    [ "$2" = randwrite ] && dir=write
    t0=$(cpu_ticks "$RK_PID")
    HOME="$WORK/home" fio --name=r --ioengine=nbd --uri="$1" --rw="$2" --bs="$3" --iodepth="$4" \
        --time_based --runtime="$RUNTIME" --size=100% --randseed=42 \
        --output-format=json --output="$WORK/fio.json" >"$WORK/fio.out" 2>&1 ||
        { log "fio failed: $(tail -n 3 "$WORK/fio.out")"; echo "0 0 0"; return; }
    t1=$(cpu_ticks "$RK_PID")
    /usr/bin/python3 -c '
import json, os, sys
j = json.load(open(sys.argv[1]))["jobs"][0]
io = j[sys.argv[2]]["total_ios"] or 1
hz = os.sysconf("SC_CLK_TCK")
srv = (int(sys.argv[4]) - int(sys.argv[3])) / hz * 1e6 / io
cli = (j["usr_cpu"] + j["sys_cpu"]) / 100 * j["elapsed"] * 1e6 / io
print(round(j[sys.argv[2]]["iops"]), round(srv, 1), round(cli, 1))' "$WORK/fio.json" "$dir" "$t0" "$t1"
}

read -r -a WL <<<"${WORKLOADS:-randread,4k,16 randwrite,4k,16 read,1m,4}"
declare -A SUM SRV CLI
log "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
for ((round = 1; round <= ROUNDS; round++)); do
    for w in "${WL[@]}"; do
        IFS=, read -r rw bs qd <<<"$w"
        for kind in plain tls; do
            uri=$PLAIN
            [ $kind = tls ] && uri=$TLS
            read -r v s c <<<"$(run "$uri" "$rw" "$bs" "$qd")"
            k="$rw $bs $kind"
            SUM[$k]=$((${SUM[$k]:-0} + v))
            SRV[$k]=$(awk -v a="${SRV[$k]:-0}" -v b="$s" 'BEGIN { print a + b }')
            CLI[$k]=$(awk -v a="${CLI[$k]:-0}" -v b="$c" 'BEGIN { print a + b }')
            echo "round $round $rw $bs qd$qd $kind: $v IOPS, server ${s} us CPU/IO, client ${c} us CPU/IO"
        done
    done
done
log "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
for w in "${WL[@]}"; do
    IFS=, read -r rw bs qd <<<"$w"
    p="$rw $bs plain" t="$rw $bs tls"
    awk -v p="${SUM[$p]}" -v t="${SUM[$t]}" -v sp="${SRV[$p]}" -v st="${SRV[$t]}" -v cp="${CLI[$p]}" \
        -v ct="${CLI[$t]}" -v n="$ROUNDS" -v w="$rw $bs qd$qd" 'BEGIN {
        printf "%-16s IOPS plain %7.0f tls %7.0f tls/plain %.2f | CPU us/IO server %.1f -> %.1f, client %.1f -> %.1f\n",
            w, p/n, t/n, (p ? t/p : 0), sp/n, st/n, cp/n, ct/n }'
done
