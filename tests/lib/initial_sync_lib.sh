# Shared setup of the initial-sync tests (tests/integration/C16_initial_consistency.sh,
# initial_sync_power_cut.sh, initial_sync_random_members.sh; sourced after tests/lib/common.sh
# and rk_init, never run alone): members full of random bytes, the offline scrub's mismatch
# count, and an array created over them where the members cannot be zeroed, so that its first
# serve runs the initial sync (docs/CLI.md RAIDKIT_TEST_NO_ZERO, docs/ARCHITECTURE.md "Resync").

# is_random_members N MIB: $T/r0..r(N-1), MIB MiB of random bytes each (every member different);
# sets the array M=(...).
is_random_members()
{
    local i
    M=()
    for ((i = 0; i < $1; i++)); do
        head -c "$2M" /dev/urandom >"$T/r$i" || rk_fail "fill $T/r$i"
        M+=("$T/r$i")
    done
}

# is_scrub ARGS...: run `raidkit scrub ARGS` (members offline, or --control SOCKET online),
# print the mismatch count it reports; a failing scrub fails the test.
is_scrub()
{
    local out
    out=$(timeout 120 "$RAIDKIT" scrub "$@" 2>"$T/scrub.err") || rk_fail "raidkit scrub $*: $(cat "$T/scrub.err")"
    rk_log "scrub $*: $out"
    echo "$out" | sed -n 's/^scrub finished: \([0-9]*\) mismatches.*/\1/p'
}

# is_unsynced_array LEVEL N MIB: N random members of MIB MiB (is_random_members), created as
# LEVEL with RAIDKIT_TEST_NO_ZERO=1: create must warn that the first serve runs the initial sync,
# and an offline scrub must find mismatches (else the test would prove nothing about the sync).
is_unsynced_array()
{
    local out n
    is_random_members "$2" "$3"
    out=$(RAIDKIT_TEST_NO_ZERO=1 "$RAIDKIT" create --force --level "$1" "${M[@]}" 2>&1) ||
        rk_fail "create --level $1: $out"
    echo "$out" | grep -q "initial sync" || rk_fail "create did not warn about the initial sync: $out"
    n=$(is_scrub "${M[@]}")
    [ "${n:-0}" -gt 0 ] || rk_fail "$1: random members should mismatch before the initial sync (got '$n')"
}
