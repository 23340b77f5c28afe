#!/bin/bash
# cli_scrub_parity_raid6: a raid6 scrub mismatch against parity names which parity (P or Q) and
# the slot holding it, in text and JSON (docs/CLI.md "scrub"): 4 KiB of P corrupted, then of Q,
# then of P and a data chunk in one column (unlocated: "P+Q", both slots named).
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
rk_init
rk_need python3
rk_members 5 9M
rk_create --level raid6 "${M[@]}"
"$RAIDKIT" info --json "${M[@]}" >"$T/info.json" || rk_fail "raidkit info"
read -r DOFF CHUNK < <(python3 -c 'import json,sys; a=json.load(open(sys.argv[1]))["array"]; print(a["data_offset"], a["chunk"])' "$T/info.json") ||
    rk_fail "geometry from info"
# docs/FORMAT.md "raid5, raid6": stripe 1 has P on m3, Q on m4, data chunk 0 on m0.
MOFF=$((CHUNK + 8192))
END=$((MOFF + 4096))
spoil() { head -c 4096 /dev/urandom | dd of="$1" bs=4096 seek=$(((DOFF + MOFF) / 4096)) conv=notrunc status=none || rk_fail "dd into $1"; }
scrub() { # scrub ARGS...: offline scrub of all five, output into $OUT
    OUT=$(timeout 60 "$RAIDKIT" scrub --no-progress "$@" "${M[@]}" 2>"$T/scrub.err") ||
        rk_fail "raidkit scrub $*: $(cat "$T/scrub.err")"
    rk_log "scrub $*: $OUT"
}
spoil "${M[3]}"
scrub
echo "$OUT" | grep -q "^mismatch: slot 3 (parity P) bytes \[$MOFF, $END): located, repaired none" ||
    rk_fail "P mismatch does not name P on slot 3: $OUT"
scrub --json
python3 -c 'import json,sys; m=json.loads(sys.argv[1])["mismatch_list"]; assert [(x["slot"], x.get("parity")) for x in m] == [(3, "P")], m' "$OUT" ||
    rk_fail "JSON of the P mismatch: $OUT"
scrub --repair
scrub
echo "$OUT" | grep -q "^scrub finished: 0 mismatches" || rk_fail "P not repaired: $OUT"

spoil "${M[4]}"
scrub --json
python3 -c 'import json,sys; m=json.loads(sys.argv[1])["mismatch_list"]; assert [(x["slot"], x.get("parity"), x["repaired"]) for x in m] == [(4, "Q", "none")], m' "$OUT" ||
    rk_fail "JSON of the Q mismatch: $OUT"
scrub --repair
echo "$OUT" | grep -q "^mismatch: slot 4 (parity Q) bytes \[$MOFF, $END): located, repaired parity" ||
    rk_fail "Q mismatch does not name Q on slot 4: $OUT"

spoil "${M[0]}"
spoil "${M[3]}"
scrub
echo "$OUT" | grep -q "^mismatch: slot 3 (parity P) and slot 4 (parity Q) bytes \[$MOFF, $END): unlocated" ||
    rk_fail "unlocated mismatch does not name P and Q: $OUT"
scrub --json
python3 -c 'import json,sys; m=json.loads(sys.argv[1])["mismatch_list"]; assert [(x["slot"], x.get("parity"), x.get("q_slot")) for x in m] == [(3, "P+Q", 4)], m' "$OUT" ||
    rk_fail "JSON of the unlocated mismatch: $OUT"
echo PASS
