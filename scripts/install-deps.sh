#!/usr/bin/env bash
# Installs every build, test and benchmark dependency of raidkit with apt-get (Debian 12).
# Idempotent: does nothing when everything is present. Run as root (or with sudo available).
set -euo pipefail

pkgs=(build-essential cmake pkg-config clang-format
      liburing-dev libisal-dev libfuse3-dev fuse3 libcjson-dev libcmocka-dev libinih-dev libblkid-dev libsodium-dev
      fio libnbd-bin python3-libnbd nbdkit qemu-utils e2fsprogs util-linux btrfs-progs
      libgnutls28-dev gnutls-bin clang libfuzzer-14-dev
      scdoc nbdkit-plugin-dev
      fsmark postmark sqlite3 bonnie++ dbench libnbd-dev
      xfsprogs postgresql googletest
      librbd-dev)
# The one-node Ceph cluster of the RBD tests and bench/rbd-cache.sh (scripts/ceph-one-node.sh):
# ~150 MB of daemons, so optional: RAIDKIT_CEPH=0 skips them, and a failed install only warns
# (the RBD tests then skip with the reason).
ceph_pkgs=(ceph-mon ceph-mgr ceph-osd ceph-common)

missing=()
ceph_missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${RAIDKIT_CEPH:-1}" != 0 ]; then
    for p in "${ceph_pkgs[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
            ceph_missing+=("$p")
    done
fi
[ ${#missing[@]} -eq 0 ] && [ ${#ceph_missing[@]} -eq 0 ] && exit 0

[ ${#missing[@]} -eq 0 ] || echo "install-deps: installing ${missing[*]}" >&2
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
[ ${#missing[@]} -eq 0 ] ||
    $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
if [ ${#ceph_missing[@]} -gt 0 ]; then
    echo "install-deps: installing the optional ${ceph_missing[*]}" >&2
    $SUDO apt-get install -y -qq --no-install-recommends "${ceph_missing[@]}" >/dev/null ||
        echo "install-deps: warning: ${ceph_missing[*]} not installed; the RBD tests will skip" >&2
fi
