#!/usr/bin/env bash
# assemble_scan: `raidkit assemble --scan` over a configuration file (docs/CLI.md "assemble")
# finds an array's members by their superblocks among paths and globs listed in any order;
# a missing member makes it degraded (exit 3), two make it failed (5); a member of another
# array and a file that is no member are named and skipped. `serve NAME` serves a configured
# array with the configuration's listen address, and the systemd units verify and run: the
# service's ExecStart under socket activation answers NBD, reports READY=1 to NOTIFY_SOCKET and
# stops cleanly on SIGTERM.
. "$RAIDKIT_SOURCE_DIR/tests/lib/common.sh"
rk_init
rk_need nbdinfo python3

rk_members 3 32M a A
rk_create --level 5 --name alpha "${A[@]}"
rk_members 2 32M b B
rk_create --level 1 --name beta "${B[@]}"
truncate -s 8M "$T/junk"
uuid=$(rk_info_json "${A[0]}" | python3 -c 'import json,sys; print(json.load(sys.stdin)["array"]["uuid"])')
conf=$T/raidkit.conf
cat >"$conf" <<EOC
# members in any order, one of another array, one no member at all, one on a second line
[array alpha]
uuid = ${uuid^^}
members = ${A[2]} ${B[0]} ${A[0]} $T/junk
members = $T/a1
listen = unix:$T/alpha.sock
control = $T/alpha.ctl

[array beta]
members = $T/b*
EOC

scan() { # scan WANT_STATUS ARGS...: run assemble --scan, check the exit status
    local want=$1 rc
    shift
    "$RAIDKIT" assemble --scan --config "$conf" "$@" >"$T/scan.out" 2>"$T/scan.err"
    rc=$?
    [ "$rc" -eq "$want" ] || rk_fail "assemble --scan $* exited $rc, want $want: $(cat "$T/scan.out" "$T/scan.err")"
}
scan 0
grep -q "array alpha: $uuid raid5, 3 members found: healthy (of 3 slots)" "$T/scan.out" || rk_fail "alpha not healthy: $(cat "$T/scan.out")"
for s in 0 1 2; do
    grep -Eq "slot $s: active, ${A[$s]}\$" "$T/scan.out" || rk_fail "slot $s of alpha is not ${A[$s]}: $(cat "$T/scan.out")"
done
grep -q "skipped  ${B[0]}: member of another array, .* (beta)" "$T/scan.out" || rk_fail "foreign member not named: $(cat "$T/scan.out")"
grep -q "skipped  $T/junk: not a raidkit member: zeroes only" "$T/scan.out" || rk_fail "junk not named"
grep -q "array beta: .* raid1, 2 members found: healthy (of 2 slots)" "$T/scan.out" || rk_fail "beta (by name, glob) not found"

# One member missing: degraded; two: failed; JSON says the same.
mv "${A[1]}" "$T/away"
scan 3 alpha
grep -Eq "^  slot 1: missing\$" "$T/scan.out" || rk_fail "missing slot not shown: $(cat "$T/scan.out")"
grep -q "not found" "$T/scan.out" || rk_fail "the missing path is not named"
mv "${A[2]}" "$T/away2"
scan 5 --json alpha
python3 -c 'import json,sys; a=json.load(open(sys.argv[1]))["arrays"]; assert len(a)==1 and a[0]["state"]=="failed", a' "$T/scan.out" ||
    rk_fail "JSON of a failed scan: $(cat "$T/scan.out")"
mv "$T/away" "${A[1]}"
mv "$T/away2" "${A[2]}"
scan 2 nosuch
"$RAIDKIT" assemble "$conf" >/dev/null 2>&1
[ $? -eq 2 ] || rk_fail "assemble without --scan is not a usage error"
printf '[array x]\nmembers = /x\nbogus = 1\n' >"$T/bad.conf"
"$RAIDKIT" assemble --scan --config "$T/bad.conf" >/dev/null 2>"$T/bad.err"
[ $? -eq 2 ] && grep -q "bad.conf:3: unknown key 'bogus'" "$T/bad.err" || rk_fail "bad config (exit 2, a usage error): $(cat "$T/bad.err")"

