#!/usr/bin/env bash
# cli_create_sizes: `create --size SIZE` uses SIZE bytes of every member — a missing file is
# created, a shorter one extended, and of a larger one only the first SIZE bytes are used, with a
# warning naming it (before, --size was silently ignored for larger members); a SIZE below 1 MiB
# plus one chunk is a usage error. Members of unequal size on raid1/10/5/6 get a warning with the
# size used, the smallest member and the bytes left unused; linear and raid0 (which use every
# member whole) and members of one size get none (docs/CLI.md "create").
. "$RAIDKIT_SOURCE_DIR/tests/lib/common.sh"
rk_init
export RAIDKIT_LOG_TIME=0
nfail=0
bad() { echo "FAIL: $*" >&2; nfail=$((nfail + 1)); }

# slot_sizes MEMBER...: the data size of every slot as info --json reads it, blank-separated.
slot_sizes()
{
    "$RAIDKIT" info --json "$@" | "$RK_PY" -c \
        'import json,sys; print(" ".join(str(s["data_size"]) for s in json.load(sys.stdin)["array"]["slots"]))'
}

truncate -s 64M "$T/a" "$T/b"
truncate -s 32M "$T/c"
truncate -s 8M "$T/short"
"$RAIDKIT" create --level 5 --size 16M "$T/a" "$T/b" "$T/c" "$T/short" "$T/new" >"$T/out" 2>"$T/err" ||
    rk_fail "create --size 16M: $(cat "$T/err")"
[ "$(slot_sizes "$T/a" "$T/b" "$T/c" "$T/short" "$T/new")" = "$((15 * MiB)) $((15 * MiB)) $((15 * MiB)) $((15 * MiB)) $((15 * MiB))" ] ||
    bad "--size 16M: slot data sizes $(slot_sizes "$T/a" "$T/b" "$T/c" "$T/short" "$T/new"), want 15 MiB each"
[ "$(stat -c %s "$T/a")" -eq $((64 * MiB)) ] || bad "create --size cut $T/a's file"
[ "$(stat -c %s "$T/short")" -eq $((16 * MiB)) ] && [ "$(stat -c %s "$T/new")" -eq $((16 * MiB)) ] ||
    bad "--size 16M did not extend/create to 16 MiB: $(stat -c %s "$T/short" "$T/new" | tr '\n' ' ')"
grep -q "warning raidkit: --size 16.0 MiB: only the first 16.0 MiB of each member is used; larger members: $T/a (64.0 MiB), $T/b (64.0 MiB), $T/c (32.0 MiB); 112.0 MiB of them stay unused" "$T/err" ||
    bad "no warning naming the members larger than --size: $(cat "$T/err")"
grep -q "differ in size" "$T/err" && bad "--size made the members equal, yet: $(cat "$T/err")"

# Unequal members, no --size: raid5 warns with the numbers; raid0 and equal members do not.
rm -f "$T"/[abc]
truncate -s 64M "$T/a" "$T/b"
truncate -s 32M "$T/c"
"$RAIDKIT" create --level 5 "$T/a" "$T/b" "$T/c" >"$T/out" 2>"$T/err" || rk_fail "create raid5: $(cat "$T/err")"
grep -q "members differ in size by more than 1%: raid5 uses 31.0 MiB of every member's data area, as much as the smallest ($T/c) has; the larger ones leave 64.0 MiB unused: $T/a (32.0 MiB), $T/b (32.0 MiB). Use members of one size, or say so with --size 32M" "$T/err" ||
    bad "no unequal-size warning on raid5: $(cat "$T/err")"
"$RAIDKIT" create --force --level 0 "$T/a" "$T/b" "$T/c" >"$T/out" 2>"$T/err" || rk_fail "create raid0: $(cat "$T/err")"
[ ! -s "$T/err" ] || bad "raid0 over unequal members (all used) warned: $(cat "$T/err")"
"$RAIDKIT" create --force --level 1 "$T/a" "$T/b" >"$T/out" 2>"$T/err" || rk_fail "create raid1: $(cat "$T/err")"
[ ! -s "$T/err" ] || bad "raid1 over equal members warned: $(cat "$T/err")"

# A --size that cannot hold the metadata area and one chunk: usage error, nothing made.
"$RAIDKIT" create --level 1 --size 1M "$T/x0" "$T/x1" 2>"$T/err"
rc=$?
[ $rc -eq 2 ] && grep -q "too small: a member needs its 1 MiB metadata area plus one chunk" "$T/err" ||
    bad "--size 1M: exit $rc, $(cat "$T/err")"
[ ! -e "$T/x0" ] || bad "a refused --size made $T/x0"

[ $nfail -eq 0 ] || rk_fail "$nfail check(s) failed"
echo "PASS: create --size and unequal members"
