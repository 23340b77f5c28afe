#!/bin/bash
# Power cut during an overlapped initial sync, then resume: the resync runs several steps in
# flight (src/raid/job.c job_pipe) and checkpoints the position every earlier step reached, after
# a flush (docs/ARCHITECTURE.md "Resync"). raid5 and raid1 over random members that could not be
# zeroed (RAIDKIT_TEST_NO_ZERO=1), served behind one shared power domain with member latency and
# a rate limit, so that steps overlap and at least one checkpoint is written before the cut;
# the cut keeps a random subset of every unflushed write (keep=random). The next serve must say
# a resync is pending, resume it at its checkpoint (not from 0) and end it; then an offline scrub
# reports 0 mismatches: a checkpoint that claimed a step still in flight, or one not yet durable,
# would leave stale parity or copies behind it.
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/integration/manage_lib.bash"
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/torture_lib.sh" # torture_kill
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/initial_sync_lib.sh"
rk_init

# cut_case LEVEL MEMBERS MIB RATE LATENCY_US CUT_AFTER SEED
cut_case()
{
    local level=$1 n=$2 mib=$3 rate=$4 lat=$5 cut=$6 seed=$7 i
    rk_log "=== $level: power cut after $cut member writes during the initial sync"
    is_unsynced_array "$level" "$n" "$mib"
    CTL="$T/ctl.$level"
    rk_serve --control "$CTL" --rebuild-rate "$rate" \
        --debug-fault "all:latency=$lat,cut-after=$cut,keep=random,seed=$seed,on-cut=hang" "${M[@]}"
    for i in $(seq 300); do
        grep -q "power cut complete" "$RK_LOG" && break
        kill -0 "$RK_PID" 2>/dev/null || rk_fail "$level: serve exited before the cut: $(cat "$RK_LOG")"
        sleep 0.1
    done
    grep -q "power cut complete" "$RK_LOG" || rk_fail "$level: no power cut within 30 s: $(cat "$RK_LOG")"
    grep -q "resync finished" "$RK_LOG" && rk_fail "$level: the sync ended before the cut (cut later)"
    rk_log "$level: cut; $(grep -c 'power cut:' "$RK_LOG") members cut"
    torture_kill

    rk_serve --control "$CTL" "${M[@]}"
    grep -q "full resync resumes at its checkpoint" "$RK_LOG" || rk_fail "$level: the restart does not resume the full resync at its checkpoint: $(cat "$RK_LOG")"
    mg_wait_job 60
    [ "$(mg_q "s['job']['kind']")/$(mg_q "s['job']['state']")" = resync/done ] ||
        rk_fail "$level: the resumed resync did not finish: $(cat "$T/st.json")"
    local start
    start=$(mg_q "s['job']['start']")
    [ "$start" -gt 0 ] || rk_fail "$level: the resync restarted from 0, not from a checkpoint (cut earlier or checkpoints missing)"
    rk_log "$level: resumed at member offset $start of $((mib * 1048576))"
    rk_stop
    n=$(is_scrub "${M[@]}")
    [ "$n" = 0 ] || rk_fail "$level: offline scrub after the resumed initial sync: $n mismatches, want 0"
    rm -f "$T"/r?
}

# raid5: 4 x 32 MiB, 16 MiB/s: a 4 MiB step is claimed every 0.25 s and takes longer than that
# (64 parity writes of 10 ms each), so 2-3 steps are in flight; 384 of the 512 parity writes
# land after 1.5 s, past the first checkpoint (1 s).
cut_case raid5 4 32 16 10000 380 11
# raid1: 2 x 48 MiB, 8 MiB/s: one 4 MiB copy per step (a read and a write of 300 ms each), a
# step claimed every 0.5 s; the cut on the 5th copy write comes after the first checkpoint.
cut_case raid1 2 48 8 300000 6 12
echo "PASS: a power cut during an overlapped initial sync resumes from its checkpoint; scrub 0"
