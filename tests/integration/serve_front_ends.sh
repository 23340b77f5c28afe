#!/usr/bin/env bash
# serve_front_ends: the nbdkit front-end conventions of `raidkit serve` (docs/CLI.md "serve"):
# --run with $uri (and its exit status), --single under libnbd's connect_command and under
# nbdfuse --command, systemd socket activation (nbdinfo's [ CMD ] form passes LISTEN_FDS),
# --exit-with-parent and --pidfile. Every run must leave the array clean.
. "$RAIDKIT_SOURCE_DIR/tests/lib/common.sh"
rk_init
rk_need nbdinfo python3
export PATH=/usr/bin:$PATH # nbdsh with the system python (import nbd)

clean() { "$RAIDKIT" info --json "${M[@]}" | python3 -c 'import json,sys; d=json.load(sys.stdin); sys.exit(0 if d["array"]["clean"] else 1)' ||
    rk_fail "array not clean after $1"; }

rk_members 2 40M
rk_create --level 1 "${M[@]}"
size=$(rk_array_size "${M[@]}")

# --run: the captive command sees $uri and $unixsocket; serve exits with its status.
out=$(timeout 30 "$RAIDKIT" serve -q --run 'nbdinfo --size "$uri" && test -S "$unixsocket"' "${M[@]}") ||
    rk_fail "serve --run 'nbdinfo \$uri' failed"
[ "$out" = "$size" ] || rk_fail "--run: nbdinfo said '$out', want $size"
timeout 30 "$RAIDKIT" serve -q --run 'exit 7' "${M[@]}"
[ $? -eq 7 ] || rk_fail "serve --run 'exit 7' did not exit 7"
clean "--run"
ls -d "${TMPDIR:-/tmp}"/raidkit-* 2>/dev/null | while read -r d; do
    [ -e "$d/socket" ] && rk_fail "--run left its private socket $d/socket"
done

# --single under libnbd connect_command: write, read back.
timeout 30 nbdsh -c "
h.connect_command(['$RAIDKIT', 'serve', '-q', '--single', '${M[0]}', '${M[1]}'])
assert h.get_size() == $size
h.pwrite(b'single!!' * 512, 1 << 20)
h.flush()
assert h.pread(4096, 1 << 20) == b'single!!' * 512
" || rk_fail "serve --single under nbdsh connect_command"
clean "--single"

# Socket activation: nbdinfo [ CMD ] passes a listening socket as fd 3 (LISTEN_FDS=1).
out=$(timeout 30 nbdinfo --size -- [ "$RAIDKIT" serve -q "${M[@]}" ]) || rk_fail "socket activation"
[ "$out" = "$size" ] || rk_fail "socket activation: size '$out', want $size"
clean "socket activation"

# --single under nbdfuse --command (needs /dev/fuse and fusermount3).
if command -v nbdfuse >/dev/null && command -v fusermount3 >/dev/null && [ -c /dev/fuse ]; then
    mkdir "$T/mnt"
    timeout 60 nbdfuse "$T/mnt" --command "$RAIDKIT" serve -q --single "${M[@]}" 2>"$T/fuse.err" &
    fpid=$!
    for i in $(seq 100); do [ -e "$T/mnt/nbd" ] && break; sleep 0.1; done
    [ -e "$T/mnt/nbd" ] || rk_fail "nbdfuse --command raidkit serve --single: no $T/mnt/nbd: $(cat "$T/fuse.err")"
    head -c 1M /dev/urandom >"$T/pattern"
    dd if="$T/pattern" of="$T/mnt/nbd" bs=1M seek=2 conv=notrunc,fsync status=none ||
        rk_fail "write through nbdfuse"
    cmp <(dd if="$T/mnt/nbd" bs=1M skip=2 count=1 status=none) "$T/pattern" ||
        rk_fail "read back through nbdfuse differs"
    fusermount3 -u "$T/mnt"
    wait $fpid
    for i in $(seq 50); do pgrep -f "serve -q --single ${M[0]}" >/dev/null || break; sleep 0.1; done
    clean "nbdfuse --command"
    cmp <(dd if="${M[0]}" bs=1M skip=3 count=1 status=none) "$T/pattern" ||
        rk_fail "member 0 does not hold what was written through nbdfuse"
else
    rk_log "note: nbdfuse/fusermount3 or /dev/fuse missing: the nbdfuse part is skipped"
fi

# --exit-with-parent and --pidfile: the parent shell exits, the server stops cleanly.
sock=$T/ewp.sock
bash -c '"$1" serve -q --exit-with-parent --pidfile "$2" --listen "unix:$3" "$4" "$5" 2>"$6" &
         for i in $(seq 100); do [ -S "$3" ] && break; sleep 0.1; done; sleep 0.2' \
    _ "$RAIDKIT" "$T/pid" "$sock" "${M[0]}" "${M[1]}" "$T/ewp.err"
[ -s "$T/pid" ] || rk_fail "--pidfile: no pid written: $(cat "$T/ewp.err")"
pid=$(cat "$T/pid")
for i in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
kill -0 "$pid" 2>/dev/null && { kill "$pid"; rk_fail "--exit-with-parent: server $pid outlived its parent"; }
[ ! -e "$T/pid" ] || rk_fail "--pidfile: $T/pid left after exit"
[ ! -e "$sock" ] || rk_fail "--exit-with-parent: socket left behind"
clean "--exit-with-parent"
echo "PASS: --run, --single (nbdsh, nbdfuse), socket activation, --exit-with-parent, --pidfile"
