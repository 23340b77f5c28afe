#!/usr/bin/env bash
# cli_corrupt_superblock: `info` tells a file that is no raidkit member at all (no magic: exit 1,
# "not a raidkit member") from a member whose superblock has the magic but fails a check (exit 6,
# "corrupt superblock: CHECK"), in text and JSON; `assemble --scan` names the damaged member
# "corrupt superblock: ..." instead of "not a raidkit member" (docs/CLI.md "Exit status").
. "$RAIDKIT_SOURCE_DIR/tests/lib/common.sh"
rk_init
rk_need python3

rk_members 3 16M
rk_create --level 5 "${M[@]}"
truncate -s 4M "$T/zero"
uuid=$(rk_info_json "${M[0]}" | python3 -c 'import json,sys; print(json.load(sys.stdin)["array"]["uuid"])')
# One byte of member 1's superblock changed (past the magic): its checksum no longer matches.
printf '\x5a' | dd of="${M[1]}" bs=1 seek=200 conv=notrunc status=none

run() { # run WANT ARGS...: raidkit ARGS exits WANT (stdout $T/out, stderr $T/err)
    local want=$1 rc
    shift
    "$RAIDKIT" "$@" >"$T/out" 2>"$T/err"
    rc=$?
    [ "$rc" -eq "$want" ] || rk_fail "raidkit $* exited $rc, want $want: $(cat "$T/err")"
}
run 1 info "$T/zero"
grep -q "not a raidkit member" "$T/err" || rk_fail "no 'not a raidkit member': $(cat "$T/err")"
grep -q "corrupt" "$T/out" "$T/err" && rk_fail "a file of zeroes is called corrupt: $(cat "$T/out" "$T/err")"
# A file that cannot be read is said so, not called "not a raidkit member".
run 1 info "$T/zero" "$T/nosuch"
grep -q "1 of 2 members is not a raidkit member" "$T/err" && grep -q "1 of 2 members cannot be read" "$T/err" ||
    rk_fail "info of a non-member and a missing file: $(cat "$T/err")"
run 6 info "${M[1]}"
grep -q "^raidkit info: ${M[1]}: corrupt superblock: superblock checksum mismatch" "$T/err" ||
    rk_fail "corrupt member not named with the failed check: $(cat "$T/err")"
run 6 info --json "${M[0]}" "${M[1]}" "${M[2]}"
python3 -c 'import json,sys
d = json.load(open(sys.argv[1]))
st = [m["status"] for m in d["members"]]
assert st == ["ok", "corrupt", "ok"], st
assert "corrupt superblock: superblock checksum mismatch" in d["members"][1]["reason"]' "$T/out" ||
    rk_fail "info --json: $(cat "$T/out")"
run 1 info --json "$T/zero"
python3 -c 'import json,sys; m = json.load(open(sys.argv[1]))["members"][0]; assert m["status"] == "not-raidkit", m' "$T/out" ||
    rk_fail "info --json of zeroes: $(cat "$T/out")"
# --test still reports the array's state (one member set aside: degraded).
run 3 info --test "${M[0]}" "${M[1]}" "${M[2]}"

cat >"$T/raidkit.conf" <<EOC
[array a]
uuid = $uuid
members = ${M[*]} $T/zero
EOC
run 3 assemble --scan --config "$T/raidkit.conf"
grep -q "skipped  ${M[1]}: corrupt superblock: superblock checksum mismatch" "$T/out" ||
    rk_fail "assemble does not name the corrupt member: $(cat "$T/out")"
grep -q "skipped  $T/zero: not a raidkit member: zeroes only" "$T/out" ||
    rk_fail "assemble does not name the non-member: $(cat "$T/out")"
rk_log "PASS"