# Config errors are usage errors (exit 2, systemd's RestartPreventExitStatus=2), also for serve;
# --config with member files is refused, not ignored.
"$RAIDKIT" serve --config "$T/nonexist.conf" alpha >/dev/null 2>"$T/nc.err"
[ $? -eq 2 ] && grep -q "nonexist.conf" "$T/nc.err" || rk_fail "serve with a missing config: $(cat "$T/nc.err")"
"$RAIDKIT" serve --config "$T/nonexist.conf" "${A[@]}" >/dev/null 2>"$T/nc.err"
[ $? -eq 2 ] && grep -q "give its NAME alone" "$T/nc.err" || rk_fail "serve --config with members: $(cat "$T/nc.err")"
"$RAIDKIT" serve --config "$T/bad.conf" x >/dev/null 2>&1
[ $? -eq 2 ] || rk_fail "serve with a bad config is not exit 2"
# The same file listed twice (a hard link) is a usage error naming both; overlapping globs are not.
ln "${A[0]}" "$T/alink"
printf '[array alpha]\nuuid = %s\nmembers = %s %s %s %s\n' "$uuid" "${A[0]}" "${A[1]}" "${A[2]}" "$T/alink" >"$T/dup.conf"
"$RAIDKIT" assemble --scan --config "$T/dup.conf" >/dev/null 2>"$T/dup.err"
[ $? -eq 2 ] && grep -q "${A[0]} and $T/alink are the same file" "$T/dup.err" || rk_fail "duplicate listing: $(cat "$T/dup.err")"
printf '[array alpha]\nuuid = %s\nmembers = %s %s/a*\n' "$uuid" "${A[0]}" "$T" >"$T/glob.conf"
"$RAIDKIT" assemble --scan --config "$T/glob.conf" >"$T/glob.out" 2>&1
[ $? -eq 0 ] && grep -q "3 members found: healthy (of 3 slots)" "$T/glob.out" || rk_fail "overlapping globs: $(cat "$T/glob.out")"
rm -f "$T/alink"
# A truncated member (shorter than its superblock says) is named so in its slot line, left out.
cp "${A[2]}" "$T/a2.cur"
truncate -s 4M "${A[2]}"
scan 3 alpha
grep -Eq "^  slot 2: truncated, left out: ${A[2]} is truncated" "$T/scan.out" || rk_fail "truncated member: $(cat "$T/scan.out")"
cp "$T/a2.cur" "${A[2]}"
# A stale member is named as such in its slot line, not counted as found.
cp "${A[0]}" "$T/old0"
"$RAIDKIT" serve -q --run true "${A[@]}" 2>/dev/null || rk_fail "serve --run true"
cp "$T/a2.cur" "${A[2]}"
scan 3 alpha
grep -Eq "^  slot 2: stale \(event [0-9]+ < [0-9]+\), left out: ${A[2]}\$" "$T/scan.out" || rk_fail "stale wording: $(cat "$T/scan.out")"
grep -q "2 members found: degraded (of 3 slots, 1 file left out)" "$T/scan.out" || rk_fail "stale counts: $(cat "$T/scan.out")"
grep -q "is stale" "$T/scan.out" && rk_fail "'stale: is stale' wording: $(cat "$T/scan.out")"
# An older copy of a slot another file holds: skipped, named stale once (was "stale: is stale").
printf '[array alpha]\nuuid = %s\nmembers = %s %s %s %s\n' "$uuid" "${A[0]}" "${A[1]}" "$T/a2.cur" "$T/old0" >"$T/old.conf"
"$RAIDKIT" assemble --scan --config "$T/old.conf" >"$T/old.out" 2>&1
grep -Eq "^  skipped  $T/old0: stale \(slot 0, event [0-9]+ < newest [0-9]+ of ${A[0]}\); not used\$" "$T/old.out" ||
    rk_fail "older copy of slot 0: $(cat "$T/old.out")"
rm -f "$T/old0"
"$RAIDKIT" replace --slot 2 --with "${A[2]}" "${A[0]}" "${A[1]}" >/dev/null 2>"$T/rep.err" || rk_fail "replace slot 2: $(cat "$T/rep.err")"
scan 0 alpha
# A byte copy of a member (same member UUID and event): not healthy, serve NAME refuses.
cp "${A[1]}" "$T/acopy"
printf '[array alpha]\nuuid = %s\nmembers = %s %s %s %s\n' "$uuid" "${A[0]}" "${A[1]}" "${A[2]}" "$T/acopy" >"$T/copy.conf"
"$RAIDKIT" assemble --scan --config "$T/copy.conf" >"$T/copy.out" 2>&1
[ $? -eq 5 ] && grep -q "duplicate" "$T/copy.out" || rk_fail "a copied member: $(cat "$T/copy.out")"
"$RAIDKIT" serve --config "$T/copy.conf" --run true alpha >/dev/null 2>"$T/copy.err"
[ $? -eq 1 ] && grep -q "two files hold the same member" "$T/copy.err" || rk_fail "serve NAME with a copy: $(cat "$T/copy.err")"
rm -f "$T/acopy"

