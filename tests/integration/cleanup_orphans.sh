#!/bin/bash
# cleanup_orphans: rk_cleanup (tests/lib/common.sh) kills what a test left running on its scratch
# dir: an inner test script starts a background client with $T in its command line, one that a
# subshell left behind (reparented), and a second `raidkit serve` that rk_serve does not track,
# then exits 0. After its exit none of them may run any more (before, they survived the test and
# could keep writing into its deleted files), a process of the same session without $T in its
# command line still runs, and the inner script still exited 0 (its own cleanup spared it).
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
rk_init

cat >"$T/inner.sh" <<'EOF'
. "$RAIDKIT_SOURCE_DIR/tests/lib/common.sh"
rk_init
out=$1
"$RK_PY" -c 'import time; time.sleep(120)' "$T/client" &
echo "$!" >>"$out"
( "$RK_PY" -c 'import time; time.sleep(120)' "$T/orphan" & echo "$!" >>"$out" )
rk_members 2 4M
rk_create --level raid1 "${M[@]}"
timeout -k 5 120 "$RAIDKIT" serve --listen "unix:$T/sock.x" "${M[@]}" 2>/dev/null &
echo "$!" >>"$out"
for _ in $(seq 100); do [ -S "$T/sock.x" ] && break; sleep 0.1; done
[ -S "$T/sock.x" ] || rk_fail "the untracked server did not listen"
pgrep -P "$!" >>"$out" # raidkit serve below timeout
"$RK_PY" -c 'import time; time.sleep(120)' "/tmp/not-the-scratch-dir" &
echo "$!" >"$out.keep"
exit 0
EOF

RAIDKIT_SOURCE_DIR=${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..} RAIDKIT=$RAIDKIT \
    bash "$T/inner.sh" "$T/pids"
rc=$?
keep=$(cat "$T/pids.keep" 2>/dev/null)
survivors=""
sleep 0.2
while read -r pid; do
    rk_any_running "$pid" && survivors+=" $pid"
done <"$T/pids"
alive_keep=no
[ -n "$keep" ] && rk_any_running "$keep" && alive_keep=yes
# Whatever survived is ended here, by pid, before any verdict.
# shellcheck disable=SC2086
[ -z "$survivors" ] || kill -KILL $survivors 2>/dev/null
[ -z "$keep" ] || kill -KILL "$keep" 2>/dev/null
[ "$rc" -eq 0 ] || rk_fail "the inner test exited $rc (want 0: its cleanup must not kill it)"
[ "$(wc -l <"$T/pids")" -eq 4 ] || rk_fail "the inner test did not start its 4 processes: $(cat "$T/pids")"
[ -z "$survivors" ] || rk_fail "processes started on the inner test's scratch dir survived it:$survivors"
[ "$alive_keep" = yes ] || rk_fail "a process without the scratch dir in its command line was killed"
echo "PASS: rk_cleanup killed the 4 processes left on the scratch dir and nothing else"
