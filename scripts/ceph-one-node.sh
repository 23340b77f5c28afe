#!/usr/bin/env bash
# A throw-away one-node Ceph cluster for the RBD tests and benchmarks (docs/ARCHITECTURE.md
# "Member kinds"):
#   scripts/ceph-one-node.sh start DIR   start it; prints "CEPH_CONF=DIR/ceph.conf"
#   scripts/ceph-one-node.sh stop DIR    stop its daemons (DIR is left for the caller to remove)
#   scripts/ceph-one-node.sh check       exit 0 when the Ceph tools are installed, else print
#                                        why on stderr and exit 77
# One ceph-mon, one ceph-mgr and one ceph-osd on memstore (objects in the OSD's memory: nothing to format,
# nothing survives a stop; CEPH_OBJECTSTORE=bluestore: a sparse CEPH_OSD_BLOCK_SIZE file in DIR,
# default 4G, written with O_DIRECT and committed like a real OSD's disk), bound to 127.0.0.1 only (messenger v2 on a free port); the manager
# with no optional modules (only those Ceph always runs) and the PG autoscaler off, so it changes
# nothing the tests rely on; authentication off (auth none: no keyrings), every file (conf,
# monitor store, OSD data, logs, admin sockets, pid files) in DIR; nothing outside DIR is
# written. Pool `rk` (size 1, 8 PGs) with the rbd application. Environment: CEPH_OBJECTSTORE
# (memstore | bluestore), CEPH_OSD_MEMORY (bytes the memstore OSD offers, default 4G).
set -euo pipefail

die() { echo "ceph-one-node: $*" >&2; exit 1; }

check_tools() {
    local t
    for t in ceph-mon ceph-mgr ceph-osd ceph monmaptool rbd; do
        command -v "$t" >/dev/null 2>&1 || {
            echo "ceph-one-node: $t not installed (apt-get install ceph-mon ceph-mgr ceph-osd" \
                "ceph-common, or scripts/install-deps.sh)" >&2
            return 77
        }
    done
}

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# wait_for SECONDS CMD...: run CMD until it succeeds, at most SECONDS.
wait_for() {
    local end=$((SECONDS + $1))
    shift
    until "$@" >/dev/null 2>&1; do
        [ "$SECONDS" -lt "$end" ] || return 1
        sleep 0.2
    done
}

stop() {
    local dir=$1 f pid i
    for f in "$dir"/run/osd.0.pid "$dir"/run/mgr.x.pid "$dir"/run/mon.a.pid; do
        [ -f "$f" ] || continue
        pid=$(cat "$f" 2>/dev/null) || continue
        [ -n "$pid" ] || continue
        kill -TERM "$pid" 2>/dev/null || continue
        for i in $(seq 50); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -KILL "$pid" 2>/dev/null || true
        rm -f "$f"
    done
}

start() {
    local dir=$1 port fsid uuid conf
    check_tools || exit 77
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    [ ! -e "$dir/ceph.conf" ] || die "$dir already holds a cluster (stop it and remove $dir first)"
    mkdir -p "$dir/run" "$dir/log" "$dir/mon" "$dir/mgr/x" "$dir/osd/0"
    port=$(free_port)
    fsid=$(cat /proc/sys/kernel/random/uuid)
    conf="$dir/ceph.conf"
    local store_conf
    case ${CEPH_OBJECTSTORE:-memstore} in
    memstore) store_conf="osd objectstore = memstore
memstore device bytes = ${CEPH_OSD_MEMORY:-4294967296}" ;;
    bluestore) store_conf="osd objectstore = bluestore
bluestore block create = true
bluestore block size = ${CEPH_OSD_BLOCK_SIZE:-4294967296}
bluestore fsck on mkfs = false
bluestore fsck on mount = false
osd memory target = 1073741824" ;;
    *) die "CEPH_OBJECTSTORE must be memstore or bluestore, not ${CEPH_OBJECTSTORE}" ;;
    esac
    cat >"$conf" <<EOF
