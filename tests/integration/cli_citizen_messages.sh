#!/bin/bash
# Issue 12 wording and --json of the online cache commands:
# - info on a file too small for a superblock names its real size (not rounded to the block) and
#   the needed minimum, in bytes and human units (findings F3/T3);
# - bitmap --add with a member missing does not advise --degraded, an option bitmap does not
#   take (F6), and changes nothing; with every member it warns what it writes before writing;
# - cache mode / detach / attach --json: one JSON document on stdout on success and on a refusal,
#   and a control socket nobody serves gives {"ok": false, "error": {"message": ...}} too (F12);
# - info --test of an array that was not shut down cleanly exits 4, recovering (T5).
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/integration/manage_lib.bash"
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/cache_lib.sh"
rk_init
CTL="$T/ctl"

# jq_py FILE PYEXPR: evaluate PYEXPR over the JSON document `j` in FILE (fails on bad JSON).
jq_py()
{
    "$RK_PY" -c 'import json,sys; j=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2" ||
        rk_fail "not one JSON document: $(cat "$1")"
}

rk_log "=== F3: info on tiny files names the real size and the minimum"
printf 'hi\n' >"$T/notes.txt"
head -c 3000 /dev/zero | tr '\0' 'x' >"$T/r3000"
"$RAIDKIT" info "$T/notes.txt" >"$T/i.out" 2>&1 && rk_fail "info on a 3-byte file exited 0"
grep -q "3 bytes (3 B)" "$T/i.out" || rk_fail "info: 3-byte file not named with its size: $(cat "$T/i.out")"
grep -q "0 bytes" "$T/i.out" && rk_fail "info: 3-byte file said to hold 0 bytes: $(cat "$T/i.out")"
grep -q "4096 bytes (4.0 KiB)" "$T/i.out" || rk_fail "info: superblock size not named: $(cat "$T/i.out")"
grep -q "1052672 bytes (1.0 MiB)" "$T/i.out" || rk_fail "info: member minimum not named: $(cat "$T/i.out")"
"$RAIDKIT" info "$T/r3000" >"$T/i.out" 2>&1 && rk_fail "info on a 3000-byte file exited 0"
grep -q "3000 bytes (2.9 KiB)" "$T/i.out" || rk_fail "info: 3000-byte file size rounded: $(cat "$T/i.out")"

rk_log "=== F6: bitmap --add with a member missing"
rk_members 3 9M g
rk_create --level 5 --bitmap none "${M[@]}"
before=$(rk_sums "${M[@]}")
"$RAIDKIT" bitmap --add "${M[0]}" "${M[1]}" >"$T/b.out" 2>&1 && rk_fail "bitmap --add with a member missing exited 0"
grep -q -- "--degraded" "$T/b.out" && rk_fail "bitmap --add advises --degraded: $(cat "$T/b.out")"
grep -q "slot 2" "$T/b.out" || rk_fail "bitmap --add: missing slot not named: $(cat "$T/b.out")"
grep -q "give them all" "$T/b.out" || rk_fail "bitmap --add: no advice to give every member: $(cat "$T/b.out")"
[ "$(rk_sums "${M[@]}")" = "$before" ] || rk_fail "refused bitmap --add changed a member"
"$RAIDKIT" bitmap --add --degraded "${M[@]}" >/dev/null 2>&1
[ $? = 2 ] || rk_fail "bitmap --add --degraded is not a usage error"
grep -q "writing a write-intent bitmap" "$T/b.out" && rk_fail "a refused bitmap --add warned it was writing"
# With every member: a warning says what it writes (every member's metadata area, the superblocks,
# the array stopped) before the result line.
"$RAIDKIT" bitmap --add "${M[@]}" >"$T/b.out" 2>"$T/b.err" || rk_fail "bitmap --add: $(cat "$T/b.err")"
grep -q "warning raidkit: bitmap --add: writing a write-intent bitmap .* into the metadata area at byte 8192 of every one of the 3 members, then their superblocks (event [0-9]* -> [0-9]*); the array must stay stopped" "$T/b.err" ||
    rk_fail "bitmap --add did not warn what it writes: $(cat "$T/b.err")"
