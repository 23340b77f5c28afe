#!/bin/bash
# remote_fuse_reconnect: `raidkit fuse` watches its remote members as `serve` does. A raid1 of a
# local file and an NBD member (another `raidkit serve` on TCP 127.0.0.1) exported through FUSE
# as one file; fio --verify=crc32c writes through the file while the remote server is SIGKILLed:
# the member fails, fio sees no error. The server restarts: the watcher of `raidkit fuse`
# reconnects and re-adds the member through the write-intent bitmap (only what was written while
# it was away), and the remote member alone then returns every byte. SIGTERM: exit 0, clean.
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
. "$RAIDKIT_SOURCE_DIR/tests/integration/manage_lib.bash"
. "$RAIDKIT_SOURCE_DIR/tests/integration/remote_lib.bash"
rk_init
[ -c /dev/fuse ] || rk_skip "/dev/fuse missing (no FUSE in this kernel/container)"
rk_need fio fusermount3
"$RAIDKIT" fuse --help >/dev/null 2>&1 || rk_skip "raidkit was built without libfuse3"
rm_need_nbd
FZ_PID=""
trap 'rc=$?; [ -n "$FZ_PID" ] && kill "$FZ_PID" 2>/dev/null; mountpoint -q "$T/vol" && fusermount3 -u "$T/vol"; rm_cleanup; (exit $rc); rk_cleanup' EXIT

rm_raid1_setup
SIZE=$(rk_array_size "$T/local" "$U")
CTL="$T/ctl.sock"
touch "$T/vol"
RK_LOG="$T/fuse.log"
timeout -k 30 120 "$RAIDKIT" fuse "$T/vol" --control "$CTL" "$T/local" "$U" 2>"$RK_LOG" &
FZ_PID=$!
for i in $(seq 100); do
    [ "$(stat -c %s "$T/vol")" = "$SIZE" ] && [ -S "$CTL" ] && break
    kill -0 "$FZ_PID" 2>/dev/null || rk_fail "raidkit fuse exited before mounting: $(tail -n 5 "$RK_LOG")"
    sleep 0.1
done
[ "$(stat -c %s "$T/vol")" = "$SIZE" ] || rk_fail "$T/vol does not show the array size $SIZE"
mg_status
S1=$(rm_slot 1)
[ "$(mg_q "$S1['reconnect']['state']")" = none ] ||
    rk_fail "fuse does not watch the remote member (no reconnect state): $(cat "$T/st.json")"

# ffio NAME ARGS...: fio on the exported file (O_DIRECT through FUSE); exit 0 and no error.
ffio()
{
    local name=$1
    shift
    (cd "$T" && fio --name="$name" --filename="$T/vol" --direct=1 --ioengine=psync --randseed=4242 \
        --verify_state_save=0 --output="$T/fio.$name.out" "$@" >/dev/null 2>"$T/fio.$name.err") ||
        rk_fail "fio $name failed: $(tail -n 20 "$T/fio.$name.err" "$T/fio.$name.out")"
    grep -q "err= 0" "$T/fio.$name.out" || rk_fail "fio $name errors: $(cat "$T/fio.$name.out")"
}
FILL=(--rw=write --bs=1M --size=8M --verify=crc32c)
KILLJOB=(--rw=randwrite --bs=4k --offset=8M --size=4M --verify=crc32c)
ffio fill "${FILL[@]}" --do_verify=0
rm_wait_q 30 "s['bitmap']['set'] == 0" "the bitmap did not clear the fill's bits"
rk_log "=== remote raidkit serve SIGKILLed during fio verify through the FUSE file"
ffio kill "${KILLJOB[@]}" --rate=1m --do_verify=1 --verify_fatal=1 &
FIO=$!
sleep 1.5
rm_kill inner
wait "$FIO" || rk_fail "fio kill failed through the FUSE file"
mg_status
[ "$(mg_slot_state 1)" = failed ] || rk_fail "slot 1 not failed: $(cat "$T/st.json")"
rm_wait_q 10 "$S1['reconnect']['state'] in ('waiting','connecting') and $S1['reconnect']['attempts'] >= 1" \
    "no reconnect attempt under raidkit fuse"

rk_log "=== remote server back: automatic re-add under raidkit fuse"
rm_raidkit inner "$P" "$T/rfile"
rm_wait_back 1 30
grep -q "is back after .*resyncing only the regions the write-intent bitmap marks" "$RK_LOG" ||
    rk_fail "no bitmap re-add message in the log: $(tail -n 5 "$RK_LOG")"
R=$(rm_resynced 1)
rk_log "re-add resynced $R bytes"
[ "$R" -gt 0 ] && [ "$R" -le $((4 * 1024 * 1024)) ] ||
    rk_fail "re-add resynced $R bytes: want 0 < n <= 4 MiB (the range written since the bits cleared)"
mg_fail 0 # the remote member alone must now hold every byte
ffio vfill "${FILL[@]}" --verify_only=1 --verify_fatal=1
ffio vkill "${KILLJOB[@]}" --verify_only=1 --verify_fatal=1
kill -TERM "$FZ_PID"
wait "$FZ_PID" || rk_fail "raidkit fuse exited with status $? after SIGTERM (want 0)"
FZ_PID=""
rk_no_sanitizer "$RK_LOG" "raidkit fuse"
grep -q "stopped cleanly" "$RK_LOG" || rk_fail "raidkit fuse did not stop cleanly: $(tail -n 5 "$RK_LOG")"
rm_kill inner
echo PASS