# serve NAME: the configured members and listen address; SIGTERM stops it cleanly.
RK_NSERVE=$((RK_NSERVE + 1))
RK_LOG=$T/serve-name.log
"$RAIDKIT" serve --config "$conf" alpha 2>"$RK_LOG" &
RK_PID=$!
RK_SOCK=$T/alpha.sock
for i in $(seq 100); do [ -S "$RK_SOCK" ] && break; sleep 0.1; done
[ -S "$RK_SOCK" ] || rk_fail "serve alpha did not listen on the configured $RK_SOCK"
size=$(nbdinfo --size "nbd+unix:///?socket=$RK_SOCK") || rk_fail "nbdinfo on serve alpha"
"$RAIDKIT" status --test --control "$T/alpha.ctl" >/dev/null || rk_fail "configured control socket"
rk_stop
[ "$size" = "$(rk_array_size "${A[@]}")" ] || rk_fail "serve alpha exported $size bytes"

# The systemd units: verify them, then run the service's ExecStart as systemd would, under
# socket activation (systemd-socket-activate) with a NOTIFY_SOCKET listener, and SIGTERM it.
unit=$RAIDKIT_BUILD_DIR/systemd/raidkit@.service.in # ExecStart's %BINDIR% is filled in at install
[ -f "$unit" ] || rk_fail "no $unit built"
if command -v systemd-analyze >/dev/null; then
    sed "s|^ExecStart=[^ ]*|ExecStart=$RAIDKIT|" "$unit" >"$T/raidkit@alpha.service"
    cp "$RAIDKIT_SOURCE_DIR/systemd/raidkit@.socket" "$T/raidkit@alpha.socket"
    systemd-analyze verify --man=no "$T/raidkit@alpha.service" "$T/raidkit@alpha.socket" 2>"$T/verify.err" ||
        rk_fail "systemd-analyze verify: $(cat "$T/verify.err")"
fi
if command -v systemd-socket-activate >/dev/null; then
    cmd=$(sed -n 's/^ExecStart=[^ ]* //p' "$unit" | sed "s|--config [^ ]*|--config $conf|; s|%i|alpha|")
    notify=$T/notify.sock
    /usr/bin/python3 - "$notify" >"$T/notify.out" <<'EOP' &
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1]); s.settimeout(30)
while True:
    m = s.recv(4096).decode()
    print(m, flush=True)
    if "STOPPING=1" in m:
        break
EOP
    npid=$!
    for i in $(seq 50); do [ -S "$notify" ] && break; sleep 0.1; done
    # shellcheck disable=SC2086
    systemd-socket-activate -E NOTIFY_SOCKET="$notify" -l "$T/act.sock" "$RAIDKIT" $cmd 2>"$T/act.log" &
    apid=$!
    RK_PID=$apid # systemd-socket-activate execs the service: rk_cleanup stops it on a failure
    for i in $(seq 50); do [ -S "$T/act.sock" ] && break; sleep 0.1; done
    out=$(timeout 20 nbdinfo --size "nbd+unix:///?socket=$T/act.sock") || rk_fail "socket-activated service: $(cat "$T/act.log")"
    [ "$out" = "$size" ] || rk_fail "socket-activated service exported $out bytes"
    for i in $(seq 50); do grep -q READY=1 "$T/notify.out" && break; sleep 0.1; done
    grep -q READY=1 "$T/notify.out" || rk_fail "no READY=1 on NOTIFY_SOCKET"
    kill -TERM "$apid"
    wait "$apid"
    rc=$?
    RK_PID=""
    [ $rc -eq 0 ] || rk_fail "the service exited $rc after SIGTERM: $(cat "$T/act.log")"
    wait "$npid"
    grep -q STOPPING=1 "$T/notify.out" || rk_fail "no STOPPING=1 on NOTIFY_SOCKET"
    grep -q '"clean":	true' <<<"$(rk_info_json "${A[@]}")" || rk_fail "array not clean after SIGTERM"
fi
echo "PASS: assemble --scan (any order, missing, foreign, non-member), serve NAME, systemd units"
