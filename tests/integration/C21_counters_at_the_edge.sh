#!/bin/bash
# C21 counters at the edge. Checksum-valid superblocks (tests/lib/sbedit.py recomputes the crc32c)
# with absurd fields: events = 2^64-2 on every member is refused at open with a message and never
# wrapped (the members are unchanged); one member of four with data_offset = 2^63, or with a huge
# event count, is named corrupt and the other three assemble degraded (with --degraded only) and
# serve the data written before.
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
rk_init
SBEDIT="$RAIDKIT_SOURCE_DIR/tests/lib/sbedit.py"
sums() { md5sum "$@" | awk '{print $1}' | tr '\n' ' '; }

rk_log "=== events = 2^64-2 on every member: refused at open, nothing written"
rk_members 4 9M
rk_create --level raid5 "${M[@]}"
for m in "${M[@]}"; do "$RK_PY" "$SBEDIT" "$m" events='2**64-2' >/dev/null || rk_fail "sbedit $m"; done
before=$(sums "${M[@]}")
rk_serve_refused "event counter 18446744073709551614.*bound" "${M[@]}"
rk_serve_refused "event counter 18446744073709551614.*bound" --degraded --force "${M[@]}"
"$RAIDKIT" info "${M[@]}" >"$T/info.out" 2>&1
grep -q "event counter 18446744073709551614" "$T/info.out" || rk_fail "info does not name the counter: $(cat "$T/info.out")"
[ "$(sums "${M[@]}")" = "$before" ] || rk_fail "a refused open changed the members"

# one_absurd FIELD=VALUE REGEX: a fresh raid5 of four with data; member 2 edited; serve names it
# corrupt and refuses without --degraded; with --degraded the data reads back and a write works.
one_absurd()
{
    local edit=$1 re=$2
    rk_log "=== member 2 of 4 with $edit"
    rk_members 4 9M
    rk_create --level raid5 "${M[@]}"
    local size
    size=$(rk_array_size "${M[@]}")
    rk_serve "${M[@]}"
    rk_stamp 1 0 "$size"
    rk_stop
    "$RK_PY" "$SBEDIT" "${M[2]}" "$edit" || rk_fail "sbedit ${M[2]} $edit"
    rk_serve_refused "degraded" "${M[@]}"
    grep -Eq "${M[2]}.*$re" "$RK_LOG_LAST" || rk_fail "member 2 not named with /$re/: $(cat "$RK_LOG_LAST")"
    rk_serve --degraded "${M[@]}"
    grep -Eq "${M[2]}.*$re" "$RK_LOG" || rk_fail "member 2 not named corrupt in the log"
    rk_verify 0 "$size" 1
    rk_stamp 2 0 $((1 * MiB))
    rk_verify 0 $((1 * MiB)) 2 $((1 * MiB)) $((size - MiB)) 1
    rk_stop
    # The set-aside member stays as it was: still refused, never rewritten.
    "$RAIDKIT" info "${M[2]}" >"$T/info.out" 2>&1
    grep -Eq "$re" "$T/info.out" || rk_fail "info ${M[2]}: $(cat "$T/info.out")"
}
one_absurd 'data_offset=2**63' "data offset 9223372036854775808 is beyond the member's size"
one_absurd 'events=2**63' "event counter 9223372036854775808 is beyond the bound"
echo PASS
