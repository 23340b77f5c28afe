#!/bin/bash
# remote_tls_member: NBD members over TLS (docs/CLI.md "Member URIs"), served by nbdkit
# --tls=require (memory plugin).
# (1) X.509 over TCP 127.0.0.1: a raid1 of a local file and
#     `nbds://localhost:PORT/?tls-certificates=DIR` (DIR holds the CA certificate): create,
#     serve, fio crc32c verify, status shows it connected.
# (2) PSK over a unix socket: `nbds+unix://IDENTITY@/?socket=S&tls-psk-file=FILE`: create,
#     serve, fio verify.
# (3) bad input: a plaintext URI to the TLS-only server, a wrong PSK, a CA that did not sign the
#     server's certificate (TCP: libnbd verifies the server only where it has a host name) ->
#     one line naming the URI, exit 1, the local member untouched.
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
. "$RAIDKIT_SOURCE_DIR/tests/integration/manage_lib.bash"
rk_init
rk_need fio nbdkit certtool psktool
grep -q "built without libnbd" <<<"$("$RAIDKIT" info "nbd+unix:///?socket=$T/none" 2>&1)" &&
    rk_skip "raidkit was built without libnbd (libnbd-dev)"

NBDKIT_PIDS=()
# nbdkit_tls WHERE TLS-ARGS...: nbdkit --tls=require with a 64 MiB memory disk on WHERE (a
# unix socket path, or a TCP port on 127.0.0.1).
nbdkit_tls()
{
    local at=$1 i
    shift
    if [[ $at == /* ]]; then
        nbdkit -f -U "$at" --tls=require "$@" memory 64M 2>>"$T/nbdkit.log" &
    else
        nbdkit -f -i 127.0.0.1 -p "$at" --tls=require "$@" memory 64M 2>>"$T/nbdkit.log" &
    fi
    NBDKIT_PIDS+=($!)
    for i in $(seq 100); do
        if [[ $at == /* ]]; then
            [ -S "$at" ] && return 0
        else
            (exec 3<>"/dev/tcp/127.0.0.1/$at") 2>/dev/null && return 0
        fi
        sleep 0.1
    done
    rk_fail "nbdkit --tls=require $* did not listen on $at: $(cat "$T/nbdkit.log")"
}
trap 'rc=$?; for p in "${NBDKIT_PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; wait "$p" 2>/dev/null; done; (exit $rc); rk_cleanup' EXIT

# A throw-away PKI: a CA, the server's certificate it signed, and a second CA that signed nothing.
C="$T/pki"
mkdir -p "$C" "$T/cl" "$T/other"
printf 'cn = raidkit test CA\nca\ncert_signing_key\nexpiration_days = 2\n' >"$C/ca.info"
printf 'cn = localhost\ndns_name = localhost\ntls_www_server\nencryption_key\nsigning_key\nexpiration_days = 2\n' \
    >"$C/server.info"
(
    cd "$C" &&
        certtool --generate-privkey --outfile ca-key.pem &&
        certtool --generate-self-signed --load-privkey ca-key.pem --template ca.info --outfile ca-cert.pem &&
        certtool --generate-privkey --outfile server-key.pem &&
        certtool --generate-certificate --load-privkey server-key.pem --load-ca-certificate ca-cert.pem \
            --load-ca-privkey ca-key.pem --template server.info --outfile server-cert.pem &&
        certtool --generate-privkey --outfile other-key.pem &&
        certtool --generate-self-signed --load-privkey other-key.pem --template ca.info \
            --outfile "$T/other/ca-cert.pem"
) >/dev/null 2>&1 || rk_fail "certtool could not make the test PKI"
cp "$C/ca-cert.pem" "$T/cl/"
psktool -u alice -p "$T/keys.psk" >/dev/null && psktool -u alice -p "$T/wrong.psk" >/dev/null ||
    rk_fail psktool

rk_log "=== (1) X.509: raid1 of a local file + nbds://localhost member"
PORT=$("$RK_PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
nbdkit_tls "$PORT" --tls-certificates="$C"
U="nbds://localhost:$PORT/?tls-certificates=$T/cl"
truncate -s 64M "$T/local"
rk_create --level raid1 "$T/local" "$U"
CTL="$T/ctl.sock"
rk_serve --control "$CTL" "$T/local" "$U"
mg_status
[ "$(mg_q "s['slots'][1]['kind']")" = nbd ] || rk_fail "slot 1 kind: $(cat "$T/st.json")"
[ "$(mg_q "s['slots'][1]['connection']")" = connected ] || rk_fail "slot 1 not connected: $(cat "$T/st.json")"
rk_fio_verify 16
mg_status
[ "$(mg_slot_state 1)" = active ] || rk_fail "slot 1 after fio: $(cat "$T/st.json")"
rk_stop

rk_log "=== (2) PSK: nbds+unix://alice@ member with tls-psk-file"
nbdkit_tls "$T/psk.sock" --tls-psk="$T/keys.psk"
P="nbds+unix://alice@/?socket=$T/psk.sock&tls-psk-file=$T/keys.psk"
truncate -s 64M "$T/local2"
rk_create --level raid1 "$T/local2" "$P"
rk_serve --control "$CTL" "$T/local2" "$P"
rk_fio_verify 8
mg_status
[ "$(mg_slot_state 1)" = active ] || rk_fail "PSK slot 1 after fio: $(cat "$T/st.json")"
rk_stop

rk_log "=== (3) bad input: plaintext to a TLS-only server, a wrong key, an unknown CA"
truncate -s 64M "$T/local3"
before=$(rk_sums "$T/local3")
for bad in "nbd://localhost:$PORT/" \
    "nbds+unix://alice@/?socket=$T/psk.sock&tls-psk-file=$T/wrong.psk" \
    "nbds://localhost:$PORT/?tls-certificates=$T/other"; do
    out=$(timeout 60 "$RAIDKIT" create --level raid1 "$T/local3" "$bad" 2>&1)
    rc=$?
    [ "$rc" = 1 ] || rk_fail "create with $bad: exit $rc, want 1: $out"
    [ "$(grep -c . <<<"$out")" = 1 ] || rk_fail "create with $bad: not one line: $out"
    grep -qF "$bad" <<<"$out" || rk_fail "create with $bad: message does not name it: $out"
    rk_log "refused: $out"
done
[ "$(rk_sums "$T/local3")" = "$before" ] || rk_fail "a refused create changed the local member"
rk_no_sanitizer "$RK_LOG" "raidkit serve"
echo "PASS: remote_tls_member"
