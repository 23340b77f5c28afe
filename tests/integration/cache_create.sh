#!/bin/bash
# cache_create: `raidkit cache create` formats a cache device and binds the array to it (info of
# the cache and of the members shows both sides); every refusal (foreign cache or array member
# without --force, bad mode or block size, device too small, array that does not assemble, the
# cache given as a member, a rebind over a cache that may hold dirty data) is one line on
# stderr and writes nothing to any file. docs/CLI.md "cache".
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
rk_init

rk_members 2 32M
A=("${M[@]}")
rk_create --level raid1 "${A[@]}"
rk_members 2 16M o
B=("${M[@]}")
rk_create --level raid1 "${B[@]}"
truncate -s 16M "$T/ssd" "$T/ssd2"
truncate -s 1M "$T/tiny"
nfail=0

# bad WHAT ARGS...: `raidkit ARGS` exits non-zero with one stderr line and changes no file.
bad()
{
    local what=$1 rc before after
    shift
    before=$(rk_sums "${A[@]}" "${B[@]}" "$T/ssd" "$T/ssd2" "$T/tiny")
    timeout 20 "$RAIDKIT" "$@" >"$T/out" 2>"$T/err" </dev/null
    rc=$?
    after=$(rk_sums "${A[@]}" "${B[@]}" "$T/ssd" "$T/ssd2" "$T/tiny")
    rk_no_sanitizer "$T/err" "raidkit $*"
    if [ "$rc" -eq 0 ] || [ "$rc" -ge 124 ] || [ "$(wc -l <"$T/err")" -ne 1 ]; then
        echo "FAIL ($what): status $rc, stderr:" >&2
        sed 's/^/    | /' "$T/err" | head -n 8 >&2
        nfail=$((nfail + 1))
    else
        echo "ok ($what, status $rc): $(cat "$T/err")" >&2
    fi
    if [ "$before" != "$after" ]; then
        echo "FAIL ($what): a file changed" >&2
        nfail=$((nfail + 1))
    fi
}

# jget FILE PYEXPR: evaluate PYEXPR on the JSON document d of FILE.
jget()
{
    "$RK_PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"
}

# Usage mistakes and refusals before anything exists.
bad "no mode" cache create "$T/ssd" "${A[@]}"
bad "unknown mode" cache create --mode fast "$T/ssd" "${A[@]}"
bad "block 3K" cache create --mode writeback --block 3K "$T/ssd" "${A[@]}"
bad "block 2M" cache create --mode writeback --block 2M "$T/ssd" "${A[@]}"
bad "no members" cache create --mode writeback "$T/ssd"
bad "unknown subcommand" cache frobnicate
bad "device too small" cache create --mode writeback "$T/tiny" "${A[@]}"
bad "cache is a member" cache create --mode writeback "${A[0]}" "${A[@]}"
bad "array member as cache" cache create --mode writeback "${B[0]}" "${A[@]}"
bad "members do not assemble" cache create --mode writeback "$T/ssd" "${A[0]}" "${B[0]}"
bad "missing cache device" cache create --mode writeback "$T/nope" "${A[@]}"
grep -q "too small" <(timeout 20 "$RAIDKIT" cache create --mode writeback "$T/tiny" "${A[@]}" 2>&1) ||
    rk_fail "device too small: the message does not say so"

# Happy path.
out=$("$RAIDKIT" cache create --mode writeback --block 32K "$T/ssd" "${A[@]}" 2>&1) ||
    rk_fail "cache create failed: $out"
rk_log "$out"
auuid=$(rk_info_json "${A[@]}" | "$RK_PY" -c 'import json,sys; print(json.load(sys.stdin)["array"]["uuid"])')
rk_info_json "$T/ssd" >"$T/c.json"
[ "$(jget "$T/c.json" 'd["caches"][0]["status"]')" = ok ] || rk_fail "info of the cache: $(cat "$T/c.json")"
[ "$(jget "$T/c.json" 'd["caches"][0]["array_uuid"]')" = "$auuid" ] || rk_fail "cache not bound to $auuid"
[ "$(jget "$T/c.json" 'd["caches"][0]["mode"]')" = writeback ] || rk_fail "mode"
[ "$(jget "$T/c.json" 'd["caches"][0]["block_size"]')" = 32768 ] || rk_fail "block size"
[ "$(jget "$T/c.json" 'd["caches"][0]["mapped"]')" = 0 ] || rk_fail "mapped"
[ "$(jget "$T/c.json" 'd["caches"][0]["dirty"]')" = 0 ] || rk_fail "dirty"
blocks=$(jget "$T/c.json" 'd["caches"][0]["blocks"]')
[ "$blocks" -ge 400 ] && [ "$blocks" -le 512 ] || rk_fail "blocks $blocks for 16 MiB at 32K"
cuuid=$(jget "$T/c.json" 'd["caches"][0]["uuid"]')
rk_info_json "${A[@]}" "$T/ssd" >"$T/a.json"
[ "$(jget "$T/a.json" 'd["array"]["cache"]["uuid"]')" = "$cuuid" ] || rk_fail "array not bound to $cuuid"
[ "$(jget "$T/a.json" 'd["caches"][0]["binding"]')" = bound ] || rk_fail "binding not reported"
"$RAIDKIT" info "${A[@]}" "$T/ssd" >"$T/a.txt" || rk_fail "info text failed"
grep -q "cache:        cache $cuuid" "$T/a.txt" || rk_fail "info text: no binding line: $(cat "$T/a.txt")"
grep -q "mode:         writeback" "$T/a.txt" || rk_fail "info text: no cache mode"
grep -q "Problems: none" <<<"$("$RAIDKIT" info "${A[@]}")" || rk_fail "the bound array has problems"

