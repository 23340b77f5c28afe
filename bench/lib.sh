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
