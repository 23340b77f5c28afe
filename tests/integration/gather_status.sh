#!/bin/bash
# gather_status: the stripe-gathering counters of `raidkit status` (docs/CLI.md "status").
# raid5 over 4 members (chunk 16K: 48K stripes) through the NBD server: one 16K write, then a
# sequential stream of 16K writes continuing it (one client, in order) reads nothing from the
# members, every full stripe it covers is written out whole by gathering, and the counters say
# so in `status --json` (and the text form); a FLUSH writes out the rest (write_outs.flush)
# (stripe 0's rest known to the stripe cache, stripe 42's missing chunk read once).
# With RAIDKIT_RAID5_GATHER_US=0 the same stream reads from the members and gather.on is false.
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
rk_init

rk_members 4 16M
rk_create --level raid5 --chunk 16K --assume-clean "${M[@]}"

# stream CONTROL: one 16K write at 0, status, 127 more 16K writes, status, flush, status; print
# the three status documents' member reads and gather objects as one JSON line.
stream()
{
    "$RK_PY" - "$RK_URI" "$RAIDKIT" "$1" <<'PY'
import json, subprocess, sys
import nbd
uri, rk, ctl = sys.argv[1:4]
def st():
    d = json.loads(subprocess.check_output([rk, "status", "--json", "--control", ctl]))
    d = d.get("status", d)
    return {"reads": sum(s["io"]["reads"] for s in d["slots"]), "gather": d.get("gather")}
h = nbd.NBD()
h.connect_uri(uri)
h.pwrite(b"\x5a" * 16384, 0)
a = st()
for i in range(1, 128):
    h.pwrite(bytes([i % 251 + 1]) * 16384, i * 16384)
b = st()
h.flush()
c = st()
for i in range(128):
    want = bytes([i % 251 + 1 if i else 0x5a]) * 16384
    if h.pread(16384, i * 16384) != want:
        sys.exit("block %d reads back wrong" % i)
h.shutdown()
print(json.dumps([a, b, c]))
PY
}

# A hold no loaded machine reaches between two writes of the stream (5 s; the flush ends it),
# so the counts are exact.
RAIDKIT_RAID5_GATHER_US=5000000 rk_serve --control "$T/ctl" "${M[@]}"
out=$(stream "$T/ctl") || rk_fail "the stream failed: $out"
rk_log "gathering on: $out"
"$RAIDKIT" status --control "$T/ctl" >"$T/status.txt" || rk_fail "status failed"
grep -q '^gather: .*full-stripe' "$T/status.txt" || rk_fail "no gather line in status: $(cat "$T/status.txt")"
rk_stop
"$RK_PY" - "$out" <<'PY' || rk_fail "gathering counters wrong: $out"
import json, sys
a, b, c = json.loads(sys.argv[1])
g = b["gather"]
assert g and g["on"] and g["stripe_bytes"] == 48 * 1024, g
assert b["reads"] - a["reads"] == 0, "member reads during the stream: %d" % (b["reads"] - a["reads"])
# 128 writes of 16K = 2 MiB from 0: every write after the first is held; stripes 1..41 are
# made whole by the stream and written out whole at once; stripe 0 (its first 16K went out
# directly) and stripe 42 (partly written) stay held until the flush writes them out in part.
assert g["writes_held"] == 127 and g["bytes_held"] == 127 * 16384, g
assert g["full_stripe_writes"] == 41 and g["write_outs"]["whole"] == 41, g
assert g["partial_writes"] == 0 and g["stripes_held"] == 2, g
g = c["gather"]
assert g["stripes_held"] == 0 and g["partial_writes"] == 2 and g["write_outs"]["flush"] == 2, g
# stripe 0's rest is known to the stripe cache; stripe 42 lacks its last chunk, which the
# partial write-out reads (reconstruct-write: 1 read; read-modify-write: 2)
assert c["reads"] - b["reads"] <= 2, "the flush's write-outs read %d" % (c["reads"] - b["reads"])
PY

RAIDKIT_RAID5_GATHER_US=0 rk_serve --control "$T/ctl2" "${M[@]}"
out=$(stream "$T/ctl2") || rk_fail "the stream failed: $out"
rk_log "gathering off: $out"
rk_stop
"$RK_PY" - "$out" <<'PY' || rk_fail "gathering-off counters wrong: $out"
import json, sys
a, b, c = json.loads(sys.argv[1])
assert b["gather"] is not None and not b["gather"]["on"], b
assert b["gather"]["writes_held"] == 0, b
assert b["reads"] - a["reads"] > 0, "a stream without gathering reads from the members"
PY
echo PASS
