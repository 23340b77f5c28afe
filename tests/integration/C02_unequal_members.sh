#!/bin/bash
# C02_unequal_members: raid0 over members with 1, 1, 2, 2 MiB of data (chunk 64K): the array is
# 6 MiB (4 MiB striped over all 4, then 2 MiB over the 2 larger), stamps survive re-assembly.
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
rk_init
rk_need nbdinfo

rk_members 4 2M
truncate -s 3M "${M[2]}" "${M[3]}"
rk_create --level raid0 --chunk 64K "${M[@]}"

size=$(rk_array_size "${M[@]}") || exit 1
[ "$size" -eq $((6 * MiB)) ] || rk_fail "info --json array_size $size, want $((6 * MiB))"
"$RAIDKIT" info "${M[@]}" >"$T/info.txt" 2>&1 || rk_fail "raidkit info: $(cat "$T/info.txt")"
grep -Eqi '6291456|6(\.0+)? ?MiB|6(\.0+)? ?M\b' "$T/info.txt" ||
    rk_fail "raidkit info does not print the array size 6 MiB: $(cat "$T/info.txt")"

rk_serve "${M[@]}"
rk_check_nbdinfo $((6 * MiB))
rk_stamp 1 0 "$size"
rk_verify 0 "$size" 1
rk_stop

# shellcheck disable=SC2046
rk_serve $(rk_reorder "3 1 2 0" "${M[@]}")
rk_verify 0 "$size" 1
rk_stop

# The placement, read from the member files: zone 0 = array [0, 4M) striped over slots 0-3
# (chunk c on slot c % 4 at data offset (c / 4) * 64K); zone 1 = array [4M, 6M) over slots 2, 3
# (chunk c on slot 2 + c % 2 at data offset 1M + (c / 2) * 64K). Data starts at 1 MiB on a member.
"$RK_PY" - "${M[@]}" <<'PY' || rk_fail "chunk -> member placement differs from the md-style zones"
import struct, sys
K64, MIB = 64 * 1024, 1 << 20
members = [open(p, "rb").read() for p in sys.argv[1:]]
bad = 0
for c in range(96):
    x = c * K64
    if x < 4 * MIB:
        slot, off = c % 4, (c // 4) * K64
    else:
        c1 = c - 64
        slot, off = 2 + c1 % 2, MIB + (c1 // 2) * K64
    for s in range(0, K64, 512):
        got = struct.unpack_from("<QQ", members[slot], MIB + off + s)
        if got != (x + s, 1):
            print("array offset %d: want it on slot %d member offset %d, found stamp %s"
                  % (x + s, slot, MIB + off + s, got), file=sys.stderr)
            bad += 1
            break
    if bad >= 5:
        break
sys.exit(1 if bad else 0)
PY
echo PASS