[global]
fsid = $fsid
mon host = v2:127.0.0.1:$port
mon initial members = a
public addr = 127.0.0.1
cluster addr = 127.0.0.1
public network = 127.0.0.0/8
ms bind msgr1 = false
log to stderr = false
err to stderr = false
ms bind ipv4 = true
ms bind ipv6 = false
auth cluster required = none
auth service required = none
auth client required = none
run dir = $dir/run
admin socket = $dir/run/\$name.\$pid.asok
pid file = $dir/run/\$name.pid
log file = $dir/log/\$name.log
[client]
log file = $dir/log/\$name.\$pid.log
[global]
mon cluster log file = $dir/log/cluster.log
crash dir = $dir/crash
exporter sock dir = $dir/run
keyring = $dir/keyring
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd crush chooseleaf type = 0
mon allow pool size one = true
mon allow pool delete = true
mon warn on pool no redundancy = false
mon data avail warn = 1
mon data avail crit = 0
osd pool default pg autoscale mode = off
mgr initial modules =
[mgr]
mgr data = $dir/mgr/\$id
[mon]
mon data = $dir/mon/\$name
[osd]
osd data = $dir/osd/\$id
$store_conf
osd max object name len = 256
osd max object namespace len = 64
osd op num shards = 1
osd op num threads per shard = 2
EOF
    : >"$dir/keyring"
    monmaptool --create --addv a "[v2:127.0.0.1:$port]" --fsid "$fsid" "$dir/monmap" >/dev/null ||
        die "monmaptool failed"
    ceph-mon -c "$conf" -i a --mkfs --monmap "$dir/monmap" >"$dir/log/mkfs-mon.out" 2>&1 ||
        die "ceph-mon --mkfs failed: $(tail -n 3 "$dir/log/mkfs-mon.out")"
    ceph-mon -c "$conf" -i a >"$dir/log/mon.out" 2>&1 || die "ceph-mon did not start"
    wait_for 30 ceph -c "$conf" --connect-timeout 5 mon stat ||
        die "the monitor does not answer (see $dir/log/mon.a.log)"
    ceph-mgr -c "$conf" -i x >"$dir/log/mgr.out" 2>&1 || die "ceph-mgr did not start"
    uuid=$(cat /proc/sys/kernel/random/uuid)
    [ "$(ceph -c "$conf" osd new "$uuid")" = 0 ] || die "ceph osd new did not give osd.0"
    ceph-osd -c "$conf" -i 0 --mkfs --osd-uuid "$uuid" >"$dir/log/mkfs-osd.out" 2>&1 ||
        die "ceph-osd --mkfs failed: $(tail -n 3 "$dir/log/mkfs-osd.out")"
    ceph-osd -c "$conf" -i 0 >"$dir/log/osd.out" 2>&1 || die "ceph-osd did not start"
    wait_for 60 bash -c "ceph -c '$conf' osd dump | grep -q '^osd.0 up'" ||
        die "osd.0 does not come up (see $dir/log/osd.0.log)"
    ceph -c "$conf" osd pool create rk 8 8 >/dev/null 2>&1 || die "cannot create pool rk"
    ceph -c "$conf" osd pool application enable rk rbd >/dev/null 2>&1 ||
        die "cannot enable rbd on pool rk"
    # The pool is usable once its PGs are active: a first object write proves it.
    wait_for 60 rbd -c "$conf" create --size 1M rk/.probe || die "pool rk does not become active"
    rbd -c "$conf" rm --no-progress rk/.probe >/dev/null 2>&1 || true
    # The manager has had the OSD's start to come up; nothing above needs it.
    wait_for 30 bash -c "ceph -c '$conf' mgr stat | grep -q '\"available\": true'" ||
        die "ceph-mgr does not become available (see $dir/log/mgr.x.log)"
    echo "CEPH_CONF=$conf"
}

case ${1:-} in
start) [ $# = 2 ] || die "usage: $0 start DIR"; start "$2" ;;
stop) [ $# = 2 ] || die "usage: $0 stop DIR"; stop "$2" ;;
check) check_tools || exit 77 ;;
*) die "usage: $0 start|stop DIR | check" ;;
esac
