#!/usr/bin/env bash
# Initial consistency (issue: "No initial sync"): four 64 MiB members full of random bytes.
# `create` zeroes the data areas (hole punch), so raid1, raid5 and raid6 start consistent: an
# offline scrub and an online scrub both report 0 mismatches, and a member failed right away
# leaves data that reads back as zeroes. With --assume-clean nothing is zeroed and the scrub
# finds mismatches: this test would fail if the zeroing broke.
. "$RAIDKIT_SOURCE_DIR/tests/lib/common.sh"
. "$RAIDKIT_SOURCE_DIR/tests/lib/initial_sync_lib.sh"
rk_init

for level in raid1 raid5 raid6; do
    rk_log "=== $level over random members"
    is_random_members 4 64
    rk_create --force --level "$level" "${M[@]}"
    n=$(is_scrub "${M[@]}")
    [ "$n" = 0 ] || rk_fail "$level: offline scrub right after create: $n mismatches, want 0"
    CTL="$T/ctl.$level"
    rk_serve --control "$CTL" "${M[@]}"
    n=$(is_scrub --control "$CTL")
    [ "$n" = 0 ] || rk_fail "$level: online scrub right after create: $n mismatches, want 0"
    size=$(rk_py size "$RK_URI") || rk_fail size
    "$RAIDKIT" fail --slot 0 --control "$CTL" >/dev/null 2>"$T/fail.err" || rk_fail "fail --slot 0: $(cat "$T/fail.err")"
    sum=$(rk_py sha "$RK_URI" 0 "$size") || rk_fail "read the array with slot 0 failed"
    want=$(head -c "$size" /dev/zero | sha256sum | cut -d' ' -f1)
    [ "$sum" = "$want" ] || rk_fail "$level: with slot 0 failed the fresh array does not read back as zeroes"
    rk_stop

    rk_log "=== $level over random members, --assume-clean"
    is_random_members 4 64
    rk_create --force --assume-clean --level "$level" "${M[@]}"
    n=$(is_scrub "${M[@]}")
    [ -n "$n" ] && [ "$n" -gt 0 ] ||
        rk_fail "$level --assume-clean: scrub found '$n' mismatches on random members, want > 0"
    rk_log "$level --assume-clean: $n mismatches, as expected without zeroing"
done
rm -f "$T"/r?
echo "PASS: initial consistency: raid1/5/6 over random members scrub 0 after create"
