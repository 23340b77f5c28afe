#!/bin/bash
# nbdkit_plugin: `nbdkit raidkit member=...` (plugin/raidkit-plugin.c) serves a raid5 volume
# assembled from members given in shuffled order: fio crc32c verify through nbdkit's socket, the
# data reads back through `raidkit serve` after nbdkit's clean exit (array clean), block status
# through the plugin, readonly=1 refuses writes, and a bad parameter is refused by name.
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
rk_init
rk_need nbdkit nbdinfo nbdsh fio
PLUGIN=$(dirname "$RAIDKIT")/plugin/nbdkit-raidkit-plugin.so
[ -f "$PLUGIN" ] || rk_skip "nbdkit plugin not built ($PLUGIN; needs nbdkit-plugin-dev, not built with RAIDKIT_SANITIZE)"
NK_PID=""

# nk_start ARGS...: nbdkit in the foreground on a private socket; sets RK_URI, RK_SOCK, NK_PID.
nk_start()
{
    RK_SOCK="$T/nk.sock"
    RK_URI="nbd+unix:///?socket=$RK_SOCK"
    rm -f "$RK_SOCK"
    timeout -k 30 120 nbdkit -f -U "$RK_SOCK" "$PLUGIN" "$@" 2>"$T/nbdkit.log" &
    NK_PID=$!
    local i
    for i in $(seq 100); do
        [ -S "$RK_SOCK" ] && return 0
        kill -0 "$NK_PID" 2>/dev/null || rk_fail "nbdkit exited: $(cat "$T/nbdkit.log")"
        sleep 0.1
    done
    rk_fail "nbdkit did not listen within 10 s"
}

nk_stop()
{
    kill -TERM "$NK_PID"
    wait "$NK_PID" || rk_fail "nbdkit exited with status $? after SIGTERM: $(cat "$T/nbdkit.log")"
    NK_PID=""
}

rk_members 3 33M
rk_create --level raid5 "${M[@]}"
nk_start member="${M[2]}" member="${M[0]}" member="${M[1]}"
rk_fio_verify 16
rk_stamp 1 $((40 * MiB)) $((1 * MiB))
nbdinfo --map "$RK_URI" >"$T/map" || rk_fail "nbdinfo --map through the plugin"
grep -q "hole,zero" "$T/map" || rk_fail "no hole reported through the plugin: $(cat "$T/map")"
nk_stop
rk_info_json "${M[@]}" >"$T/info.json"
[ "$(rk_info_get clean clean "$T/info.json")" = True ] || rk_fail "array not clean after nbdkit's exit"

rk_serve "${M[@]}"
rk_verify $((40 * MiB)) $((1 * MiB)) 1
rk_stop

nk_start member="${M[0]}" member="${M[1]}" member="${M[2]}" readonly=1
out=$(PATH=/usr/bin:$PATH nbdsh -u "$RK_URI" -c 'print(h.is_read_only())')
[ "$out" = True ] || rk_fail "readonly=1: is_read_only is $out"
rk_verify $((40 * MiB)) $((1 * MiB)) 1
nk_stop

nbdkit -U "$T/bad.sock" "$PLUGIN" member="${M[0]}" colour=blue >"$T/bad.log" 2>&1 &&
    rk_fail "nbdkit accepted colour=blue"
grep -q "unknown parameter 'colour'" "$T/bad.log" || rk_fail "bad parameter message: $(cat "$T/bad.log")"

# Too few members: the error at once (no hang), from nbdkit --run's client too.
timeout 30 nbdkit -U - "$PLUGIN" member="${M[0]}" --run 'nbdinfo --size "$uri"' </dev/null >"$T/few.log" 2>&1
rc=$?
[ "$rc" -ne 124 ] || rk_fail "nbdkit raidkit with one of three members hangs"
[ "$rc" -ne 0 ] && grep -q "members unavailable" "$T/few.log" || rk_fail "too few members (rc $rc): $(cat "$T/few.log")"
timeout 30 nbdkit -U - "$PLUGIN" member="${M[0]}" --run 'nbdinfo --size "$uri"' >"$T/few.log" 2>&1
[ $? -ne 124 ] || rk_fail "nbdkit raidkit with one of three members hangs (stdin not /dev/null)"
# One member missing without degraded=: the advice names the plugin's parameter, not serve's
# option (it said "--degraded").
timeout 30 nbdkit -U - "$PLUGIN" member="${M[0]}" member="${M[1]}" --run 'nbdinfo --size "$uri"' </dev/null >"$T/deg.log" 2>&1 &&
    rk_fail "nbdkit raidkit served a degraded array without degraded=true"
grep -q "degraded=true" "$T/deg.log" || rk_fail "degraded advice: $(cat "$T/deg.log")"
grep -q -- "--degraded" "$T/deg.log" && rk_fail "the advice names serve's --degraded: $(cat "$T/deg.log")"
timeout 30 nbdkit -U - "$PLUGIN" member="${M[0]}" member="${M[1]}" degraded=true --run 'nbdinfo --size "$uri"' </dev/null >"$T/deg.log" 2>&1 ||
    rk_fail "degraded=true with one member missing: $(cat "$T/deg.log")"
# The same member twice: said so, before anything is opened.
timeout 30 nbdkit -U - "$PLUGIN" member="${M[0]}" member="${M[0]}" member="${M[1]}" --run true >"$T/dup.log" 2>&1 &&
    rk_fail "nbdkit accepted a member given twice"
grep -q "given twice" "$T/dup.log" || rk_fail "duplicate member message: $(cat "$T/dup.log")"
# A member locked by a running server: the message names the pid holding it.
rk_serve "${M[@]}"
timeout 30 nbdkit -U - "$PLUGIN" member="${M[0]}" member="${M[1]}" member="${M[2]}" --run 'nbdinfo --size "$uri"' >"$T/busy.log" 2>&1 &&
    rk_fail "nbdkit served members in use"
grep -Eq "in use by pid [0-9]+ \(raidkit\)" "$T/busy.log" || rk_fail "lock holder not named: $(cat "$T/busy.log")"
rk_stop
echo PASS
