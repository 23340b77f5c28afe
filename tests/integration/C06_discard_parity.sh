#!/bin/bash
# C06_discard_parity: case C06 through the NBD server. RAID5 of 3 x 1 MiB data, chunk 64K,
# stamped; NBD TRIM of [64K, 68K) and [128K, 384K); scrub finds 0 mismatched stripes; with m0
# missing, [0, 512K) reads back intact outside the discards and zeros or old data inside.
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
rk_init

# 1 MiB of superblock/metadata room plus 1 MiB of data area per member.
rk_members 3 2M
rk_create --level raid5 --chunk 64K "${M[@]}"
size=$(rk_array_size "${M[@]}") || exit 1
[ "$size" -eq $((2 * MiB)) ] || rk_fail "array size $size, want 2 MiB"
rk_serve "${M[@]}"
rk_stamp 1 0 "$size"
"$RK_PY" - "$RK_URI" <<'PY' || rk_fail "NBD trim"
import sys, nbd
h = nbd.NBD()
h.connect_uri(sys.argv[1])
h.trim(4096, 65536)
h.trim(256 * 1024, 128 * 1024)
h.flush()
h.shutdown()
PY
rk_stop

scrub_out=$(timeout 60 "$RAIDKIT" scrub "${M[@]}" 2>"$T/scrub.err") ||
    rk_fail "raidkit scrub: $(cat "$T/scrub.err")"
echo "$scrub_out" | grep -q "^scrub finished: 0 mismatches" || rk_fail "scrub after discards: $scrub_out"
rk_log "scrub: $scrub_out"

mv "${M[0]}" "${M[0]}.away"
rk_serve --degraded "${M[2]}" "${M[1]}"
rk_verify 0 $((64 * 1024)) 1 $((68 * 1024)) $((60 * 1024)) 1 $((384 * 1024)) $((128 * 1024)) 1
"$RK_PY" - "$RK_URI" "$T/rk.py" <<'PY' || rk_fail "discarded ranges hold neither zeros nor old data"
import sys, nbd
h = nbd.NBD()
h.connect_uri(sys.argv[1])
# The stamp format of tests/lib/common.sh (rk.py), generation 1.
src = open(sys.argv[2]).read().replace("\nmain()\n", "\n")
ns = {}
exec(compile(src, sys.argv[2], "exec"), ns)
for off, length in ((64 * 1024, 4096), (128 * 1024, 256 * 1024)):
    got = h.pread(length, off)
    old = ns["stamps"](off, length, 1)
    for i in range(0, length, 512):
        s = got[i:i + 512]
        if s != bytes(512) and s != old[i:i + 512]:
            sys.exit("array offset %d: neither zeros nor the old stamp" % (off + i))
h.shutdown()
PY
rk_stop
echo PASS
