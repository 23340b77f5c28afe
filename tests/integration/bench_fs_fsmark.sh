#!/usr/bin/env bash
# raidkit bench filesystem job 'fsmark' (bench/suites/tiny-fs.ini) on a raidkit volume through
# raidkit fuse + a loop device: ext4 made, the tool run and parsed, unmounted, e2fsck -fn clean.
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/bench_fs_lib.sh"
bench_fs_setup fs_mark
bench_fs_job fsmark 'Files/s'
echo "PASS: bench_fs_fsmark ($(grep '^Single Disk' "$T/stdout"))"
