#!/usr/bin/env bash
# A member failure that no superblock can record (docs/ARCHITECTURE.md "Durability", member
# failure): raid1 of 2 whose slot 1 fails every superblock write (--debug-fault
# 1:write-eio=0+4096; data writes still work). `fail --slot 0` then has nowhere to record the
# failure: it reports the error, and the volume refuses writes and flushes with EIO (never
# acknowledging a write that slot 0 does not hold) while reads go on. The stop leaves the array
# dirty, and a restart without faults reads the data flushed before the failure.
. "$RAIDKIT_SOURCE_DIR/tests/lib/common.sh"
rk_init
rk_need_libnbd
rk_members 2 9M fu-
rk_create --level raid1 "${M[@]}"
CTL="$T/ctl"
rk_serve --control "$CTL" --debug-fault "1:write-eio=0+4096" "${M[@]}"
rk_stamp 1 0 $((1 * MiB))

out=$("$RAIDKIT" fail --slot 0 --control "$CTL" 2>&1) && rk_fail "fail --slot 0 succeeded: $out"
echo "$out" | grep -qi "input/output error" || rk_fail "fail --slot 0: unexpected message: $out"
grep -q "could not be recorded in any superblock" "$RK_LOG" ||
    rk_fail "no 'could not be recorded' in the log: $(cat "$RK_LOG")"

"$RK_PY" - "$RK_URI" <<'PY' || rk_fail "writes or flushes were accepted after an unrecorded failure"
import sys
import nbd
h = nbd.NBD()
h.connect_uri(sys.argv[1])
h.pread(4096, 0)  # reads go on
for what, op in (("write", lambda: h.pwrite(b"\xee" * 4096, 8192)),
                 ("FUA write", lambda: h.pwrite(b"\xee" * 4096, 8192, nbd.CMD_FLAG_FUA)),
                 ("flush", lambda: h.flush())):
    try:
        op()
    except nbd.Error as e:
        print("%s refused: %s" % (what, e), file=sys.stderr)
        continue
    print("%s acknowledged" % what, file=sys.stderr)
    sys.exit(1)
h.shutdown()
PY

# The final flush fails: serve exits 1 and leaves the array dirty.
kill -TERM "$RK_PID"
wait "$RK_PID" && rk_fail "serve exited 0 although its final flush could not succeed"
RK_PID=""
grep -q "leaving it marked dirty" "$RK_LOG" || rk_fail "no 'leaving it marked dirty': $(cat "$RK_LOG")"

rk_serve "${M[@]}"
rk_verify 0 $((1 * MiB)) 1
rk_stop
echo "PASS: fail_unrecorded_raid1"
