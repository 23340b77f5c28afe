#!/bin/bash
# remote_raid1_serve_reconnect: a raid1 of a local file and an NBD member served by another
# `raidkit serve` over TCP on 127.0.0.1 (docs/CLI.md "Member URIs"). fio --verify=crc32c runs
# while the remote server is SIGKILLed: the member fails (recorded in the local member's
# superblock), fio sees no error. The server restarts: the watcher reconnects (backoff) and
# re-adds the member through the write-intent bitmap by itself: the resync covers only what was
# written while it was away (resynced bytes well below the member size), and the remote member
# alone then returns every byte fio wrote.
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
. "$RAIDKIT_SOURCE_DIR/tests/integration/manage_lib.bash"
. "$RAIDKIT_SOURCE_DIR/tests/integration/remote_lib.bash"
rk_init
rk_need fio
rm_need_nbd
trap 'rc=$?; rm_cleanup; (exit $rc); rk_cleanup' EXIT

rm_raid1_setup
CTL="$T/ctl.sock"
rk_serve --control "$CTL" "$T/local" "$U"
mg_status
S1=$(rm_slot 1)
[ "$(mg_q "$S1['kind']")" = nbd ] || rk_fail "slot 1 kind: $(cat "$T/st.json")"
[ "$(mg_q "$S1['connection']")" = connected ] || rk_fail "slot 1 not connected: $(cat "$T/st.json")"
[ "$(mg_q "$S1['multi_conn'] and $S1['connections'] == 4")" = True ] ||
    rk_fail "raidkit serve offers multi-conn: want 4 connections: $(cat "$T/st.json")"
[ "$(mg_q "$S1['reconnect']['state']")" = none ] || rk_fail "reconnect state: $(cat "$T/st.json")"

FILL=(--rw=write --bs=1M --size=8M --verify=crc32c)
KILLJOB=(--rw=randwrite --bs=4k --offset=8M --size=4M --iodepth=16 --verify=crc32c)
rk_fio fill "${FILL[@]}" --do_verify=0
# The fill's bits are cleared once idle (5 s): from then on the bitmap marks only new writes.
rm_wait_q 30 "s['bitmap']['set'] == 0" "the bitmap did not clear the fill's bits"
rk_log "=== remote raidkit serve SIGKILLed during fio verify"
rm_fio_bg kill "${KILLJOB[@]}" --rate=1m --do_verify=1 --verify_fatal=1
sleep 1.5
rm_kill inner
rm_fio_wait kill
mg_status
[ "$(mg_slot_state 1)" = failed ] || rk_fail "slot 1 not failed: $(cat "$T/st.json")"
[ "$(mg_q "$S1['connection']")" = disconnected ] || rk_fail "slot 1 connection: $(cat "$T/st.json")"
rk_expect_slot_failed 1 "$T/local"
rm_wait_q 10 "$S1['reconnect']['state'] in ('waiting','connecting') and $S1['reconnect']['attempts'] >= 1" \
    "no reconnect attempt"
grep -q "reconnect: waiting\|reconnect: connecting" <<<"$("$RAIDKIT" status --control "$CTL")" ||
    rk_fail "text status lacks the reconnect line: $("$RAIDKIT" status --control "$CTL")"

rk_log "=== remote server back: automatic re-add through the bitmap"
rm_raidkit inner "$P" "$T/rfile"
rm_wait_back 1 30
grep -q "is back after" "$RK_LOG" || rk_fail "no reconnect message in the log"
R=$(rm_resynced 1)
rk_log "re-add resynced $R bytes"
[ "$R" -gt 0 ] && [ "$R" -le $((4 * 1024 * 1024)) ] ||
    rk_fail "re-add resynced $R bytes: want 0 < n <= 4 MiB (the range written since the bits cleared)"
[ "$(mg_q "s['job']['kind']")" = re-add ] || rk_fail "last job is not a re-add: $(cat "$T/st.json")"

mg_fail 0 # the remote member alone must now hold every byte
rk_fio vfill "${FILL[@]}" --verify_only=1 --verify_fatal=1
rk_fio vkill "${KILLJOB[@]}" --verify_only=1 --verify_fatal=1
rk_stop
rm_kill inner
echo PASS
