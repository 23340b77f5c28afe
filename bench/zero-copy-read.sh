#!/usr/bin/env bash
# Zero-copy reads (issue 13 item 5; bench/RESULTS.md "Zero-copy reads"): sender CPU per reply of
# pread + sendmsg against splice (file -> pipe -> unix socket), 16 KiB and 1 MiB, from a file
# on tmpfs, alternating ROUNDS times. Usage: bench/zero-copy-read.sh
# Environment: ROUNDS [3]  SHM_DIR [/dev/shm]  CC [cc]
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
ROUNDS=${ROUNDS:-3}
SHM_DIR=${SHM_DIR:-/dev/shm}
bench_need "${CC:-cc}"
bench_workdir zero-copy-read
"${CC:-cc}" -O2 -Wall -o "$WORK/svc" "$(dirname "$0")/zerocopy/splice-vs-copy.c" -lpthread || exit 1
truncate -s 256M "$WORK/m.img"
dd if=/dev/urandom of="$WORK/m.img" bs=1M count=256 conv=notrunc status=none || exit 1
log "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
for _ in $(seq 1 "$ROUNDS"); do
    for m in copy splice; do
        "$WORK/svc" "$m" 1048576 2000 "$WORK/m.img"
        "$WORK/svc" "$m" 16384 50000 "$WORK/m.img"
    done
done
log "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
