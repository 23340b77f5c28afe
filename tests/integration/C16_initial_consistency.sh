#!/bin/bash
# C16 initial consistency: RAID5 of 4 x 24 MiB members filled with random bytes; create (--force)
# where the members cannot be zeroed (RAIDKIT_TEST_NO_ZERO=1 forces that path, docs/CLI.md), so
# the first serve runs the initial sync (a full resync); once it ends, stop, offline scrub: 0
# mismatches. Variant: fio 4K random writes with --verify=crc32c on half the array while the
# initial sync runs (writes into unsynced stripes must not read-modify-write against parity that
# was never valid), fail slot 0, then --verify_only: 0 bad blocks. Also raid1: the sync copies.
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/integration/manage_lib.bash"
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/initial_sync_lib.sh"
rk_init
rk_need fio

for level in raid5 raid1; do
    rk_log "=== C16 $level: initial sync over random members"
    if [ "$level" = raid5 ]; then is_unsynced_array raid5 4 24; else is_unsynced_array raid1 2 24; fi
    CTL="$T/ctl.$level"
    rk_serve --control "$CTL" "${M[@]}"
    mg_wait_job 60
    [ "$(mg_q "s['job']['kind']")/$(mg_q "s['job']['state']")/$(mg_q "s['job']['full']")" = resync/done/True ] ||
        rk_fail "$level: no full initial sync ran: $(cat "$T/st.json")"
    rk_stop
    n=$(is_scrub "${M[@]}")
    [ "$n" = 0 ] || rk_fail "$level: offline scrub after the initial sync: $n mismatches, want 0"
    # In sync now: the next start runs nothing.
    rk_serve --control "$CTL" "${M[@]}"
    mg_status
    [ "$(mg_q "s['job']['kind']")" = none ] || rk_fail "$level: a job ran on a synced array: $(cat "$T/st.json")"
    rk_stop
done

rk_log "=== C16 variant: fio --verify=crc32c while the initial sync runs, fail slot 0, verify_only"
is_unsynced_array raid5 4 24
CTL="$T/ctl.v"
rk_serve --control "$CTL" --rebuild-rate 2 "${M[@]}"
size=$(rk_py size "$RK_URI") || rk_fail size
half=$((size / 2 / MiB))
FIO=(--rw=randwrite --bs=4k --iodepth=8 --size="${half}M" --verify=crc32c --verify_fatal=1)
rk_fio write "${FIO[@]}" --do_verify=0
mg_status
[ "$(mg_q "s['job']['kind']")/$(mg_q "s['job']['state']")" = resync/running ] ||
    rk_log "note: the initial sync already ended before the fio run did: $(cat "$T/st.json")"
mg_fail 0
rk_fio verify "${FIO[@]}" --verify_only
rk_log "verify_only after fail of slot 0: $(grep -o 'err= *[0-9]*' "$T/fio.verify.out" | head -n 1)"
rk_stop
rm -f "$T"/r?
echo "PASS: C16 initial consistency (initial sync over random members; writes during it verify after a failure)"
