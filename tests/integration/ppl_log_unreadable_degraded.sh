#!/bin/bash
# A dirty and degraded start of a raid5 whose partial parity log cannot be read on a member that
# holds a live entry. The C01 cut (tests/lib/write_hole_lib.sh): a 4 KiB gen-2 write at offset 0
# reaches m0 (D0 of stripe 0), m2 (its parity member) loses power before the parity write; the
# write's log entry is on m2. m1 is removed. With m2's log region unreadable (a bad sector in
# its head), its entries cannot be told live or retired: a start that replays without them
# leaves stripe 0's parity stale, so m1's chunk [64K, 128K) is rebuilt from it as garbage. A
# writable start must refuse that (as it refuses a corrupt head with a member missing,
# docs/FORMAT.md "Replay", and as the read-only check refuses a log region it cannot read),
# changing no member; --force starts it with the warning; with the log readable the start
# replays it and every block reads old or new (C01).
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
rk_init
rk_need_libnbd
. "$RAIDKIT_SOURCE_DIR/tests/lib/torture_lib.sh"
. "$RAIDKIT_SOURCE_DIR/tests/lib/write_hole_lib.sh"

wh_setup raid5 3
wh_cut 0 --debug-fault 2:cut-after=3,on-cut=hang
mv "${M[1]}" "$T/m1.away"
bad="--debug-fault 2:read-eio=512K+4K" # m2's log head: the log region is [512K, 1M)

before=$(rk_sums "${M[0]}" "${M[2]}")
# shellcheck disable=SC2086
rk_serve_refused "partial parity log" --degraded $bad "${M[0]}" "${M[2]}"
grep -q "slot 2.*cannot read its partial parity log" "$RK_LOG_LAST" ||
    rk_fail "the refusal does not name the unreadable log: $(cat "$RK_LOG_LAST")"
# shellcheck disable=SC2086
rk_serve_refused "partial parity log" --read-only --degraded $bad "${M[0]}" "${M[2]}"
[ "$(rk_sums "${M[0]}" "${M[2]}")" = "$before" ] || rk_fail "a refused start changed a member"

# shellcheck disable=SC2086
rk_serve --degraded --force $bad "${M[0]}" "${M[2]}"
grep -q "its partial parity log cannot be read" "$RK_LOG" || rk_fail "no warning: $(cat "$RK_LOG")"
rk_stop

# The log readable (the post-cut images back, m1 away): replayed, every block old or new.
wh_restore
mv "${M[1]}" "$T/m1.away"
rk_serve --degraded "${M[0]}" "${M[2]}"
grep -q "partial parity log replayed" "$RK_LOG" || rk_fail "no replay: $(cat "$RK_LOG")"
wh_check
rk_stop
echo PASS
