# Helpers of the remote_*.sh tests (sourced after common.sh and manage_lib.bash): NBD servers
# on TCP 127.0.0.1 only (another `raidkit serve`, nbdkit), killed and restarted by PID, and
# waits on the outer volume's status. Every server started here is killed by rm_cleanup.
# shellcheck disable=SC2034

declare -A RM_PID=() # server name -> PID

# rm_port: print a TCP port on 127.0.0.1 that is free now.
rm_port()
{
    "$RK_PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# rm_wait_listen PORT NAME: wait (10 s) until something accepts on 127.0.0.1:PORT.
rm_wait_listen()
{
    local i
    for i in $(seq 100); do
        (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
        kill -0 "${RM_PID[$2]}" 2>/dev/null || rk_fail "server $2 exited: $(tail -n 5 "$T/$2.log")"
        sleep 0.1
    done
    rk_fail "server $2 did not listen on 127.0.0.1:$1: $(tail -n 5 "$T/$2.log")"
}

# rm_nbdkit NAME PORT PLUGIN-ARGS...: nbdkit on 127.0.0.1:PORT (foreground, in the background).
rm_nbdkit()
{
    local name=$1 port=$2
    shift 2
    nbdkit -f --exit-with-parent -i 127.0.0.1 -p "$port" "$@" >/dev/null 2>>"$T/$name.log" &
    RM_PID[$name]=$!
    rm_wait_listen "$port" "$name"
}

# rm_raidkit NAME PORT MEMBER...: `raidkit serve` of MEMBER... on tcp 127.0.0.1:PORT.
rm_raidkit()
{
    local name=$1 port=$2
    shift 2
    # No timeout(1) wrapper: RM_PID must be the server itself (rm_kill SIGKILLs it);
    # --exit-with-parent ends it with the test shell.
    "$RAIDKIT" serve --exit-with-parent --listen "tcp:127.0.0.1:$port" "$@" >/dev/null 2>>"$T/$name.log" &
    RM_PID[$name]=$!
    rm_wait_listen "$port" "$name"
}

# rm_kill NAME: SIGKILL the server NAME (the server dies; no clean disconnect).
rm_kill()
{
    local p=${RM_PID[$1]:-}
    [ -n "$p" ] || return 0
    kill -KILL "$p" 2>/dev/null
    wait "$p" 2>/dev/null
    RM_PID[$1]=""
}

rm_cleanup()
{
    local n
    for n in "${!RM_PID[@]}"; do rm_kill "$n"; done
}

# rm_wait_q SECONDS PYEXPR WHAT: poll the outer volume's status (mg_status) until PYEXPR over
# `s` is True; fail naming WHAT after SECONDS.
rm_wait_q()
{
    local i
    for ((i = 0; i < $1 * 5; i++)); do
        mg_status
        [ "$(mg_q "$2")" = True ] && return 0
        sleep 0.2
    done
    rk_fail "$3 within $1 s: $(cat "$T/st.json")"
}

# rm_slot SLOT: python expression of slot SLOT's object in status.
rm_slot() { echo "[x for x in s['slots'] if x['slot']==$1][0]"; }

# rm_wait_back SLOT SECONDS: wait until SLOT was reconnected and re-added automatically.
rm_wait_back()
{
    rm_wait_q "$2" "$(rm_slot "$1")['state']=='active' and $(rm_slot "$1").get('reconnect',{}).get('state')=='reconnected'" \
        "slot $1 not reconnected and active"
}

# rm_fio_bg NAME ARGS...: fio through the outer server's socket in the background (RM_FIO =
# its PID); rm_fio_wait NAME: wait for it, require exit 0 and no error.
rm_fio_bg()
{
    local name=$1
    shift
    (cd "$T" && fio --name="$name" --ioengine=nbd --uri="$RK_URI" --randseed=4242 \
        --verify_state_save=0 --output="$T/fio.$name.out" "$@" >/dev/null 2>"$T/fio.$name.err") &
    RM_FIO=$!
}
rm_fio_wait()
{
    wait "$RM_FIO" || rk_fail "fio $1 failed: $(tail -n 20 "$T/fio.$1.err" "$T/fio.$1.out")"
    grep -q "err= 0" "$T/fio.$1.out" || rk_fail "fio $1 errors: $(cat "$T/fio.$1.out")"
    ! grep -qi "verify: bad\|crc32c: verify failed\|bad magic" "$T/fio.$1.out" "$T/fio.$1.err" ||
        rk_fail "fio $1 verify errors: $(cat "$T/fio.$1.out")"
}

# rm_resynced SLOT: bytes the slot's last automatic re-add resynced (status reconnect object).
rm_resynced() { mg_q "$(rm_slot "$1")['reconnect'].get('resynced_bytes', -1)"; }

# rm_need_nbd: skip (77) when raidkit was built without libnbd.
rm_need_nbd()
{
    "$RAIDKIT" info "nbd+unix:///?socket=$T/none" 2>&1 | grep -q "built without libnbd" &&
        rk_skip "raidkit was built without libnbd (libnbd-dev)"
    return 0
}

# rm_raid1_setup: the raid1 of the reconnect tests: a 64 MiB local file $T/local and an NBD
# member U=nbd://127.0.0.1:P/ (server `inner`: another `raidkit serve` of a linear array over the
# 64 MiB file $T/rfile), created (not served); a fast reconnect backoff (300 ms to 1 s) exported.
rm_raid1_setup()
{
    export RAIDKIT_NBD_RECONNECT_MS=300 RAIDKIT_NBD_RECONNECT_MAX_MS=1000
    truncate -s 64M "$T/local" "$T/rfile"
    rk_create --level linear "$T/rfile"
    P=$(rm_port)
    rm_raidkit inner "$P" "$T/rfile"
    U="nbd://127.0.0.1:$P/"
    rk_create --level raid1 "$T/local" "$U"
}
