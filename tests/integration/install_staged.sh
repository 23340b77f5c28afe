#!/usr/bin/env bash
# Staged install (DESTDIR) and `make install PREFIX=...`: every installed file is where the GNU
# layout puts it, libraidkit.so has a versioned SONAME, and examples/volume_rw.c builds against
# the staged raidkit.pc (pkg-config only, no source tree paths) and runs against the staged
# shared library: a raid5 volume over member files written and read through the public API.
set -euo pipefail
: "${RAIDKIT_BUILD_DIR:?}" "${RAIDKIT_SOURCE_DIR:?}"
for t in cc pkg-config readelf; do
    command -v $t >/dev/null || { echo "SKIP: $t not installed"; exit 77; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# 1. DESTDIR staged install under prefix /usr.
DESTDIR=$work/stage cmake --install "$RAIDKIT_BUILD_DIR" --prefix /usr >"$work/install.log"
root=$work/stage/usr
libdir=$(dirname "$(find "$root" -name 'libraidkit.so' | head -1)")
[ -n "$libdir" ] && [ -d "$libdir" ] || fail "no libraidkit.so staged"
for f in bin/raidkit include/raidkit/volume.h include/raidkit/device.h include/raidkit/version.h \
         share/bash-completion/completions/raidkit share/doc/raidkit/CLI.md; do
    [ -e "$root/$f" ] || fail "$f not installed"
done
[ -e "$libdir/libraidkit.a" ] || fail "libraidkit.a not installed"
[ -e "$libdir/pkgconfig/raidkit.pc" ] || fail "raidkit.pc not installed"
soname=$(readelf -d "$libdir/libraidkit.so" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')
[[ $soname =~ ^libraidkit\.so\.[0-9]+$ ]] || fail "SONAME '$soname' is not versioned"
[ -e "$libdir/$soname" ] || fail "$soname not installed"
grep -q '^prefix=/usr$' "$libdir/pkgconfig/raidkit.pc" || fail "raidkit.pc prefix is not /usr"
"$root/bin/raidkit" --version | grep -q '^raidkit ' || fail "staged raidkit --version"
bash -n "$root/share/bash-completion/completions/raidkit" || fail "completion has syntax errors"
if [ -d "$RAIDKIT_BUILD_DIR/man" ]; then
    [ -e "$root/share/man/man8/raidkit.8" ] || fail "raidkit.8 not installed"
fi
if [ -e "$RAIDKIT_BUILD_DIR/plugin/nbdkit-raidkit-plugin.so" ]; then
    [ -e "$libdir/nbdkit/plugins/nbdkit-raidkit-plugin.so" ] ||
        fail "nbdkit-raidkit-plugin.so not installed in $libdir/nbdkit/plugins"
fi
for u in raidkit@.service raidkit@.socket; do
    [ ! -e "$RAIDKIT_SOURCE_DIR/systemd/$u" ] && [ ! -e "$RAIDKIT_SOURCE_DIR/systemd/$u.in" ] ||
        [ -e "$root/lib/systemd/system/$u" ] || fail "$u not installed"
done
# The unit runs the binary of the prefix installed to (/usr here), not of the configured one.
if [ -e "$root/lib/systemd/system/raidkit@.service" ]; then
    grep -q '^ExecStart=/usr/bin/raidkit serve ' "$root/lib/systemd/system/raidkit@.service" ||
        fail "raidkit@.service ExecStart is not /usr/bin/raidkit: $(grep ExecStart "$root/lib/systemd/system/raidkit@.service")"
fi

# 2. The example program built against the staged raidkit.pc only (with the sanitizers when the
# library was built with them: make check-asan).
export PKG_CONFIG_PATH=$libdir/pkgconfig PKG_CONFIG_SYSROOT_DIR=$work/stage
flags=$(pkg-config --cflags --libs raidkit) || fail "pkg-config raidkit"
san=""
readelf -d "$libdir/libraidkit.so" | grep -q 'NEEDED.*libasan' && san="-fsanitize=address,undefined"
cc $san -std=c11 -Wall -Werror -o "$work/volume_rw" "$RAIDKIT_SOURCE_DIR/examples/volume_rw.c" $flags ||
    fail "example does not build against the staged raidkit.pc"
readelf -d "$work/volume_rw" | grep -q "NEEDED.*$soname" || fail "example not linked to $soname"
mkdir "$work/members"
LD_LIBRARY_PATH=$libdir "$work/volume_rw" "$work/members" | tee "$work/example.out"
grep -q 'degraded read (slot 1 missing): ok' "$work/example.out" || fail "example output"
"$root/bin/raidkit" info "$work/members/m0.img" "$work/members/m1.img" "$work/members/m2.img" |
    grep -q raid5 || fail "raidkit info on the example's members"
# The static archive links too (Libs.private and Requires.private through --static).
static_libs=$(pkg-config --libs --static raidkit | sed 's/-lraidkit//')
cc $san -std=c11 -o "$work/volume_rw_static" "$RAIDKIT_SOURCE_DIR/examples/volume_rw.c" \
    $(pkg-config --cflags raidkit) "$libdir/libraidkit.a" $static_libs ||
    fail "example does not link against the staged libraidkit.a"
readelf -d "$work/volume_rw_static" | grep -q "NEEDED.*libraidkit" && fail "static link used the .so"
mkdir "$work/m2"
"$work/volume_rw_static" "$work/m2" | grep -q 'degraded read (slot 1 missing): ok' ||
    fail "static example output"

# 3. make install PREFIX=DIR (the Makefile's install step, without rebuilding).
make -s -C "$RAIDKIT_SOURCE_DIR" install-only BUILD="$RAIDKIT_BUILD_DIR" PREFIX="$work/prefix" \
    >"$work/make.log"
[ -x "$work/prefix/bin/raidkit" ] || fail "make install PREFIX: no bin/raidkit"
pc=$(find "$work/prefix" -name raidkit.pc | head -1)
grep -q "^prefix=$work/prefix\$" "$pc" || fail "make install PREFIX: raidkit.pc prefix"
unit=$work/prefix/lib/systemd/system/raidkit@.service
[ ! -e "$unit" ] || grep -q "^ExecStart=$work/prefix/bin/raidkit serve " "$unit" ||
    fail "make install PREFIX: the unit's ExecStart is not PREFIX/bin/raidkit: $(grep ExecStart "$unit")"
echo "PASS: staged install, SONAME $soname, example via pkg-config"
