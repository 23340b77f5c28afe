# Power-cut torture cycles (docs/TORTURE.md), sourced after tests/lib/common.sh and rk_init.
#   torture_level LEVEL CUTS   run CUTS cycles on LEVEL, print one "torture LEVEL: ..." summary
#                              line (also in TORTURE_SUMMARY), return 0 when every check passed
#                              in every cycle
# One cycle: create a fresh array over small sparse members, serve it with every member behind
# one shared power cut (--debug-fault all:cut-after=RANDOM,keep=random,seed=S,on-cut=hang), run
# the client (tests/lib/torture.py) until the cut is complete, SIGKILL the server, serve again without
# faults, verify every block, scrub (0 mismatches wanted), then - levels with redundancy - fail
# or remove one member and verify again. Knobs (environment): TORTURE_SEED (first seed, default 1),
# TORTURE_CUTMAX (cut after 1..CUTMAX member writes, default 1500), TORTURE_OPS (client
# operations at most, default 3000), TORTURE_FAIL (1: fail a member after the cut, default 1),
# TORTURE_AFTER (what step 5 does to the member of slot seed mod members: fail, default, with
# `raidkit fail --slot`; remove: restart without it; none, like TORTURE_FAIL=0),
# TORTURE_QUIET (1: no per-cycle lines), TORTURE_ONCUT (hang, default: nothing is acknowledged
# after the cut instant; fail: member I/O fails after the cut and the server keeps answering,
# which tests what the engine acknowledges after member failures it could not record).
# TORTURE_CACHE (a cache mode, e.g. writeback: every cycle serves through a fresh 8 MiB cache of
# 4 KiB blocks, tests/lib/cache_lib.sh sourced; the cache device shares the power cut; after the
# checks the cache is detached and everything verified again on the backing).
# shellcheck disable=SC2034

TORTURE_PY="$RAIDKIT_SOURCE_DIR/tests/lib/torture.py"

# torture_geom LEVEL: "MEMBERS CREATE_OPTS" for a level (9 MiB members: 8 MiB data each).
torture_geom()
{
    case $1 in
    linear) echo "2" ;;
    raid0) echo "3 --chunk 16K" ;;
    raid1) echo "2" ;;
    raid10) echo "4 --chunk 16K" ;;
    raid5) echo "4 --chunk 16K" ;;
    raid6) echo "5 --chunk 16K" ;;
    *) rk_fail "torture: unknown level $1" ;;
    esac
}

# torture_kill_writing OFF LEN: SIGKILL the running server while fio writes 4 KiB blocks at
# random into [OFF, OFF+LEN) at queue depth 8 with no FLUSH, so the crash leaves writes in flight
# (raid5/raid6: live partial parity log entries to replay).
torture_kill_writing()
{
    (cd "$T" && fio --name=inflight --ioengine=nbd --uri="$RK_URI" --rw=randwrite --bs=4k \
        --iodepth=8 --offset="$1" --size="$2" --time_based --runtime=30 --randseed=77 \
        --output="$T/fio.inflight.out" >/dev/null 2>&1) &
    local fio=$!
    sleep 1.5 # fio connects and writes within a few hundred ms
    torture_kill
    wait "$fio" 2>/dev/null
    return 0
}

# torture_replay_degraded MEMBER...: a writable degraded start (rk_serve) of a dirty raid5/raid6,
# which replays its partial parity log. The replay proves the stripes of most writes in flight;
# one that modified a chunk of a missing member may stay unprovable (docs/FORMAT.md "Replay"):
# that start is refused as such, and then --force starts it. Leaves the server running.
torture_replay_degraded()
{
    local probe i
    timeout -k 30 60 "$RAIDKIT" serve --listen "unix:$T/probe.sock" --degraded "$@" \
        2>"$T/probe.log" &
    probe=$!
    for i in $(seq 100); do
        [ -S "$T/probe.sock" ] && break
        kill -0 "$probe" 2>/dev/null || break
        sleep 0.1
    done
    kill -TERM "$probe" 2>/dev/null
    wait "$probe"
    rm -f "$T/probe.sock"
    if grep -q "cannot make every stripe consistent" "$T/probe.log"; then
        rk_log "the replay left stripes unproven (a missing member's chunk was written): --force"
        rk_serve --degraded --force "$@"
    else
        rk_serve --degraded "$@"
    fi
}

# torture_kill: SIGKILL the running server and everything below RK_PID (timeout, raidkit).
torture_kill()
{
    local pids=("$RK_PID") i=0 kids
    while [ "$i" -lt "${#pids[@]}" ]; do
        kids=$(pgrep -P "${pids[$i]}" || true)
        # shellcheck disable=SC2206
        [ -z "$kids" ] || pids+=($kids)
        i=$((i + 1))
    done
    kill -KILL "${pids[@]}" 2>/dev/null
    wait "$RK_PID" 2>/dev/null
    for i in $(seq 50); do
        kill -0 "${pids[@]}" 2>/dev/null || break
        sleep 0.1
    done
    RK_PID=""
}

