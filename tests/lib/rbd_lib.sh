# Helpers of the RBD integration tests (tests/integration/rbd_*.sh), sourced after
# tests/lib/common.sh and rk_init:
#   rbd_cluster         skip (77, with the reason) without the Ceph tools or a raidkit built
#                       with librbd; else start one one-node cluster (scripts/ceph-one-node.sh)
#                       in $T/ceph for the whole script, stopped by the exit trap; exports
#                       CEPH_CONF (so `rbd:POOL/IMAGE` members need no @CONF)
#   rbd_image NAME SIZE a fresh image rk/NAME (layering only: no exclusive lock, so a server
#                       SIGKILLed by a test does not hold up the next open)
# shellcheck disable=SC2034

RBD_CEPH_SH="$RAIDKIT_SOURCE_DIR/scripts/ceph-one-node.sh"
RBD_DIR=""

rbd_cleanup()
{
    local rc=$?
    if [ -n "$RK_PID" ] && kill -0 "$RK_PID" 2>/dev/null; then
        kill -KILL "$RK_PID" 2>/dev/null
        wait "$RK_PID" 2>/dev/null
        RK_PID=""
    fi
    [ -z "$RBD_DIR" ] || bash "$RBD_CEPH_SH" stop "$RBD_DIR" >/dev/null 2>&1
    (exit "$rc")
    rk_cleanup
}

rbd_cluster()
{
    local why out
    why=$(bash "$RBD_CEPH_SH" check 2>&1) || rk_skip "${why#ceph-one-node: }"
    out=$("$RAIDKIT" info "rbd:rk/probe@/nonexistent" 2>&1)
    case $out in *"built without librbd"*) rk_skip "raidkit was built without librbd (librbd-dev)" ;; esac
    RBD_DIR="$T/ceph"
    trap rbd_cleanup EXIT
    local t0=$SECONDS
    out=$(bash "$RBD_CEPH_SH" start "$RBD_DIR" 2>&1) || rk_fail "ceph-one-node start: $out"
    export CEPH_CONF="$RBD_DIR/ceph.conf"
    rk_log "one-node Ceph cluster up in $((SECONDS - t0)) s ($CEPH_CONF)"
}

rbd_image()
{
    rbd create --size "$2" --image-feature layering "rk/$1" 2>"$T/rbd.err" ||
        rk_fail "rbd create rk/$1: $(cat "$T/rbd.err")"
}
