#!/usr/bin/env bash
# raidkit bench filesystem job 'compile' (bench/suites/tiny-fs.ini) on a raidkit volume through
# raidkit fuse + a loop device: ext4 made, the tool run and parsed, unmounted, e2fsck -fn clean.
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/bench_fs_lib.sh"
bench_fs_setup make c++
[ -d /usr/src/googletest ] || rk_skip "/usr/src/googletest missing (Debian package googletest)"
bench_fs_job compile 'Seconds'
echo "PASS: bench_fs_compile ($(grep '^Single Disk' "$T/stdout"))"
