#!/bin/bash
# create_late_failure_keeps_data: a create that can only fail once it starts on the members (a
# size the file system cannot hold, a member whose size does not take, a file system without room
# for the metadata areas) fails before it overwrites anything: every existing member keeps its
# content and size, and no superblock is left behind. Before, each of these had already punched
# the data areas (and written some superblocks) when it exited 1. docs/CLI.md "create".
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
rk_init

# files F...: 64 MiB members holding a marker at 20 MiB (sparse around it)
files()
{
    local f
    for f in "$@"; do
        truncate -s 64M "$f"
        printf 'precious-%s' "$(basename "$f")" | dd of="$f" bs=1 seek=$((20 << 20)) conv=notrunc status=none
    done
}
# sums F...: size and sha256 of the whole of each file
sums()
{
    local f
    for f in "$@"; do printf '%s:%s ' "$(stat -c %s "$f")" "$(sha256sum <"$f" | cut -c1-32)"; done
}
# refused WHAT FILE... -- CREATE ARGS...: create fails with one line on stderr, FILEs unchanged and
# none of them holds a superblock
refused()
{
    local what=$1 files=() before after rc f
    shift
    while [ "$1" != -- ]; do files+=("$1"); shift; done
    shift
    before=$(sums "${files[@]}")
    "$RAIDKIT" create "$@" >"$T/out" 2>"$T/err"
    rc=$?
    after=$(sums "${files[@]}")
    rk_no_sanitizer "$T/err" "raidkit create $*"
    [ "$rc" -ne 0 ] || rk_fail "$what: create succeeded"
    [ "$(wc -l <"$T/err")" -eq 1 ] || rk_fail "$what: want one line on stderr, got: $(cat "$T/err")"
    [ "$before" = "$after" ] || rk_fail "$what: a member changed ($(cat "$T/err"))"
    for f in "${files[@]}"; do
        "$RAIDKIT" info "$f" >"$T/info" 2>&1
        grep -q "not a raidkit member" "$T/info" || rk_fail "$what: $f holds a superblock: $(cat "$T/info")"
    done
    rk_log "$what: refused, nothing changed: $(cat "$T/err")"
}

files "$T/d0" "$T/d1" "$T/d2"
refused "a member whose size does not take" "$T/d0" "$T/d1" -- \
    --level raid5 --size 1G "$T/d0" "$T/d1" /proc/version
if ! truncate -s 17T "$T/probe" 2>/dev/null; then
    refused "a size the file system cannot hold" "$T/d0" "$T/d1" "$T/d2" -- \
        --level raid5 --size 17T "$T/d0" "$T/d1" "$T/d2"
else
    rk_log "note: this file system holds 17 TiB files; the too-large case is not run"
fi
rm -f "$T/probe"

if [ "$(id -u)" = 0 ] && mkdir "$T/small" && mount -t tmpfs -o size=1200k tmpfs "$T/small" 2>/dev/null; then
    trap 'rc=$?; umount "$T/small" 2>/dev/null; (exit $rc); rk_cleanup' EXIT
    files "$T/small/s0" "$T/small/s1" "$T/small/s2"
    refused "no room for the metadata areas" "$T/small/s0" "$T/small/s1" "$T/small/s2" -- \
        --level raid5 "$T/small/s0" "$T/small/s1" "$T/small/s2"
    grep -q "free" "$T/err" || rk_fail "the no-room refusal does not say why: $(cat "$T/err")"
    # new sparse members need only their superblocks and bitmaps: they fit
    rm -f "$T/small"/s?
    "$RAIDKIT" create --level raid5 --size 64M "$T/small/n0" "$T/small/n1" "$T/small/n2" >/dev/null 2>"$T/err" ||
        rk_fail "new sparse members on the small file system refused: $(cat "$T/err")"
    umount "$T/small" || rk_fail "cannot unmount the small tmpfs"
else
    rk_log "note: not root (or no tmpfs mount): the full file system case is not run"
fi
echo "PASS: create_late_failure_keeps_data"
