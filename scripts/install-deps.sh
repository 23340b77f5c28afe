#!/usr/bin/env bash
# Installs every build, test and benchmark dependency of raidkit with apt-get (Debian 12).
# Idempotent: does nothing when everything is present. Run as root (or with sudo available).
set -euo pipefail

pkgs=(build-essential cmake pkg-config clang-format
      liburing-dev libisal-dev libfuse3-dev fuse3 libcjson-dev libcmocka-dev libinih-dev
      fio libnbd-bin python3-libnbd nbdkit qemu-utils e2fsprogs util-linux btrfs-progs
      libgnutls28-dev gnutls-bin clang libfuzzer-14-dev
      scdoc nbdkit-plugin-dev
      fsmark postmark sqlite3 bonnie++ dbench libnbd-dev
      xfsprogs postgresql googletest)

missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "install-deps: installing ${missing[*]}" >&2
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
