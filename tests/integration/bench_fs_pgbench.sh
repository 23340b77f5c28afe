#!/usr/bin/env bash
# raidkit bench filesystem job 'pgbench' (bench/suites/tiny-fs.ini): a private PostgreSQL cluster
# made, started (as the postgres user, unix socket only) and stopped by the harness in ext4 on a
# raidkit volume through raidkit fuse + a loop device; pgbench's tps parsed; e2fsck -fn clean.
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/bench_fs_lib.sh"
bench_fs_setup runuser
compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || rk_skip "PostgreSQL not installed (Debian package postgresql)"
id postgres >/dev/null 2>&1 || rk_skip "no postgres user (Debian package postgresql)"
bench_fs_job pgbench 'TPS'
! pgrep -f "postgres -D $T/work" >/dev/null || rk_fail "a postgres server was left running"
echo "PASS: bench_fs_pgbench ($(grep '^Single Disk' "$T/stdout"))"
