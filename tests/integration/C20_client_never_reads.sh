#!/usr/bin/env bash
# C20: a client that never reads. Three connections (receive buffer 4 KiB) pipeline 128 x 1 MiB
# READs and never read the replies; meanwhile another client's 4 KiB and 1 MiB reads finish
# within a second and the server's RSS stays under its --request-memory cap. Then 500
# connections that never finish the handshake are closed by --handshake-timeout, and the
# server's thread and fd counts return to their baseline (and its RSS below 48 MiB once the
# non-reading clients left: buffers go back to the system) (tests/integration/nbd_nonreader.py).
. "$RAIDKIT_SOURCE_DIR/tests/lib/common.sh"
rk_init
rk_members 1 160M
rk_create --level linear "${M[@]}"
cap=$((256 * MiB))
# Under AddressSanitizer freed memory sits in its quarantine and is returned to the system on its
# own clock: have it return at once, as glibc's trim does, so the RSS check means the same there.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=0:allocator_release_to_os_interval_ms=0"
rk_serve --request-memory 256M --handshake-timeout 2 --max-connections 1000 "${M[@]}"
pid=$(pgrep -P "$RK_PID" -x raidkit) || rk_fail "no raidkit process under $RK_PID"
# Not `ldd | grep -q`: under pipefail, grep's early exit can SIGPIPE ldd and flip the answer.
RK_ASAN=0
rk_built_with_asan && RK_ASAN=1
export RK_ASAN
(cd "$RAIDKIT_SOURCE_DIR/tests/integration" &&
    "$RK_PY" nbd_nonreader.py c20 "$RK_SOCK" "$pid" "$cap" 2) || rk_fail "C20 checks failed"
grep -c "warning.* nbd: .*handshake not finished" "$RK_LOG" | grep -qx 1 ||
    rk_fail "handshake timeouts were not logged exactly once: $(grep -c "handshake" "$RK_LOG")"
rk_stop
rk_no_sanitizer "$RK_LOG" "raidkit serve"
echo PASS
