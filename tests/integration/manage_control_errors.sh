#!/bin/bash
# manage_control_errors: bad control requests, slots out of range, a too-small replacement, an
# active slot, and two concurrent replaces: each gets one clear error and nothing changes.
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/integration/manage_lib.bash"
rk_init

# refused REGEX CMD ARGS...: the raidkit command must fail with a stderr line matching REGEX.
refused()
{
    local re=$1 rc
    shift
    timeout 20 "$RAIDKIT" "$@" >"$T/out" 2>"$T/err"
    rc=$?
    [ $rc -ne 0 ] && [ $rc -ne 124 ] || rk_fail "raidkit $* should fail (status $rc): $(cat "$T/out")"
    rk_no_sanitizer "$T/err" "raidkit $*"
    grep -Eqi -- "$re" "$T/err" || rk_fail "raidkit $*: message does not match /$re/: $(cat "$T/err")"
    rk_log "refused: raidkit $* -> $(head -n 1 "$T/err")"
}

# raw LINE: send one raw line to the control socket, print the reply.
raw()
{
    "$RK_PY" - "$CTL" "$1" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(sys.argv[2].encode() + b"\n")
print(s.makefile().readline().strip())
PY
}

rk_members 5 17M
truncate -s 4M "$T/small"
rk_create --level raid1 "${M[0]}" "${M[1]}" "${M[2]}"
CTL="$T/ctl"
rk_serve --control "$CTL" "${M[0]}" "${M[1]}" "${M[2]}"
rk_stamp 1 0 $((16 * MiB))

refused 'control socket' status --control "$T/nothing"
refused 'required' status
refused 'either --control' replace --slot 1 --with "${M[3]}"
refused 'bad --slot' fail --slot x --control "$CTL"
for req in 'garbage' '{"cmd":7}' '{"cmd":"explode"}' '{"cmd":"fail","slot":"one"}' \
    '{"cmd":"replace","slot":1}' '{"cmd":"scrub","repair":3}'; do
    reply=$(raw "$req") || rk_fail "raw request $req"
    echo "$reply" | grep -q '"ok":false,"error":"' || rk_fail "request $req: reply $reply"
    rk_log "raw $req -> $reply"
done
reply=$(raw "{\"cmd\":\"status\",\"pad\":\"$(head -c 9000 /dev/zero | tr '\0' x)\"}")
echo "$reply" | grep -q 'longer than' || rk_fail "long line: reply $reply"

mg_status
event0=$(mg_q "s['event']")
refused 'out of range' fail --slot 7 --control "$CTL"
refused 'out of range' replace --slot 7 --with "${M[3]}" --control "$CTL"
refused 'is active.*fail it first' replace --slot 1 --with "${M[3]}" --control "$CTL"
refused 'No such file' replace --slot 1 --with "$T/absent" --control "$CTL"
mg_status
[ "$(mg_q "s['event']")" = "$event0" ] || rk_fail "a refused command changed the event counter"

mg_fail 1
mg_fail 2
refused 'already failed' fail --slot 2 --control "$CTL"
refused 'already the member of slot 0' replace --slot 1 --with "${M[0]}" --control "$CTL"
refused 'would lose data' fail --slot 0 --control "$CTL"
sum_small=$(sha256sum <"$T/small")
refused 'too small' replace --slot 1 --with "$T/small" --control "$CTL"
[ "$(sha256sum <"$T/small")" = "$sum_small" ] || rk_fail "the refused small member was written"
mg_status
[ "$(mg_slot_state 1)" = failed ] || rk_fail "slot 1 changed after refused replaces"
event1=$(mg_q "s['event']")

# Two concurrent replaces: the second is refused and its member stays untouched.
mg_replace 1 "${M[3]}" 1 # 1 MiB/s: 16 s, so the rebuild still runs after the refusals on a loaded host
sum4=$(rk_sums "${M[4]}")
refused 'rebuild of slot 1 is running' replace --slot 2 --with "${M[4]}" --control "$CTL"
refused 'rebuild of slot 1 is running' replace --slot 1 --with "${M[4]}" --control "$CTL"
refused 'rebuild is running' scrub --control "$CTL"
[ "$(rk_sums "${M[4]}")" = "$sum4" ] || rk_fail "member of the refused replace changed"
mg_status
[ "$(mg_slot_state 2)" = failed ] || rk_fail "slot 2 changed by a refused replace"
[ "$(mg_q "s['event']")" = $((event1 + 1)) ] || rk_fail "event should be $((event1 + 1)): $(cat "$T/st.json")"
mg_wait_job 30
[ "$(mg_slot_state 1)" = active ] || rk_fail "slot 1 not active after its rebuild"
rk_verify 0 $((16 * MiB)) 1
rk_stop
echo PASS
