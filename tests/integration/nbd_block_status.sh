#!/bin/bash
# nbd_block_status: NBD block status (base:allocation) answered from the members' holes, mapped
# through the level (docs/ARCHITECTURE.md, "NBD block status"). For sparse raid0, raid1 and raid5
# volumes with three known written ranges: `nbdinfo --map` equals the layout, `qemu-img map`
# shows the same data ranges, `nbdcopy` reads only the allocated bytes from the members (member
# read counters of `status --json --control`), a discard gives the hole back; protocol edge cases
# with a raw client (nbd_block_status.py); FAST_ZERO on raid1 (fast) and raid5 (ENOTSUP).
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
rk_init
rk_need nbdinfo nbdcopy nbdsh qemu-img
HERE=$(dirname "$0")
K=1024

# Known ranges [start len] in bytes: aligned to 128 KiB (a raid5 stripe of 3 x 64K chunks).
RANGES=(1048576 131072 10747904 393216)

# bs_expected SIZE: the map nbdinfo --map must print ("start length type" lines).
bs_expected()
{
    local size=$1 pos=0 i s l
    for ((i = 0; i < ${#RANGES[@]}; i += 2)); do
        s=${RANGES[i]} l=${RANGES[i + 1]}
        [ "$s" -gt "$pos" ] && echo "$pos $((s - pos)) 3"
        echo "$s $l 0"
        pos=$((s + l))
    done
    [ "$size" -gt "$pos" ] && echo "$pos $((size - pos)) 3"
}

# bs_member_reads: sum of the members' read_bytes from the control socket.
bs_member_reads()
{
    "$RAIDKIT" status --json --control "$T/ctl" >"$T/st.json" || rk_fail "status --json failed"
    "$RK_PY" -c 'import json,sys; s=json.load(open(sys.argv[1]))
print(sum(x.get("io", {}).get("read_bytes", 0) for x in s["slots"]))' "$T/st.json"
}

# bs_case LEVEL N: create, write RANGES, check map / qemu-img map / nbdcopy reads / discard.
bs_case()
{
    local level=$1 n=$2 size
    rk_log "=== $level, $n members"
    rk_members "$n" 33M "$level-"
    rk_create --level "$level" "${M[@]}"
    rk_serve --control "$T/ctl" "${M[@]}"
    size=$(nbdinfo --size "$RK_URI") || rk_fail "nbdinfo --size"
    local py="" i
    for ((i = 0; i < ${#RANGES[@]}; i += 2)); do
        py+="h.pwrite(b'\\xa5' * ${RANGES[i + 1]}, ${RANGES[i]}); "
    done
    PATH=/usr/bin:$PATH nbdsh -u "$RK_URI" -c "$py" || rk_fail "nbdsh write failed"

    nbdinfo --map "$RK_URI" | awk '{print $1, $2, $3}' >"$T/map.got" || rk_fail "nbdinfo --map"
    bs_expected "$size" >"$T/map.want"
    diff -u "$T/map.want" "$T/map.got" >&2 || rk_fail "$level: nbdinfo --map differs from layout"

    qemu-img map --output=json -f raw "$RK_URI" >"$T/qmap.json" || rk_fail "qemu-img map"
    "$RK_PY" - "$T/qmap.json" "${RANGES[@]}" <<'PY' || rk_fail "$level: qemu-img map: $(cat "$T/qmap.json")"
import json, sys
m = json.load(open(sys.argv[1]))
r = [int(x) for x in sys.argv[2:]]
want = [(r[i], r[i + 1]) for i in range(0, len(r), 2)]
got = [(e["start"], e["length"]) for e in m if e["data"]]
zero = all(e["zero"] for e in m if not e["data"])
sys.exit(0 if got == want and zero else 1)
PY

    local before after alloc=$((131072 + 393216))
    before=$(bs_member_reads)
    nbdcopy "$RK_URI" "$T/copy.img" || rk_fail "nbdcopy"
    after=$(bs_member_reads)
    rk_log "$level: nbdcopy read $((after - before)) member bytes of $size (allocated $alloc)"
    [ $((after - before)) -le $((alloc * 2)) ] ||
        rk_fail "$level: nbdcopy read $((after - before)) member bytes, allocated $alloc"
    [ "$(stat -c %s "$T/copy.img")" -eq "$size" ] || rk_fail "copy has the wrong size"
    "$RK_PY" -c 'import sys; d=open(sys.argv[1],"rb").read(); s,l=int(sys.argv[2]),int(sys.argv[3])
sys.exit(0 if d[s:s+l]==b"\xa5"*l and d.count(b"\xa5")==int(sys.argv[4]) else 1)' \
        "$T/copy.img" "${RANGES[0]}" "${RANGES[1]}" "$alloc" || rk_fail "$level: copied data wrong"
    rm -f "$T/copy.img"

    /usr/bin/python3 "$HERE/nbd_block_status.py" "$RK_SOCK" "$size" || rk_fail "$level: protocol"

    # Trim the first range: it becomes a hole again.
    PATH=/usr/bin:$PATH nbdsh -u "$RK_URI" -c "h.trim(${RANGES[1]}, ${RANGES[0]})" || rk_fail "trim"
    RANGES=("${RANGES[@]:2}")
    nbdinfo --map "$RK_URI" | awk '{print $1, $2, $3}' >"$T/map.got"
    bs_expected "$size" >"$T/map.want"
    RANGES=(1048576 131072 10747904 393216)
    diff -u "$T/map.want" "$T/map.got" >&2 || rk_fail "$level: map after trim differs"

    # FAST_ZERO: copy levels punch holes on every member (fast); raid5 must compute parity.
    local fz
    fz=$(PATH=/usr/bin:$PATH nbdsh -u "$RK_URI" -c "
try:
    h.zero(65536, 0, nbd.CMD_FLAG_FAST_ZERO)
    print('ok')
except nbd.Error as e:
    print('ENOTSUP' if e.errnum == 95 else 'error %s' % e)")
    case $level in
    raid5) [ "$fz" = ENOTSUP ] || rk_fail "raid5 FAST_ZERO: $fz (want ENOTSUP)" ;;
    *) [ "$fz" = ok ] || rk_fail "$level FAST_ZERO: $fz (want ok)" ;;
    esac
    rk_stop
}

bs_case raid0 3
bs_case raid1 2
bs_case raid5 3
echo PASS
