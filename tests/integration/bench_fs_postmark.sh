#!/usr/bin/env bash
# raidkit bench filesystem job 'postmark' (bench/suites/tiny-fs.ini) on a raidkit volume through
# raidkit fuse + a loop device: ext4 made, the tool run and parsed, unmounted, e2fsck -fn clean.
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/bench_fs_lib.sh"
bench_fs_setup postmark
bench_fs_job postmark 'TPS'
echo "PASS: bench_fs_postmark ($(grep '^Single Disk' "$T/stdout"))"