grep -q "write-intent bitmap added" "$T/b.out" || rk_fail "bitmap --add result: $(cat "$T/b.out")"

rk_log "=== T5: info --test on an array that was not shut down cleanly: 4 (recovering)"
rk_members 2 9M k
rk_create --level 1 "${M[@]}"
"$RAIDKIT" info --test "${M[@]}" >/dev/null || rk_fail "info --test of a new raid1 is not 0"
"$RAIDKIT" serve -q --listen "unix:$T/k.sock" "${M[@]}" 2>"$T/k.log" &
kp=$!
for i in $(seq 100); do [ -S "$T/k.sock" ] && break; sleep 0.1; done
[ -S "$T/k.sock" ] || rk_fail "serve did not listen: $(cat "$T/k.log")"
RK_URI="nbd+unix:///?socket=$T/k.sock" rk_stamp 1 0 65536
kill -KILL "$kp"
wait "$kp" 2>/dev/null
[ "$(rk_info_json "${M[@]}" | "$RK_PY" -c 'import json,sys; print(json.load(sys.stdin)["array"]["clean"])')" = False ] ||
    rk_fail "a SIGKILLed server left the array clean"
"$RAIDKIT" info --test "${M[@]}" >/dev/null
rc=$?
[ $rc = 4 ] || rk_fail "info --test of a dirty array exited $rc, want 4 (recovering)"

rk_log "=== cache mode/detach/attach --json"
rk_members 2 17M c
rk_create --level 1 "${M[@]}"
C="$T/cache"
ca_create "$C" 8M 4K writeback "${M[@]}"
rk_serve --control "$CTL" --cache "$C" "${M[@]}"
"$RAIDKIT" cache mode writethrough --json --control "$CTL" >"$T/j" 2>"$T/e" || rk_fail "cache mode --json: $(cat "$T/e")"
[ "$(jq_py "$T/j" "(j['ok'], j['op'], j['mode'])")" = "(True, 'mode', 'writethrough')" ] ||
    rk_fail "cache mode --json: $(cat "$T/j")"
"$RAIDKIT" cache attach "$C" --json --control "$CTL" >"$T/j" 2>"$T/e" && rk_fail "attach of an attached cache accepted"
[ "$(jq_py "$T/j" "(j['ok'], bool(j['error']['message']))")" = "(False, True)" ] || rk_fail "cache attach refusal --json: $(cat "$T/j")"
[ -s "$T/e" ] || rk_fail "cache attach refusal: no stderr line"
"$RAIDKIT" cache detach --json --control "$CTL" >"$T/j" 2>"$T/e" || rk_fail "cache detach --json: $(cat "$T/e")"
[ "$(jq_py "$T/j" "(j['ok'], j['op'])")" = "(True, 'detach')" ] || rk_fail "cache detach --json: $(cat "$T/j")"
"$RAIDKIT" cache detach --json --control "$CTL" >"$T/j" 2>"$T/e" && rk_fail "second detach accepted"
[ "$(jq_py "$T/j" "j['ok']")" = False ] || rk_fail "cache detach refusal --json: $(cat "$T/j")"
"$RAIDKIT" cache attach "$C" --json --control "$CTL" >"$T/j" 2>"$T/e" || rk_fail "cache attach --json: $(cat "$T/e")"
[ "$(jq_py "$T/j" "(j['ok'], j['op'], j['device'] == '$(realpath "$C")')")" = "(True, 'attach', True)" ] ||
    rk_fail "cache attach --json: $(cat "$T/j")"
rk_stop

rk_log "=== --json with no server on the control socket"
for cmd in "cache mode none" "cache detach" "status" "fail --slot 0"; do
    # shellcheck disable=SC2086
    "$RAIDKIT" $cmd --json --control "$T/nobody.sock" >"$T/j" 2>"$T/e" && rk_fail "$cmd: no server, exit 0"
    [ "$(jq_py "$T/j" "(j['ok'], 'cannot connect' in j['error']['message'])")" = "(False, True)" ] ||
        rk_fail "$cmd --json without a server: stdout $(cat "$T/j")"
done
echo "PASS: cli citizen messages"
