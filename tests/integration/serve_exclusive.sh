#!/usr/bin/env bash
# One array, one user: a second `raidkit serve` over members already served, or on the socket of
# a running server, is refused and changes nothing — the running server keeps serving. A start
# the engine refuses (a truncated member) writes no superblock either.
. "$RAIDKIT_SOURCE_DIR/tests/lib/common.sh"
rk_init
rk_need nbdinfo
# The running server must not clear idle bitmap bits while the members are compared: a loaded
# machine can take longer than the default 5 s idle time between the two checksums.
export RAIDKIT_BITMAP_IDLE_MS=600000

sums() { sha256sum "$@" | cut -c1-64 | tr '\n' ' '; }

rk_members 3 24M ex
rk_create --level 5 --chunk 64K "${M[@]}"
rk_serve "${M[@]}"
rk_stamp 1 0 $((8 * MiB))
before=$(sums "${M[@]}")

# Same members, another socket: the members are locked by the running server.
rk_serve_refused "busy|in use" "${M[@]}"
# Another array on the running server's socket: never steal a live socket.
rk_members 3 24M other
rk_create --level 1 "${M[@]:0:2}"
sock_of_a=$RK_SOCK
RK_NSERVE=$((RK_NSERVE + 1))
timeout 10 "$RAIDKIT" serve --listen "unix:$sock_of_a" "${M[@]:0:2}" 2>"$T/steal.log" >/dev/null
rc=$?
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || rk_fail "serve on a live socket was not refused (status $rc)"
grep -qi "in use" "$T/steal.log" || rk_fail "no 'in use' message: $(cat "$T/steal.log")"
[ -S "$sock_of_a" ] || rk_fail "the running server's socket was removed"
nbdinfo --size "$RK_URI" >/dev/null || rk_fail "the running server no longer answers"
[ "$(sums "$T/ex0" "$T/ex1" "$T/ex2")" = "$before" ] || rk_fail "a refused serve changed members"

# create --force over members a server holds: refused (the member lock), nothing written.
M=("$T/ex0" "$T/ex1" "$T/ex2")
if "$RAIDKIT" create --force --level raid1 "${M[0]}" "${M[1]}" 2>"$T/force.log" >/dev/null; then
    rk_fail "create --force overwrote members in use"
fi
grep -qi "in use" "$T/force.log" || rk_fail "create --force: no 'in use' message: $(cat "$T/force.log")"
# --pidfile naming an existing file that is not a pid file (a member named by mistake): refused
# before any member is opened, the file untouched.
cp "$T/other0" "$T/notpid"
pbefore=$(sums "$T/notpid")
timeout 10 "$RAIDKIT" serve --pidfile "$T/notpid" --listen "unix:$T/p.sock" "$T/other0" "$T/other1" \
    2>"$T/pid.log" >/dev/null && rk_fail "serve with a non-pid --pidfile was not refused"
grep -q "not a pid file" "$T/pid.log" || rk_fail "no 'not a pid file' message: $(cat "$T/pid.log")"
[ "$(sums "$T/notpid")" = "$pbefore" ] || rk_fail "--pidfile overwrote a file that is not a pid file"
[ "$(sums "${M[@]}")" = "$before" ] || rk_fail "a refused create changed members"
rk_verify 0 $((8 * MiB)) 1
rk_stop

# A refused start writes nothing: truncate one raid5 member below its data area (set aside as
# truncated, its slot missing: refused without --degraded; truncated_member_set_aside.sh runs
# the degraded start).
truncate -s 20M "${M[2]}"
before=$(sums "${M[@]}")
rk_serve_refused "is truncated" "${M[@]}"
[ "$(sums "${M[@]}")" = "$before" ] || rk_fail "a refused start changed member files"
echo "PASS: members and sockets in use are refused (also create --force, a non-pid --pidfile); refused starts write nothing"
