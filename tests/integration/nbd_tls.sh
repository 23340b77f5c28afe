#!/bin/bash
# NBD over TLS (docs/SECURITY.md "TLS"): PSK and X.509 happy paths with nbdinfo, nbdcopy, nbdsh
# (nbds+unix URIs) and qemu-img (tls-creds-x509); --tls require refuses plaintext (raw options
# get NBD_REP_ERR_TLS_REQD); a wrong key and an unknown identity are refused; no option state
# survives STARTTLS and a second STARTTLS is refused, and a client that sends 120 reads or 3,000
# writes before it reads a reply gets every reply (nbd_tls.py); bad TLS options write nothing.
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
rk_init
rk_need nbdinfo nbdcopy nbdsh certtool psktool qemu-img
"$RAIDKIT" serve --help | grep -- "--tls" >/dev/null || rk_fail "serve --help lacks --tls"

rk_members 2 17M
rk_create --level raid1 "${M[@]}"
SIZE=$((16 * MiB))
head -c $SIZE /dev/urandom >"$T/data"

rk_log "=== bad TLS options are refused before anything is opened"
before=$(md5sum "${M[@]}")
rk_serve_refused "tls-psk.*$T/nokey" --tls require --tls-psk "$T/nokey" "${M[@]}"
echo "alice:zz" >"$T/bad.psk"
rk_serve_refused "bad.psk line 1" --tls on --tls-psk "$T/bad.psk" "${M[@]}"
rk_serve_refused "needs --tls-certificates" --tls require "${M[@]}"
rk_serve_refused "tls is off" --tls-psk "$T/bad.psk" "${M[@]}"
rk_serve_refused "server-cert.pem" --tls on --tls-certificates "$T" "${M[@]}"
[ "$(md5sum "${M[@]}")" = "$before" ] || rk_fail "a refused serve changed members"

rk_log "=== PSK, --tls require"
psktool -u alice -p "$T/keys.psk" >/dev/null || rk_fail psktool
psktool -u alice -p "$T/wrong.psk" >/dev/null || rk_fail psktool
rk_serve --tls require --tls-psk "$T/keys.psk" "${M[@]}"
U="nbds+unix://alice@/?socket=$RK_SOCK&tls-psk-file=$T/keys.psk"
nbdinfo "$U" >"$T/info" || rk_fail "nbdinfo over TLS-PSK failed"
grep -q "with TLS" "$T/info" || rk_fail "nbdinfo does not report TLS: $(cat "$T/info")"
PATH=/usr/bin:$PATH nbdsh -c "h.set_uri_allow_local_file(True); h.connect_uri('$U')" \
    -c 'h.pwrite(b"\x5a" * 4096, 8192); assert h.pread(4096, 8192) == b"\x5a" * 4096' ||
    rk_fail "nbdsh over TLS"
nbdcopy "$T/data" "$U" || rk_fail "nbdcopy in over TLS"
nbdcopy "$U" "$T/back" || rk_fail "nbdcopy out over TLS"
cmp "$T/data" "$T/back" || rk_fail "data differs after a TLS round trip"
nbdinfo "$RK_URI" >/dev/null 2>&1 && rk_fail "--tls require served a plaintext client"
"$RK_PY" "$HERE/nbd_tls.py" require "$RK_SOCK" || rk_fail "nbd_tls.py require"
nbdinfo "nbds+unix://alice@/?socket=$RK_SOCK&tls-psk-file=$T/wrong.psk" >/dev/null 2>&1 &&
    rk_fail "a wrong PSK was accepted"
psktool -u mallory -p "$T/other.psk" >/dev/null
nbdinfo "nbds+unix://mallory@/?socket=$RK_SOCK&tls-psk-file=$T/other.psk" >/dev/null 2>&1 &&
    rk_fail "an unknown PSK identity was accepted"
nbdinfo "$U" >/dev/null || rk_fail "the server stopped answering after refused clients"
rk_stop

rk_log "=== X.509, --tls on"
C="$T/pki"
mkdir -p "$C"
cat >"$C/ca.info" <<EOT
cn = raidkit test CA
ca
cert_signing_key
expiration_days = 2
EOT
cat >"$C/server.info" <<EOT
organization = raidkit test
cn = localhost
dns_name = localhost
ip_address = 127.0.0.1
tls_www_server
encryption_key
signing_key
expiration_days = 2
EOT
(
    cd "$C" &&
        certtool --generate-privkey --outfile ca-key.pem &&
        certtool --generate-self-signed --load-privkey ca-key.pem --template ca.info --outfile ca-cert.pem &&
        certtool --generate-privkey --outfile server-key.pem &&
        certtool --generate-certificate --load-privkey server-key.pem --load-ca-certificate ca-cert.pem \
            --load-ca-privkey ca-key.pem --template server.info --outfile server-cert.pem
) >/dev/null 2>&1 || rk_fail "certtool could not make the test PKI"
CL="$T/client"
mkdir -p "$CL" && cp "$C/ca-cert.pem" "$CL/"
rk_serve --tls on --tls-certificates "$C" "${M[@]}"
X="nbds+unix:///?socket=$RK_SOCK&tls-certificates=$CL"
nbdinfo "$X" | grep -q "with TLS" || rk_fail "nbdinfo over X.509"
nbdcopy "$X" "$T/back2" || rk_fail "nbdcopy out over X.509"
cmp "$T/data" "$T/back2" || rk_fail "X.509 read back differs"
nbdinfo "$RK_URI" | grep -q "without TLS" || rk_fail "--tls on refused a plaintext client"
qemu-img info --object "tls-creds-x509,id=tls0,dir=$CL,endpoint=client" \
    --image-opts "driver=nbd,path=$RK_SOCK,tls-creds=tls0,tls-hostname=localhost" >"$T/qi" 2>&1 ||
    rk_fail "qemu-img over TLS: $(cat "$T/qi")"
grep -q "virtual size: 16 MiB" "$T/qi" || rk_fail "qemu-img info: $(cat "$T/qi")"
qemu-img convert -O raw --object "tls-creds-x509,id=tls0,dir=$CL,endpoint=client" \
    --image-opts "driver=nbd,path=$RK_SOCK,tls-creds=tls0,tls-hostname=localhost" "$T/back3" ||
    rk_fail "qemu-img convert over TLS"
cmp "$T/data" "$T/back3" || rk_fail "qemu-img read back differs"
"$RK_PY" "$HERE/nbd_tls.py" state "$RK_SOCK" "$C" || rk_fail "nbd_tls.py state"
timeout 120 "$RK_PY" "$HERE/nbd_tls.py" slow "$RK_SOCK" "$C" || rk_fail "nbd_tls.py slow"
timeout 120 "$RK_PY" "$HERE/nbd_tls.py" slow-writes "$X" || rk_fail "nbd_tls.py slow-writes"
rk_stop
echo PASS
