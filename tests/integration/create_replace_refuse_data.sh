#!/bin/bash
# create and replace onto a member that visibly holds data are refused without --force, with a
# message naming what was found (U6/U27): an ext4 file system (mkfs.ext4; named by libblkid
# when raidkit is built with it), a raidkit superblock of another array. Refusals write
# nothing (sha256 of every file). Random bytes without a signature are not refused; --force
# overwrites.
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/integration/manage_lib.bash"
rk_init
rk_need mkfs.ext4

mkext4() { rm -f "$1" && truncate -s 8M "$1" && mkfs.ext4 -q -F "$1" >/dev/null 2>&1 || rk_fail "mkfs.ext4 $1"; }
# refused PATTERN FILES... -- CMD...: raidkit CMD fails with a line matching PATTERN (grep -E),
# FILES byte-identical.
refused()
{
    local pat=$1 files=() before out
    shift
    while [ "$1" != -- ]; do files+=("$1"); shift; done
    shift
    before=$(sha256sum "${files[@]}")
    out=$(timeout 60 "$RAIDKIT" "$@" 2>&1) && rk_fail "raidkit $* accepted: $out"
    echo "$out" | grep -Eq "$pat" || rk_fail "raidkit $*: want /$pat/, got: $out"
    [ "$(sha256sum "${files[@]}")" = "$before" ] || rk_fail "refused raidkit $* changed files"
    rk_log "refused: $out"
}

# create: an ext4 member is refused, --force overwrites it; random bytes are no signature.
rk_members 2 8M o-
rk_create --level raid1 "${M[@]}"
FOREIGN=("${M[@]}")
rk_members 3 8M
mkext4 "${M[0]}"
head -c 8M /dev/urandom >"${M[2]}"
refused "${M[0]} already holds an ext(2/3/)?4 file system.*--force" "${M[@]}" -- create --level raid5 "${M[@]}"
refused "${FOREIGN[0]} already holds a raidkit superblock.*--force" "${M[@]}" "${FOREIGN[@]}" -- create --level raid5 "${FOREIGN[0]}" "${M[1]}" "${M[2]}"
rk_create --level raid5 "${M[1]}" "${M[2]}" "$T/m3" --size 8M  # random bytes: accepted
rk_create --level raid5 --force "${M[@]}"

# replace, online: refused onto ext4 and onto another array's member, nothing written.
mkext4 "$T/new-ext4"
head -c 8M /dev/urandom >"$T/new-random"
CTL="$T/ctl"
rk_serve --control "$CTL" "${M[@]}"
mg_fail 1
refused "new-ext4 already holds an ext(2/3/)?4 file system.*--force" "$T/new-ext4" -- replace --slot 1 --with "$T/new-ext4" --control "$CTL"
refused "raidkit superblock of another array.*--force" "${FOREIGN[@]}" -- replace --slot 1 --with "${FOREIGN[0]}" --control "$CTL"
rk_stop

# replace, offline: the same refusals change no file at all; then --force rebuilds onto ext4.
A=("${M[0]}" "${M[2]}")
refused "already holds an ext(2/3/)?4 file system.*--force" "${M[@]}" "$T/new-ext4" -- replace --slot 1 --with "$T/new-ext4" "${A[@]}"
refused "raidkit superblock of another array.*--force" "${M[@]}" "${FOREIGN[@]}" -- replace --slot 1 --with "${FOREIGN[1]}" "${A[@]}"
OUT=$("$RAIDKIT" replace --slot 1 --with "$T/new-ext4" --force --no-progress "${A[@]}" 2>&1) || rk_fail "replace --force onto ext4: $OUT"

# Random bytes are no signature: an online replace onto them runs without --force.
rk_serve --control "$CTL" "${M[0]}" "$T/new-ext4" "${M[2]}"
mg_fail 2
"$RAIDKIT" replace --slot 2 --with "$T/new-random" --wait --control "$CTL" >/dev/null 2>"$T/rep.err" ||
    rk_fail "replace onto random bytes refused: $(cat "$T/rep.err")"
mg_status
[ "$(mg_q "s['degraded']")" = False ] || rk_fail "degraded after the replace: $(cat "$T/st.json")"
rk_stop
echo PASS
