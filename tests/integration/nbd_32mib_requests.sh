#!/usr/bin/env bash
# Requests up to 32 MiB work end to end through `raidkit serve` (issue: "requests up to 32 MiB
# work"): one 32 MiB WRITE and one 32 MiB READ per level, unaligned to the chunk, read back exact,
# and nbdinfo advertises a 32 MiB maximum block size.
. "$RAIDKIT_SOURCE_DIR/tests/lib/common.sh"
rk_init
rk_need nbdinfo

cat >"$T/big.py" <<'PY'
import nbd, os, sys
uri = sys.argv[1]
h = nbd.NBD()
h.connect_uri(uri)
MiB = 1 << 20
assert h.get_block_size(nbd.SIZE_MAXIMUM) == 32 * MiB, h.get_block_size(nbd.SIZE_MAXIMUM)
data = os.urandom(32 * MiB)
off = 3 * 4096 + 512  # crosses every chunk boundary at an odd place
h.pwrite(data, off)
h.flush()
back = h.pread(32 * MiB, off)
if back != data:
    first = next(i for i in range(len(data)) if data[i] != back[i])
    sys.exit("32 MiB read back differs first at byte %d" % first)
h.shutdown()
PY

for spec in "linear 2" "0 3" "1 2" "10 4" "5 3" "6 4"; do
    set -- $spec
    rk_log "level $1, $2 members: 32 MiB write + read"
    rk_members "$2" 40M "l$1-"
    rk_create --level "$1" --chunk 64K "${M[@]}"
    rk_serve "${M[@]}"
    "$RK_PY" "$T/big.py" "$RK_URI" || rk_fail "level $1: 32 MiB request failed"
    rk_stop
    rm -f "${M[@]}"
done
echo "PASS: 32 MiB requests on every level"
