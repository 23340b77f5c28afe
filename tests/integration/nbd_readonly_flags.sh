#!/usr/bin/env bash
# A --read-only export advertises READ_ONLY and neither TRIM nor WRITE_ZEROES (nbdinfo --json),
# and refuses WRITE, TRIM and WRITE_ZEROES sent anyway with EPERM; a writable export still
# advertises both.
. "$RAIDKIT_SOURCE_DIR/tests/lib/common.sh"
rk_init
rk_need nbdinfo
rk_members 2 24M
rk_create --level 1 "${M[@]}"

flags() {
    nbdinfo --json "$RK_URI" >"$T/info.json" || rk_fail "nbdinfo --json failed"
    "$RK_PY" -c '
import json, sys
e = json.load(open(sys.argv[1]))["exports"][0]
print("ro=%d trim=%d zero=%d" % (e["is_read_only"], e["can_trim"], e["can_zero"]))' "$T/info.json"
}

rk_serve --read-only "${M[@]}"
got=$(flags)
[ "$got" = "ro=1 trim=0 zero=0" ] || rk_fail "read-only export flags: $got"
"$RK_PY" - "$RK_URI" <<'PY' || rk_fail "read-only export accepted a write command"
import sys, nbd
h = nbd.NBD()
h.set_strict_mode(0)  # send the commands the export does not advertise
h.connect_uri(sys.argv[1])
for what, fn in (("write", lambda: h.pwrite(b"x" * 4096, 0)), ("trim", lambda: h.trim(4096, 0)),
                 ("zero", lambda: h.zero(4096, 0))):
    try:
        fn()
        print("%s succeeded on a read-only export" % what)
        sys.exit(1)
    except nbd.Error as e:
        if e.errnum != 1:
            print("%s: errno %s, want EPERM" % (what, e.errnum))
            sys.exit(1)
h.pread(4096, 0)
h.shutdown()
PY
rk_stop

rk_serve "${M[@]}"
got=$(flags)
[ "$got" = "ro=0 trim=1 zero=1" ] || rk_fail "writable export flags: $got"
rk_stop
echo PASS
