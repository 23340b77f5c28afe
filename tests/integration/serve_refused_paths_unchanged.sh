#!/bin/bash
# serve with an unusable control socket or pid file path is refused before any member is opened
# for writing (U14): nonexistent directory, a path too long for sun_path, a live server's
# socket, a directory where no file can be made (/proc, for root), a pid file path that is no
# pid file. Each refusal exits non-zero with a message naming the path, and the sha256 of
# every member is the same before and after (no dirty mark, no event counter raised).
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
rk_init

rk_members 2 8M o-
rk_create --level raid1 "${M[@]}"
OTHER=("${M[@]}")
rk_members 3 8M m-
rk_create --level raid5 "${M[@]}"
# A live server (another array) owns this control socket.
rk_serve --control "$T/live.ctl" "${OTHER[@]}"

# refused PATTERN SERVE-OPTIONS...: serve over M must be refused (rk_serve_refused) with a
# message matching PATTERN, every member byte-identical.
refused()
{
    local pat=$1 before after
    shift
    before=$(sha256sum "${M[@]}")
    rk_serve_refused "$pat" "$@" "${M[@]}"
    after=$(sha256sum "${M[@]}")
    [ "$before" = "$after" ] || rk_fail "refused serve $* changed members: $(diff <(echo "$before") <(echo "$after"))"
}

long="$T/$(printf 'd%.0s' $(seq 120))"
refused "--control $T/nodir/ctl" --control "$T/nodir/ctl"
refused "not a usable unix socket path" --control "$long.ctl"
refused "in use by a running server" --control "$T/live.ctl"
refused "--pidfile $T/nodir/x.pid" --pidfile "$T/nodir/x.pid"
refused "not a pid file" --pidfile "${OTHER[0]}"
if [ "$(id -u)" = 0 ]; then
    # root passes every access(2) check: only a real bind / create shows these are unusable.
    refused "control socket /proc/raidkit-test-$$.ctl" --control "/proc/raidkit-test-$$.ctl"
    refused "--pidfile /proc/raidkit-test-$$.pid" --pidfile "/proc/raidkit-test-$$.pid"
    # fuse takes serve's --control: bound before the members open too.
    mkdir -p "$T/mnt"
    before=$(sha256sum "${M[@]}")
    timeout 10 "$RAIDKIT" fuse --control "/proc/raidkit-test-$$.ctl" "$T/mnt" "${M[@]}" >/dev/null 2>"$T/fuse.err" &&
        rk_fail "fuse with an unusable --control was not refused"
    [ "$(sha256sum "${M[@]}")" = "$before" ] || rk_fail "refused fuse changed members: $(cat "$T/fuse.err")"
fi
rk_stop
# The members still serve (nothing left behind by the refusals).
rk_serve --control "$T/ctl" --pidfile "$T/pid" "${M[@]}"
[ -S "$T/ctl" ] || rk_fail "no control socket"
for i in $(seq 50); do [ -s "$T/pid" ] && break; sleep 0.1; done
[ "$(cat "$T/pid")" -gt 0 ] || rk_fail "no pid file"
rk_stop
echo PASS
