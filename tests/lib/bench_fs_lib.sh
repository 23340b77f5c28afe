# Shared part of the tests/integration/bench_fs_*.sh tests (sourced): one filesystem job of
# bench/suites/tiny-fs.ini run by `raidkit bench` on the `tiny` scale. Exit 77 without root,
# /dev/fuse, the FUSE build or the job's tool.
#
#   bench_fs_setup TOOL...        # skip unless root and the tools are there; $T, $SUITE
#   bench_fs_suite JOB [KEY=VALUE...]  # $SUITE: tiny-fs.ini's header + section JOB (+ keys)
#   bench_fs_run CONFIGS [ENV...]  # run it into $T/out; $BENCH_RC, $T/stdout, $T/err
#   bench_fs_check_clean           # nothing left: work dir empty, no loop device on it, no mount
. "${RAIDKIT_SOURCE_DIR:-$(dirname "${BASH_SOURCE[0]}")/../..}/tests/lib/common.sh"
: "${RAIDKIT:?set RAIDKIT to the raidkit binary}"
: "${RAIDKIT_SOURCE_DIR:?set RAIDKIT_SOURCE_DIR}"
export PATH=$PATH:/usr/sbin:/sbin

bench_fs_setup()
{
    [ "$(id -u)" = 0 ] || rk_skip "filesystem jobs need root (loop devices, mount)"
    [ -c /dev/fuse ] || rk_skip "no /dev/fuse"
    grep -qi "built without" <<<"$("$RAIDKIT" fuse --help 2>&1)" && rk_skip "raidkit built without libfuse3"
    rk_need fio losetup mkfs.ext4 e2fsck fusermount3 "$@"
    rk_init_tmp rk-bench-fs
    RK_LOG=$T/err
    mkdir -p "$T/work"
    SUITE=$T/suite.ini
}

bench_fs_suite()
{
    local job=$1 kv
    shift
    awk -v job="[$job]" '
        /^\[/ { insec = ($0 == job); hdr_done = 1; if (insec) print; next }
        !hdr_done || insec { print }' "$RAIDKIT_SOURCE_DIR/bench/suites/tiny-fs.ini" >"$SUITE"
    for kv in "$@"; do
        echo "${kv%%=*} = ${kv#*=}" >>"$SUITE"
    done
    grep -q "^\[$job\]" "$SUITE" || rk_fail "no job $job in tiny-fs.ini"
}

bench_fs_run()
{
    local configs=$1
    shift
    env "$@" "$RAIDKIT" bench --suite "$SUITE" --configs "$configs" --members 2 --trials 1 \
        --dir "$T/work" --out "$T/out" >"$T/stdout" 2>"$T/err"
    BENCH_RC=$?
}

bench_fs_check_clean()
{
    [ -z "$(ls -A "$T/work")" ] || rk_fail "work files left: $(ls -A "$T/work")"
    ! losetup -a | grep -q "$T/work" || rk_fail "loop devices left: $(losetup -a | grep "$T/work")"
    ! grep -q "$T/work" /proc/mounts || rk_fail "mounts left: $(grep "$T/work" /proc/mounts)"
    local m
    for m in $(sed -n 's/.*mounted on \(\/tmp\/raidkit-bench-fs\.[A-Za-z0-9]*\)$/\1/p' "$T/err"); do
        [ ! -e "$m" ] || rk_fail "mount point $m left"
    done
}

# bench_fs_job JOB UNIT_RE [CONFIGS]: run JOB, expect exit 0, one measured row per config with the
# unit line, the JSON's kind/tool, no failure, nothing left.
bench_fs_job()
{
    local job=$1 unit=$2 configs=${3:-single}
    bench_fs_suite "$job"
    bench_fs_run "$configs"
    [ "$BENCH_RC" -eq 0 ] || rk_fail "bench exited $BENCH_RC: $(tail -n 5 "$T/err")"
    grep -Eq "^$unit > (Higher|Lower) Is Better$" "$T/stdout" || rk_fail "no '$unit' line: $(cat "$T/stdout")"
    grep -Eq '^Single Disk \.* [0-9]+\.[0-9]{2} \|=+' "$T/stdout" || rk_fail "no Single Disk row: $(cat "$T/stdout")"
    ! grep -q '^Failed:' "$T/stdout" || rk_fail "a failure: $(sed -n '/^Failed:/,$p' "$T/stdout")"
    grep -Eq '"kind":[[:space:]]*"fs"' "$T/out/report.json" || rk_fail "JSON without kind fs"
    grep -Eq "\"tool\":[[:space:]]*\"$(awk -F' = ' '/^tool/ {print $2}' "$SUITE")\"" "$T/out/report.json" ||
        rk_fail "JSON without the tool"
    grep -q 'trial 1: .* on ext4' "$T/err" || rk_fail "no trial progress line"
    bench_fs_check_clean
}
