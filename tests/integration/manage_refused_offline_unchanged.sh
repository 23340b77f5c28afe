#!/bin/bash
# A refused offline re-add or replace changes no file (U15): every case below is refused with
# one clear line and a non-zero exit, and the sha256 of every member file (the array's, the
# candidate's, a foreign array's) is the same before and after. Then a good re-add still works.
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/integration/manage_lib.bash"
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/integration/readd_lib.bash"
rk_init

rk_members 3 8M o-
rk_create --level raid5 "${M[@]}"
FOREIGN=("${M[@]}")
rk_members 3 8M m-
rk_create --level raid5 "${M[@]}"
CTL="$T/ctl"
rk_serve --control "$CTL" "${M[@]}"
mg_fail 1
rk_stop
cp --sparse=always "${M[2]}" "$T/m2.copy"
truncate -s 8M "$T/blank"
truncate -s 1M "$T/small"
ALL=("${M[@]}" "${FOREIGN[@]}" "$T/m2.copy" "$T/blank" "$T/small")
sums() { sha256sum "${ALL[@]}"; }

# refused PATTERN CMD...: raidkit CMD must exit non-zero with one line matching PATTERN
# (grep -E) and leave every file of ALL byte-identical.
refused()
{
    local pat=$1 before after out
    shift
    before=$(sums)
    if out=$(timeout 60 "$RAIDKIT" "$@" 2>&1); then
        rk_fail "raidkit $* was accepted: $out"
    fi
    echo "$out" | grep -Eq "$pat" || rk_fail "raidkit $*: want /$pat/, got: $out"
    [ "$(echo "$out" | grep -c .)" -eq 1 ] || rk_fail "raidkit $*: error is not one line: $out"
    after=$(sums)
    [ "$before" = "$after" ] ||
        rk_fail "refused raidkit $* changed files: $(diff <(echo "$before") <(echo "$after"))"
    rk_log "refused, nothing changed: $out"
}

A=("${M[0]}" "${M[2]}")
refused "member of another array" re-add --slot 1 "${FOREIGN[1]}" "${A[@]}"
refused "old member of slot 2|claims slot 2" re-add --slot 1 "$T/m2.copy" "${A[@]}"
refused "no usable raidkit superblock|not a raidkit member" re-add --slot 1 "$T/blank" "${A[@]}"
refused "slot 2 is active" re-add --slot 2 "${M[1]}" "${A[@]}"
refused "out of range" re-add --slot 5 "${M[1]}" "${A[@]}"
refused "bad --rate" re-add --slot 1 "${M[1]}" --rate 5x "${A[@]}"
refused "superblock of another array" replace --slot 1 --with "${FOREIGN[1]}" "${A[@]}"
refused "already the member of slot 0|already slot 0" replace --slot 1 --with "${M[0]}" "${A[@]}"
refused "too small|bytes, the slot needs" replace --slot 1 --with "$T/small" "${A[@]}"
refused "slot 0 is active" replace --slot 0 --with "$T/blank" "${A[@]}"
refused "out of range" replace --slot 4 --with "$T/blank" "${A[@]}"
refused "unknown option" replace --slot 1 --with "$T/blank" --bogus "${A[@]}"
refused "No such file" replace --slot 1 --with "$T/nonexistent" "${A[@]}"

# The array is still the one the refusals saw: the old member comes back.
ra_readd 1 "${M[1]}" "${A[@]}"
echo PASS
