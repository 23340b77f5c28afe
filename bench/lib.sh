# Shell helpers shared by the benchmark scripts in bench/ (sourced, never run alone):
# progress lines, waiting for a server's socket, and waiting for a quiet machine.

# log MESSAGE...: a timestamped progress line on stderr.
log() { printf '[bench %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# wait_socket PID SOCK LOG: until the server listens on SOCK (0), or dies / 15 s pass (1, with
# the tail of its LOG).
wait_socket() {
    local _
    for _ in $(seq 1 150); do
        [ -S "$2" ] && return 0
        kill -0 "$1" 2>/dev/null || { log "server exited early:"; tail -n 20 "$3" >&2; return 1; }
        sleep 0.1
    done
    log "server did not listen within 15 s"
    return 1
}

# wait_quiet: up to $WAIT_QUIET s (polling every 20 s) for the 1-minute load average to drop
# below $QUIET_LOAD; measures anyway afterwards (the scripts record the load).
wait_quiet() {
    local waited=0 l
    while [ "$waited" -lt "$WAIT_QUIET" ]; do
        l=$(cut -d' ' -f1 /proc/loadavg)
        awk -v l="$l" -v q="$QUIET_LOAD" 'BEGIN { exit !(l < q) }' && return 0
        log "load average $l >= $QUIET_LOAD, waiting (${waited}s of ${WAIT_QUIET}s)"
        sleep 20
        waited=$((waited + 20))
    done
    [ "$WAIT_QUIET" -gt 0 ] && log "machine never got quiet; measuring anyway (load recorded)"
    return 0
}

# bench_binary ARGS...: the scripts' one argument, the raidkit binary, as an absolute path in $RK;
# exit 2 with the usage line when it is missing or not executable.
bench_binary() {
    if [ $# -ne 1 ] || [ ! -x "$1" ]; then
        echo "usage: $0 RAIDKIT_BINARY" >&2
        exit 2
    fi
    RK=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
}

# bench_need TOOL...: exit 1 with a message when a tool is missing.
bench_need() {
    local t
    for t in "$@"; do
        if ! command -v "$t" >/dev/null 2>&1; then
            echo "bench: $t is missing (scripts/install-deps.sh)" >&2
            exit 1
        fi
    done
}

# bench_workdir NAME: a private work dir $WORK under $SHM_DIR, removed at exit together with
# the one raidkit server $RK_PID a script may have running (SIGTERM, then wait).
bench_workdir() {
    WORK=$(mktemp -d "$SHM_DIR/$1.XXXXXX") || exit 1
    RK_PID=""
    trap bench_cleanup EXIT
    trap 'exit 130' INT TERM
}

# shellcheck disable=SC2317  # runs from the EXIT trap
bench_cleanup() {
    if [ -n "$RK_PID" ]; then
        kill -TERM "$RK_PID" 2>/dev/null
        wait "$RK_PID" 2>/dev/null
    fi
    rm -rf "$WORK"
}
