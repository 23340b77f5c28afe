#!/bin/bash
# Socket access (docs/SECURITY.md "Sockets"): under umask 000 the NBD socket is 0600 by default and
# exactly --socket-mode/--socket-group otherwise, from the moment it appears; the control socket
# is 0600; a second server never takes over a live control socket (refused with a message, the
# first one still answers) while a stale one is replaced; the control socket serves several
# clients at once and a client dripping a byte every 5 s is cut off without holding the others;
# TCP on a non-loopback address without TLS (or with --tls on) warns, on loopback it does not.
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
rk_init
umask 000
rk_members 4 9M
rk_create --level raid1 "${M[0]}" "${M[1]}"
rk_create --level raid1 "${M[2]}" "${M[3]}"
CTL="$T/ctl"
mode_of() { stat -c %a "$1"; }

rk_log "=== modes under umask 000"
rk_serve --control "$CTL" "${M[0]}" "${M[1]}"
[ "$(mode_of "$RK_SOCK")" = 600 ] || rk_fail "NBD socket mode $(mode_of "$RK_SOCK") under umask 000, want 600"
[ "$(mode_of "$CTL")" = 600 ] || rk_fail "control socket mode $(mode_of "$CTL"), want 600"
ls -a "$T" | grep -q '^\.raidkit-' && rk_fail "private bind directory left behind"

rk_log "=== a live control socket is not taken over"
timeout 10 "$RAIDKIT" serve --listen "unix:$T/other.sock" --control "$CTL" "${M[2]}" "${M[3]}" \
    2>"$T/steal.log" >/dev/null
rc=$?
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || rk_fail "second server on a live control socket: status $rc"
grep -q "control socket $CTL is in use by a running server" "$T/steal.log" ||
    rk_fail "no 'in use' message: $(cat "$T/steal.log")"
"$RAIDKIT" status --json --control "$CTL" >"$T/st.json" || rk_fail "the first server stopped answering"
grep -q "$(rk_array_uuid "${M[0]}" "${M[1]}" | cut -c1-8)" "$T/st.json" ||
    rk_fail "the control socket answers for another array: $(head -c 300 "$T/st.json")"

rk_log "=== several clients; a dripping client is cut off and holds nobody"
"$RK_PY" - "$CTL" >"$T/drip.out" 2>&1 <<'PY' &
import socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
t0 = time.time()
try:
    for ch in '{"cmd":"status"':
        s.sendall(ch.encode())
        time.sleep(5)
        if time.time() - t0 > 30:
            break
except OSError:
    pass
s.settimeout(5)
try:
    print("got:", s.recv(4096).decode().strip(), "after %.1f s" % (time.time() - t0))
except OSError as e:
    print("error", e)
PY
drip=$!
sleep 1
"$RK_PY" - "$CTL" <<'PY' || rk_fail "concurrent control clients"
import socket, sys, time, threading
path = sys.argv[1]
idle = []
for i in range(4):  # four idle clients connected at once
    c = socket.socket(socket.AF_UNIX); c.connect(path); idle.append(c)
errs = []
def ask():
    t0 = time.time()
    c = socket.socket(socket.AF_UNIX); c.settimeout(5); c.connect(path)
    c.sendall(b'{"cmd":"status"}\n')
    buf = b""
    while not buf.endswith(b"\n"):
        d = c.recv(65536)
        if not d: break
        buf += d
    if b'"ok":true' not in buf or time.time() - t0 > 3:
        errs.append("slow or bad status reply after %.1f s: %r" % (time.time() - t0, buf[:80]))
ts = [threading.Thread(target=ask) for _ in range(6)]
[t.start() for t in ts]; [t.join() for t in ts]
if errs: sys.exit("; ".join(errs))
print("6 status requests answered with a dripping and 4 idle clients connected")
PY
wait $drip
cat "$T/drip.out" >&2
grep -q "not complete within 10 s" "$T/drip.out" || rk_fail "the dripping client was not cut off: $(cat "$T/drip.out")"
rk_stop

rk_log "=== a stale control socket is replaced; --socket-mode/--socket-group"
rk_serve --control "$CTL" "${M[0]}" "${M[1]}"
# rk_serve runs the server under timeout(1): kill the server itself (its child), then timeout.
srv=$(pgrep -P "$RK_PID" raidkit || echo "$RK_PID")
kill -KILL $srv "$RK_PID" 2>/dev/null
wait "$RK_PID" 2>/dev/null
for i in $(seq 50); do kill -0 $srv 2>/dev/null || break; sleep 0.1; done
RK_PID=""
[ -S "$CTL" ] || rk_fail "no stale control socket left by a killed server"
grp=$(getent group nogroup >/dev/null && echo nogroup || id -gn)
rk_serve --control "$CTL" --socket-mode 0660 --socket-group "$grp" "${M[0]}" "${M[1]}"
"$RAIDKIT" status --control "$CTL" >/dev/null || rk_fail "status on the replaced control socket"
[ "$(mode_of "$RK_SOCK")" = 660 ] || rk_fail "--socket-mode 0660 gave $(mode_of "$RK_SOCK")"
[ "$(stat -c %G "$RK_SOCK")" = "$grp" ] || rk_fail "--socket-group $grp gave $(stat -c %G "$RK_SOCK")"
nbdinfo --size "$RK_URI" >/dev/null || rk_fail "nbdinfo on a 0660 socket"
rk_stop
rk_serve_refused "bad --socket-mode" --socket-mode 0999 "${M[0]}" "${M[1]}"
rk_serve_refused "bad --socket-owner" --socket-owner no-such-user-rk "${M[0]}" "${M[1]}"

rk_log "=== TCP: a warning off loopback without TLS"
port=$((20000 + RANDOM % 20000))
timeout -k 5 20 "$RAIDKIT" serve --listen "tcp:0.0.0.0:$port" "${M[0]}" "${M[1]}" 2>"$T/tcp.log" &
pid=$!
for i in $(seq 50); do grep -q serving "$T/tcp.log" && break; sleep 0.1; done
kill -TERM $pid; wait $pid
grep -q "without TLS: anyone who can reach it" "$T/tcp.log" || rk_fail "no warning for 0.0.0.0: $(cat "$T/tcp.log")"
psktool -u u -p "$T/k.psk" >/dev/null 2>&1 || echo "u:00112233445566778899aabbccddeeff" >"$T/k.psk"
timeout -k 5 20 "$RAIDKIT" serve --listen "tcp:0.0.0.0:$port" --tls on --tls-psk "$T/k.psk" \
    "${M[0]}" "${M[1]}" 2>"$T/tcp1.log" &
pid=$!
for i in $(seq 50); do grep -q serving "$T/tcp1.log" && break; sleep 0.1; done
kill -TERM $pid; wait $pid
grep -q "without TLS required" "$T/tcp1.log" || rk_fail "no warning for --tls on: $(cat "$T/tcp1.log")"
timeout -k 5 20 "$RAIDKIT" serve --listen "tcp:127.0.0.1:$port" "${M[0]}" "${M[1]}" 2>"$T/tcp2.log" &
pid=$!
for i in $(seq 50); do grep -q serving "$T/tcp2.log" && break; sleep 0.1; done
kill -TERM $pid; wait $pid
grep -q "without TLS" "$T/tcp2.log" && rk_fail "a warning for loopback: $(cat "$T/tcp2.log")"
echo PASS
