#!/bin/bash
# A dirty raid6 started with one member missing still has one parity: its resync rewrites that
# parity where it disagrees with the data (the missing data block rebuilt from P), instead of
# only reporting the mismatch. Row 0 of a 5-member raid6: P on slot 4, Q on slot 0. Gen 1 is
# written there, the server is killed, P on slot 4 is made stale, and the array starts without
# slot 0: after the resync an offline scrub (slot 0 still missing) finds no mismatch and the
# data reads back.
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/integration/manage_lib.bash"
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/torture_lib.sh" # torture_kill
. "$RAIDKIT_SOURCE_DIR/tests/lib/initial_sync_lib.sh"                     # is_scrub
rk_init

CTL="$T/ctl"
rk_members 5 9M
rk_create --level raid6 --chunk 16K "${M[@]}"
rk_serve --control "$CTL" "${M[@]}"
rk_stamp 1 0 49152
torture_kill
# Stale P of row 0 (slot 4, member data offset 0; data starts at 1 MiB).
dd if=/dev/urandom of="${M[4]}" bs=16K count=1 seek=64 conv=notrunc status=none || rk_fail dd
rk_serve --control "$CTL" --degraded "${M[1]}" "${M[2]}" "${M[3]}" "${M[4]}"
mg_wait_job 30
[ "$(mg_q "s['job']['kind']")/$(mg_q "s['job']['state']")" = resync/done ] ||
    rk_fail "no resync ran: $(cat "$T/st.json")"
rk_verify 0 49152 1
rk_stop
n=$(is_scrub "${M[1]}" "${M[2]}" "${M[3]}" "${M[4]}")
[ "$n" = 0 ] || rk_fail "after the degraded resync an offline scrub finds $n mismatches, want 0"
echo "PASS: a degraded raid6 resync rewrites the parity left"
