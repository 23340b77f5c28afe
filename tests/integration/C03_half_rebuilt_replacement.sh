#!/bin/bash
# C03 variant: a replacement only half rebuilt, then the server restarted. RAID1 of 2 x 32 MiB,
# m1 failed, gen 2 everywhere, replace onto a member full of random bytes at 4 MiB/s; a clean
# stop half way keeps the slot rebuilding with its checkpoint; the restart resumes there (not
# from 0), and while it runs reads of the ranges not rebuilt yet never come from the new member
# (its read counter stays put, every stamp is gen 2, LBAs past the checkpoint read 100 times).
# Then a SIGKILL while the resumed rebuild runs: the next start resumes it again and, once it
# completed, runs the resync the unclean stop asked for (it waits for the rebuild, it does not
# wait for a later start). Finally only the new member serves: every stamp.
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/integration/manage_lib.bash"
rk_init

# read_past_100 OFF: read 4 KiB at array offset OFF 100 times over one connection: gen 2 always.
read_past_100()
{
    "$RK_PY" - "$RK_URI" "$1" <<'PY' || rk_fail "reads past the checkpoint came back wrong (see above)"
import struct, sys, nbd
h = nbd.NBD()
h.connect_uri(sys.argv[1])
off = int(sys.argv[2])
for i in range(100):
    b = h.pread(4096, off)
    for s in range(0, 4096, 512):
        x, gen = struct.unpack("<QQ", b[s:s + 16])
        if x != off + s or gen != 2:
            sys.exit("read %d at %d: offset %d gen %d, want gen 2" % (i, off + s, x, gen))
h.shutdown()
PY
}

rk_members 2 33M h
SIZE=$((32 * MiB))
NEW="$T/new"
head -c $((33 * MiB)) /dev/urandom >"$NEW" # a replacement that never served: garbage
rk_create --level raid1 "${M[@]}"
CTL="$T/ctl"
rk_serve --control "$CTL" "${M[@]}"
rk_stamp 1 0 $SIZE
mg_fail 1
rk_stamp 2 0 $SIZE
mg_replace 1 "$NEW" 2 # 2 MiB/s: half the member takes 8 s, so a slow stop under load still lands before
sleep 3
rk_stop # clean: the rebuild checkpoints and stops
rk_info_json "${M[0]}" "$NEW" >"$T/info.json"
ckpt=$("$RK_PY" -c 'import json,sys; d=json.load(open(sys.argv[1]))
print(max(s.get("rebuild_offset", 0) for s in d["array"]["slots"]))' "$T/info.json")
[ "$ckpt" -gt 0 ] && [ "$ckpt" -lt $((SIZE / 2)) ] || rk_fail "checkpoint $ckpt after a 3 s rebuild at 2 MiB/s"
rk_log "stopped half rebuilt: checkpoint $ckpt"

rk_serve --control "$CTL" --rebuild-rate 2 "$NEW" "${M[0]}"
grep -q "resuming rebuild at data offset $ckpt" "$RK_LOG" || rk_fail "no resume at $ckpt: $(cat "$RK_LOG")"
mg_status
[ "$(mg_q "s['job']['kind']")" = rebuild ] || rk_fail "no rebuild after the restart"
[ "$(mg_q "s['job']['start']")" -eq "$ckpt" ] || rk_fail "resumed at $(mg_q "s['job']['start']"), not $ckpt"
[ "$(mg_slot_state 1)" = rebuilding ] || rk_fail "slot 1 not rebuilding"
reads0=$(mg_q "s['slots'][1]['io']['reads']")
read_past_100 $((SIZE - 64 * 1024))
read_past_100 $((ckpt + 8 * MiB))
rk_verify 0 $SIZE 2
mg_status
[ "$(mg_q "s['job']['state']")" = running ] || rk_fail "the rebuild ended during the reads (too fast to test)"
[ "$(mg_q "s['slots'][1]['io']['reads']")" = "$reads0" ] || rk_fail "the half-rebuilt member served reads"

# SIGKILL during the resumed rebuild: resumed again, then the resync of the dirty start runs.
srv=$(pgrep -P "$RK_PID" raidkit || echo "$RK_PID")
kill -KILL $srv "$RK_PID" 2>/dev/null
wait "$RK_PID" 2>/dev/null
for i in $(seq 50); do kill -0 $srv 2>/dev/null || break; sleep 0.1; done
RK_PID=""
rk_serve --control "$CTL" "$NEW" "${M[0]}"
grep -q "resuming rebuild at data offset" "$RK_LOG" || rk_fail "no second resume"
for i in $(seq 300); do
    grep -q "array in sync: resync recorded complete" "$RK_LOG" && break
    sleep 0.1
done
grep -q "starting the resync that waited for it" "$RK_LOG" || rk_fail "no resync after the rebuild: $(cat "$RK_LOG")"
grep -q "array in sync: resync recorded complete" "$RK_LOG" || rk_fail "resync did not finish: $(cat "$RK_LOG")"
mg_status
[ "$(mg_slot_state 1)" = active ] || rk_fail "slot 1 not active"
mg_fail 0
rk_verify 0 $SIZE 2
rk_stop
echo PASS
