#!/bin/bash
# C19: scrub with less redundancy. RAID6 of 5: 4 KiB of one data chunk on m0 corrupted behind
# raidkit's back. With m4 removed the scrub still finds it (one parity is left to check
# against: "degraded raid6 scrub finds a corrupt chunk"); with all five present
# `scrub --repair` locates the bad chunk from P and Q and rewrites it on m0, parity untouched
# ("raid6 repair fixes the right chunk"), and the data reads back as written. Also online:
# `status --json` lists where the mismatch was.
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/integration/manage_lib.bash"
rk_init
mg_level_works 6 || rk_skip "raid6 not available in this build"

# scrub_out ARGS...: run `raidkit scrub ARGS`, output into $OUT.
scrub_out()
{
    OUT=$(timeout 60 "$RAIDKIT" scrub "$@" 2>"$T/scrub.err") ||
        rk_fail "raidkit scrub $*: $(cat "$T/scrub.err")"
    rk_log "scrub $*: $OUT"
}

# dd_sum FILE OFFSET LEN: sha256 of LEN bytes of FILE at OFFSET (4 KiB aligned).
dd_sum()
{
    dd if="$1" bs=4096 skip=$(($2 / 4096)) count=$(($3 / 4096)) status=none | sha256sum | cut -d' ' -f1
}

rk_members 5 17M c19-
rk_create --level raid6 "${M[@]}"
"$RAIDKIT" info --json "${M[@]}" >"$T/info.json" || rk_fail "raidkit info"
DOFF=$("$RK_PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["array"]["data_offset"])' "$T/info.json") ||
    rk_fail "data_offset from raidkit info"
CHUNK=$("$RK_PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["array"]["chunk"])' "$T/info.json") ||
    rk_fail "chunk from raidkit info"
rk_log "data_offset $DOFF chunk $CHUNK"
rk_serve "${M[@]}"
size=$(rk_py size "$RK_URI") || rk_fail size
rk_stamp 1 0 "$size"
rk_stop

# docs/FORMAT.md "raid5, raid6": stripe s has P on slot 4 - s mod 5, Q on the next slot, data
# chunk k on slot (P + 2 + k) mod 5. Stripe 1: P on m3, Q on m4, data chunk 0 (array chunk 3) on
# m0. Corrupt 4 KiB at 8 KiB into that chunk.
ROW=1
MOFF=$((ROW * CHUNK + 8192))
AOFF=$((3 * CHUNK + 8192))
good=$(dd_sum "${M[0]}" $((DOFF + MOFF)) 4096)
psum=$(dd_sum "${M[3]}" $((DOFF + ROW * CHUNK)) "$CHUNK")
qsum=$(dd_sum "${M[4]}" $((DOFF + ROW * CHUNK)) "$CHUNK")
head -c 4096 /dev/urandom | dd of="${M[0]}" bs=4096 seek=$(((DOFF + MOFF) / 4096)) \
    conv=notrunc,fsync status=none || rk_fail "dd into m0"

# m4 (Q of that stripe) removed: P is still there to check against.
scrub_out "${M[0]}" "${M[1]}" "${M[2]}" "${M[3]}"
n=$(echo "$OUT" | sed -n 's/^scrub finished: \([0-9]*\) mismatches.*/\1/p')
[ -n "$n" ] && [ "$n" -ge 1 ] || rk_fail "degraded raid6 scrub found no mismatch: $OUT"
echo "$OUT" | grep -q "^mismatch: slot 3 (parity P) bytes \[$MOFF, $((MOFF + 4096))): degraded, repaired none" ||
    rk_fail "degraded scrub does not say where: $OUT"

# m3 (P) removed instead: Q is checked.
scrub_out "${M[0]}" "${M[1]}" "${M[2]}" "${M[4]}"
echo "$OUT" | grep -q "^scrub finished: 1 mismatches" || rk_fail "scrub without P: $OUT"
echo "$OUT" | grep -q "^mismatch: slot 4 (parity Q) bytes \[$MOFF, $((MOFF + 4096))): degraded" ||
    rk_fail "scrub without P does not name Q on slot 4: $OUT"

# All five: the check locates the chunk, the repair rewrites it on m0, not the parity.
scrub_out "${M[@]}"
echo "$OUT" | grep -q "^mismatch: slot 0 data bytes \[$MOFF, $((MOFF + 4096))), array bytes \[$AOFF, $((AOFF + 4096))): located, repaired none" ||
    rk_fail "check does not locate the chunk: $OUT"
scrub_out --repair "${M[@]}"
echo "$OUT" | grep -q "^scrub finished: 1 mismatches, 1 repaired" || rk_fail "repair: $OUT"
echo "$OUT" | grep -q "^mismatch: slot 0 .*: located, repaired data" || rk_fail "repair target: $OUT"
[ "$(dd_sum "${M[0]}" $((DOFF + MOFF)) 4096)" = "$good" ] || rk_fail "m0 bytes not restored"
[ "$(dd_sum "${M[3]}" $((DOFF + ROW * CHUNK)) "$CHUNK")" = "$psum" ] || rk_fail "P on m3 changed"
[ "$(dd_sum "${M[4]}" $((DOFF + ROW * CHUNK)) "$CHUNK")" = "$qsum" ] || rk_fail "Q on m4 changed"
scrub_out "${M[@]}"
echo "$OUT" | grep -q "^scrub finished: 0 mismatches" || rk_fail "after repair: $OUT"

# Online: the same through the control socket, with the location in status --json.
head -c 4096 /dev/urandom | dd of="${M[0]}" bs=4096 seek=$(((DOFF + MOFF) / 4096)) \
    conv=notrunc,fsync status=none || rk_fail "dd into m0"
CTL="$T/ctl"
rk_serve --control "$CTL" "${M[@]}"
scrub_out --repair --control "$CTL"
echo "$OUT" | grep -q "^mismatch: slot 0 .*: located, repaired data" || rk_fail "online repair: $OUT"
mg_status
[ "$(mg_q "s['last_scrub']['mismatches']")" = 1 ] || rk_fail "status: $(cat "$T/st.json")"
[ "$(mg_q "[(m['slot'], m['member_offset'], m['len'], m['array_offset'], m['repaired']) for m in s['last_scrub']['mismatch_list']]")" = "[(0, $MOFF, 4096, $AOFF, 'data')]" ] ||
    rk_fail "status mismatch_list: $(cat "$T/st.json")"
rk_verify 0 "$size" 1
rk_stop
[ "$(dd_sum "${M[0]}" $((DOFF + MOFF)) 4096)" = "$good" ] || rk_fail "m0 bytes not restored online"
echo PASS
