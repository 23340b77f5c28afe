#!/bin/bash
# remote_netem: a raid1 of a local file and an NBD member whose server sits behind a link
# with 50 ms delay and 1% loss (tc netem), inside network namespaces this test creates: the
# server in one, raidkit in the other, joined by a veth pair with private 10.x addresses that
# exist only inside them. fio --verify=crc32c passes, the member stays connected, its mean
# latency shows the delay. The host's interfaces are never touched. Skips (77) when network
# namespaces, veth or the netem qdisc are unavailable (e.g. a kernel without sch_netem).
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
. "$RAIDKIT_SOURCE_DIR/tests/integration/manage_lib.bash"
rk_init
rk_need fio nbdkit ip tc
"$RAIDKIT" info "nbd+unix:///?socket=$T/none" 2>&1 | grep -q "built without libnbd" &&
    rk_skip "raidkit was built without libnbd (libnbd-dev)"
NS_S="rk-srv-$$"
NS_C="rk-cli-$$"
NKP=""
cleanup_ns()
{
    [ -n "$NKP" ] && kill -KILL "$NKP" 2>/dev/null
    ip netns del "$NS_S" 2>/dev/null
    ip netns del "$NS_C" 2>/dev/null
}
trap 'rc=$?; [ -n "$RK_PID" ] && kill -KILL "$RK_PID" 2>/dev/null; cleanup_ns; (exit $rc); rk_cleanup' EXIT
ip netns add "$NS_S" 2>"$T/ns.err" || rk_skip "cannot create a network namespace: $(head -n 1 "$T/ns.err")"
ip netns add "$NS_C" 2>"$T/ns.err" || rk_skip "cannot create a network namespace: $(head -n 1 "$T/ns.err")"
# The veth pair is created inside the server namespace, one end moved to the client's: no
# device ever exists in the host's namespace.
ip -n "$NS_S" link add rkv0 type veth peer name rkv1 2>"$T/ns.err" ||
    rk_skip "cannot create a veth pair: $(head -n 1 "$T/ns.err")"
ip -n "$NS_S" link set rkv1 netns "$NS_C" || rk_fail "cannot move the veth end"
A=10.$((RANDOM % 200 + 20)).$((RANDOM % 250)).
ip -n "$NS_S" addr add "${A}1/30" dev rkv0 && ip -n "$NS_C" addr add "${A}2/30" dev rkv1 || rk_fail "addresses"
for ns in "$NS_S" "$NS_C"; do
    ip -n "$ns" link set lo up && ip -n "$ns" link set "rkv$([ "$ns" = "$NS_S" ] && echo 0 || echo 1)" up ||
        rk_fail "link up in $ns"
done
if [ "${RK_NETEM_OPTIONAL:-0}" != 1 ]; then # (development without sch_netem: RK_NETEM_OPTIONAL=1)
    ip netns exec "$NS_S" tc qdisc add dev rkv0 root netem delay 50ms loss 1% 2>"$T/tc.err" ||
        rk_skip "tc netem unavailable: $(head -n 1 "$T/tc.err") (kernel without sch_netem?)"
fi

truncate -s 64M "$T/local" "$T/rfile"
ip netns exec "$NS_S" nbdkit -f --exit-with-parent -i "${A}1" -p 10809 file "$T/rfile" 2>"$T/nk.log" &
NKP=$!
for i in $(seq 100); do
    ip netns exec "$NS_C" bash -c "exec 3<>/dev/tcp/${A}1/10809" 2>/dev/null && break
    sleep 0.1
done
U="nbd://${A}1:10809/"
ip netns exec "$NS_C" "$RAIDKIT" create --level raid1 "$T/local" "$U" >"$T/create.out" 2>&1 ||
    rk_fail "create over the netem link: $(cat "$T/create.out")"
CTL="$T/ctl.sock"
RK_SOCK="$T/sock.n"
RK_URI="nbd+unix:///?socket=$RK_SOCK"
RK_LOG="$T/serve.n.log"
ip netns exec "$NS_C" "$RAIDKIT" serve --listen "unix:$RK_SOCK" --control "$CTL" "$T/local" "$U" 2>"$RK_LOG" &
RK_PID=$!
for i in $(seq 100); do [ -S "$RK_SOCK" ] && break; sleep 0.1; done
[ -S "$RK_SOCK" ] || rk_fail "serve did not listen: $(cat "$RK_LOG")"
rk_fio netem --rw=randrw --bs=16k --size=4M --iodepth=32 --verify=crc32c --do_verify=1 --verify_fatal=1
mg_status
[ "$(mg_slot_state 1)" = active ] || rk_fail "slot 1 not active over the lossy link: $(cat "$T/st.json")"
[ "$(mg_q "[x for x in s['slots'] if x['slot']==1][0]['connection']")" = connected ] || rk_fail "slot 1 not connected"
LAT=$(mg_q "int([x for x in s['slots'] if x['slot']==1][0]['latency_us'])")
rk_log "nbd member mean latency over the link: $LAT us"
[ "${RK_NETEM_OPTIONAL:-0}" = 1 ] || [ "$LAT" -ge 45000 ] || rk_fail "mean latency $LAT us: the 50 ms delay is not seen"
rk_stop
cleanup_ns
echo PASS