# torture_add LINE: add the k=v counts of a torture-verify line to the array TC with prefix P.
torture_add() # PREFIX LINE
{
    local kv
    for kv in ${2#*: }; do
        TC["$1${kv%%=*}"]=$((${TC["$1${kv%%=*}"]:-0} + ${kv#*=}))
    done
}

# torture_bad LINE: the number of lost/garbage/unreadable blocks a torture-verify line reports.
torture_bad()
{
    local kv n=0
    for kv in ${1#*: }; do
        case ${kv%%=*} in lost_flush | lost_fua | garbage | read_errors) n=$((n + ${kv#*=})) ;; esac
    done
    echo "$n"
}

# torture_remove LEVEL SLOT: the member of SLOT does not come back: SIGKILL the server (the
# array stays dirty) and serve again without that member (--degraded; raid5/6 also --force, as
# a dirty and degraded start of a level with a write hole needs it).
torture_remove()
{
    local level=$1 slot=$2 i rest=() force=()
    for i in "${!M[@]}"; do
        [ "$i" = "$slot" ] || rest+=("${M[$i]}")
    done
    case $level in raid5 | raid6) force=(--force) ;; esac
    torture_kill
    rk_serve --degraded "${force[@]}" "${TCACHE[@]}" "${rest[@]}" 2>/dev/null
}

# torture_cycle LEVEL SEED: one cut and its checks; counts go to TC, failures to TC[fail_*].
torture_cycle()
{
    local level=$1 seed=$2 geom n opts cut line out mm slot
    geom=$(torture_geom "$level")
    n=${geom%% *}
    opts=${geom#"$n"}
    rk_members "$n" 9M "t$level-"
    # shellcheck disable=SC2086
    rk_create --level "$level" $opts "${M[@]}" 2>/dev/null
    TCACHE=()
    if [ -n "${TORTURE_CACHE:-}" ]; then
        ca_create "$T/tcache" 8M 4K "$TORTURE_CACHE" "${M[@]}"
        TCACHE=(--cache "$T/tcache")
    fi
    RANDOM=$seed
    cut=$((((RANDOM << 15) | RANDOM) % ${TORTURE_CUTMAX:-1500} + 1))
    rm -f "$T/tstate.json"
    # on-cut=hang: after the cut no member request completes, so the server can acknowledge
    # nothing the machine could not have acknowledged; it is SIGKILLed once the cut is done.
    rk_serve --debug-fault "all:cut-after=$cut,keep=random,seed=$seed,on-cut=${TORTURE_ONCUT:-hang}" \
        "${TCACHE[@]}" "${M[@]}" 2>/dev/null
    timeout 120 "$RK_PY" "$TORTURE_PY" run "$RK_URI" "$T/tstate.json" --seed "$seed" \
        --max-ops "${TORTURE_OPS:-3000}" >"$T/trun.out" 2>&1 &
    local client=$! i
    for ((i = 0; i < 1200; i++)); do
        grep -q "power cut complete" "$RK_LOG" && break
        kill -0 "$client" 2>/dev/null || break
        sleep 0.05
    done
    TC[cycles]=$((${TC[cycles]:-0} + 1))
    grep -q "power cut complete" "$RK_LOG" && TC[cuts]=$((${TC[cuts]:-0} + 1))
    torture_kill
    wait "$client" || rk_fail "torture client (seed $seed): $(cat "$T/trun.out")"
    out=$(cat "$T/trun.out")
    CTL="$T/tctl"
    rk_serve --control "$CTL" "${TCACHE[@]}" "${M[@]}" 2>/dev/null
    line=$("$RK_PY" "$TORTURE_PY" verify "$RK_URI" "$T/tstate.json" --label "$level/seed$seed" 2>"$T/tverify.err")
    [ -n "$line" ] || rk_fail "torture verify (seed $seed) printed nothing: $(cat "$T/tverify.err")"
    torture_add "" "$line"
    [ "$(torture_bad "$line")" = 0 ] || TC[fail_verify]=$((${TC[fail_verify]:-0} + 1))
    [ "${TORTURE_QUIET:-0}" = 1 ] || echo "cut-after=$cut $out | $line $(head -n 1 "$T/tverify.err")" >&2
    out=$(timeout 120 "$RAIDKIT" scrub --control "$CTL" 2>&1) || rk_fail "scrub (seed $seed): $out"
    mm=$(echo "$out" | sed -n 's/^scrub finished: \([0-9]*\) mismatches.*/\1/p')
    TC[scrub_mismatches]=$((${TC[scrub_mismatches]:-0} + ${mm:-0}))
    [ "${mm:-0}" = 0 ] || TC[fail_scrub]=$((${TC[fail_scrub]:-0} + 1))
    local after=${TORTURE_AFTER:-fail}
    [ "${TORTURE_FAIL:-1}" = 1 ] || after=none
    if [ "$after" != none ] && [ "$level" != linear ] && [ "$level" != raid0 ]; then
        slot=$((seed % n))
        if [ "$after" = remove ]; then
            torture_remove "$level" "$slot"
        else
            "$RAIDKIT" fail --slot "$slot" --control "$CTL" >/dev/null 2>&1 || rk_fail "fail --slot $slot"
        fi
        line=$("$RK_PY" "$TORTURE_PY" verify "$RK_URI" "$T/tstate.json" --label "$level/seed$seed/${after%e}ed$slot" 2>>"$T/tverify.err")
        torture_add "failed_" "$line"
        [ "$(torture_bad "$line")" = 0 ] || TC[fail_verify_failed]=$((${TC[fail_verify_failed]:-0} + 1))
        [ "${TORTURE_QUIET:-0}" = 1 ] || echo "  after $after of slot $slot: $line" >&2
    fi
    if [ -n "${TORTURE_CACHE:-}" ]; then
        out=$("$RAIDKIT" cache detach --control "$CTL" 2>&1) || rk_fail "cache detach (seed $seed): $out"
        line=$("$RK_PY" "$TORTURE_PY" verify "$RK_URI" "$T/tstate.json" --label "$level/seed$seed/detached" 2>>"$T/tverify.err")
        torture_add "detached_" "$line"
        [ "$(torture_bad "$line")" = 0 ] || TC[fail_verify_detached]=$((${TC[fail_verify_detached]:-0} + 1))
        [ "${TORTURE_QUIET:-0}" = 1 ] || echo "  cache detached: $line" >&2
    fi
    rk_stop
    rm -f "${M[@]}"
}

# torture_level LEVEL CUTS: CUTS cycles from seed TORTURE_SEED; prints the summary line.
torture_level()
{
    local level=$1 cuts=$2 s first=${TORTURE_SEED:-1} k summary=""
    declare -gA TC=()
    for ((s = first; s < first + cuts; s++)); do
        torture_cycle "$level" "$s"
    done
    for k in cycles cuts old new lost_flush lost_fua garbage read_errors scrub_mismatches \
        fail_verify fail_scrub failed_lost_flush failed_lost_fua failed_garbage \
        failed_read_errors fail_verify_failed ${TORTURE_CACHE:+fail_verify_detached}; do
        summary+=" $k=${TC[$k]:-0}"
    done
    TORTURE_SUMMARY="torture $level:$summary"
    echo "$TORTURE_SUMMARY"
    [ "${TC[fail_verify]:-0}" = 0 ] && [ "${TC[fail_scrub]:-0}" = 0 ] &&
        [ "${TC[fail_verify_failed]:-0}" = 0 ] && [ "${TC[fail_verify_detached]:-0}" = 0 ]
}

# torture_teeth: the verifier must see damage. A linear array written by the client and stopped
# cleanly verifies clean; 4 KiB of random bytes put into array block 5 behind the engine's back
# (member 0, data area at 1 MiB) must then count as exactly one garbage block.
torture_teeth()
{
    local line
    rk_members 2 9M teeth
    rk_create --level linear "${M[@]}"
    rm -f "$T/tstate.json"
    rk_serve "${M[@]}"
    "$RK_PY" "$TORTURE_PY" run "$RK_URI" "$T/tstate.json" --seed 7 --max-ops 300 >/dev/null ||
        rk_fail "torture client without faults"
    rk_stop
    rk_serve "${M[@]}"
    line=$("$RK_PY" "$TORTURE_PY" verify "$RK_URI" "$T/tstate.json" --label teeth-clean) ||
        rk_fail "clean run does not verify: $line"
    rk_stop
    head -c 4096 /dev/urandom | dd of="${M[0]}" bs=4096 seek=$((MiB / 4096 + 5)) conv=notrunc \
        status=none || rk_fail "dd"
    rk_serve "${M[@]}"
    line=$("$RK_PY" "$TORTURE_PY" verify "$RK_URI" "$T/tstate.json" --label teeth-corrupt 2>/dev/null) &&
        rk_fail "a corrupted block verified clean: $line"
    echo "$line" | grep -q " garbage=1 " || rk_fail "corrupted block not counted as garbage: $line"
    rk_stop
    rk_log "teeth: a block corrupted behind the engine is caught ($line)"
    rm -f "${M[@]}"
}