# The cache now exists: refused without --force, for this array and for another one.
bad "cache exists" cache create --mode writethrough "$T/ssd" "${A[@]}"
bad "cache exists, other array" cache create --mode writethrough "$T/ssd" "${B[@]}"

# A cache bound to array A is stale for array B: info says so.
rk_info_json "${B[@]}" "$T/ssd" >"$T/b.json"
jget "$T/b.json" 'd["caches"][0].get("binding")' | grep -q None || rk_fail "foreign cache: binding $(cat "$T/b.json")"

# --force re-creates it: new cache UUID, the array follows.
out=$("$RAIDKIT" cache create --mode writethrough --force "$T/ssd" "${A[@]}" 2>&1) || rk_fail "forced create failed: $out"
rk_info_json "$T/ssd" "${A[@]}" >"$T/c2.json"
c2=$(jget "$T/c2.json" 'd["caches"][0]["uuid"]')
[ "$c2" != "$cuuid" ] || rk_fail "re-create kept the cache UUID"
[ "$(jget "$T/c2.json" 'd["array"]["cache"]["uuid"]')" = "$c2" ] || rk_fail "array not rebound"
[ "$(jget "$T/c2.json" 'd["caches"][0]["mode"]')" = writethrough ] || rk_fail "mode after re-create"

# A second cache device for the same array makes the first one stale.
out=$("$RAIDKIT" cache create --mode writeback "$T/ssd2" "${A[@]}" 2>&1) || rk_fail "second cache: $out"
rk_info_json "$T/ssd" "${A[@]}" >"$T/s.json"
[ "$(jget "$T/s.json" 'd["caches"][0]["binding"]')" = stale ] || rk_fail "old cache not stale"

# An array whose binding says the cache may hold dirty data: rebinding refused without --force.
"$RK_PY" - "${A[@]}" <<'PY' || rk_fail "could not set the dirty binding flag"
import struct, sys
# Set cache_flags (bytes 3336..3339) to bound|dirty and recompute the superblock's CRC-32C
# (reflected polynomial 0x82F63B78, docs/FORMAT.md "Checksum").
def crc32c(data):
    crc = 0xffffffff
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xffffffff
for path in sys.argv[1:]:
    with open(path, "r+b") as f:
        sb = bytearray(f.read(4096))
        sb[3336:3340] = struct.pack("<I", 3)
        sb[16:20] = b"\0\0\0\0"
        sb[16:20] = struct.pack("<I", crc32c(bytes(sb)))
        f.seek(0)
        f.write(sb)
PY
grep -q "may hold dirty data" <<<"$("$RAIDKIT" info "${A[@]}")" || rk_fail "info does not show the dirty binding"
truncate -s 16M "$T/ssd3"
before=$(rk_sums "${A[@]}" "$T/ssd3")
"$RAIDKIT" cache create --mode writeback "$T/ssd3" "${A[@]}" >"$T/out" 2>"$T/err" && rk_fail "dirty rebind accepted"
grep -q "dirty" "$T/err" || rk_fail "dirty rebind: message $(cat "$T/err")"
[ "$before" = "$(rk_sums "${A[@]}" "$T/ssd3")" ] || rk_fail "refused dirty rebind wrote something"
"$RAIDKIT" cache create --mode writeback --force "$T/ssd3" "${A[@]}" >/dev/null 2>&1 || rk_fail "forced dirty rebind failed"

# A CACHEDEV holding a file system (ext4 magic 0xEF53 at 1080): refused without --force, untouched.
truncate -s 16M "$T/fs"
printf '\x53\xef' | dd of="$T/fs" bs=1 seek=1080 conv=notrunc status=none
fsum=$(rk_sums "$T/fs")
bad "file system on the cache device" cache create --mode writeback "$T/fs" "${A[@]}"
grep -q "already holds an ext2/3/4 file system" "$T/err" || rk_fail "file system: message $(cat "$T/err")"
[ "$fsum" = "$(rk_sums "$T/fs")" ] || rk_fail "refused create over a file system wrote to it"

# A damaged cache is listed as refused by info, with the reason, and nothing is trusted.
printf '\x01' | dd of="$T/ssd2" bs=1 seek=200 conv=notrunc status=none
"$RAIDKIT" info "$T/ssd2" >"$T/d.txt" 2>&1 || true
grep -q "refused: cache device $T/ssd2: cache superblock checksum mismatch" "$T/d.txt" ||
    rk_fail "damaged cache: $(cat "$T/d.txt")"

[ "$nfail" -eq 0 ] || rk_fail "$nfail check(s) failed"
echo "cache_create: ok"
