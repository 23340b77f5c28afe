/*
 * The background-job framework of a raid device: one job at a time per array (a rebuild, a
 * scrub; a resync fits the same mould), run by its own thread over a range of the members'
 * data areas in chunk-aligned steps. The framework owns the thread, the stop flag, the progress
 * (rk_raid_progress), the rate limit and the checkpoint cadence; a job kind supplies a table of
 * hooks (struct raid_job_ops) and a context.
 *
 * Per step the job thread: checks the stop flag, locks the step's member range on every slot
 * (rangelock.h), calls ops->step, unlocks, calls ops->checkpoint when one is due, updates the
 * progress and sleeps while ahead of the rate limit (woken at once by a stop).
 *
 * Lock order (raid_int.h): range -> level locks -> job->lock -> fail_lock. A step holds its
 * range and may take job->lock (raid_job_count), the bad-range lock and fail_lock; job->lock is
 * never held while waiting for a range, for the drain of unlocked writes or for a thread to end.
 */
#ifndef RK_RAID_JOB_H
#define RK_RAID_JOB_H

#include <stdbool.h>
#include <stdint.h>

#include "raid/raid_int.h"

/* Checkpoint a job's position at least this often (seconds) and every this many bytes. */
#define RAID_JOB_CKPT_SECS  1.0
#define RAID_JOB_CKPT_BYTES (256ull * 1024 * 1024)

/* The hooks of one job kind. Every hook runs on the job thread; ctx is the spec's. */
struct raid_job_ops {
    int kind; /* enum rk_raid_job_kind, reported in rk_raid_progress.kind */
    /* Optional: called once before the first step, e.g. to log the start. */
    void (*begin)(struct raid_priv *r, void *ctx, uint64_t start, uint64_t end);
    /* Process member data-area range [pos, pos+len) of every slot (chunk aligned, len <=
     * raid_job_step_bytes()), with the range lock held for it. Returns 0 to go on, or -errno
     * to end the job with that error (the hook logs why). */
    int (*step)(struct raid_priv *r, void *ctx, uint64_t pos, uint64_t len);
    /* Optional: bytes [start, pos) are done; make them durable and persist pos so that a
     * restart resumes there. Called outside the range lock, before the progress update of the
     * step that reached pos, when RAID_JOB_CKPT_SECS or RAID_JOB_CKPT_BYTES passed since the
     * last one (never at pos == end), and once more when the job is stopped (-EINTR). */
    void (*checkpoint)(struct raid_priv *r, void *ctx, uint64_t pos);
    /* Called once after the last step (also when the first step never ran): err is 0 (all of
     * [start, end) done), -EINTR (stopped at pos) or the error of a step. Returns the job's
     * result (rk_raid_job_wait, rk_raid_progress.error), e.g. err, or an error of its own
     * final work. Frees ctx. The progress still says RUNNING while it runs. */
    int (*finish)(struct raid_priv *r, void *ctx, uint64_t pos, int err);
    /* Optional: steps in flight at once (0 or 1: one after another on the job thread; at most
     * RAID_JOB_DEPTH_MAX). Above 1, that many worker threads each claim the next step in order,
     * lock its range and run ops->step, so the steps of one job overlap (their ranges never
     * do); the job thread then only runs the hooks below in order. step must then be safe to
     * run concurrently with itself on disjoint ranges (ctx counters atomic). */
    uint32_t depth;
    /* Optional, only with depth > 1: the multiple of raid_job_step_bytes() a step covers (at
     * most 4 MiB by it, job.c RAID_JOB_PIPE_STEP; 1 under a rate limit below 4 MiB/s). */
    uint32_t step_mul;
    /* Optional: every step of [start, pos) is done (called in order with a growing pos, on
     * the job thread, outside any range lock, before the checkpoint of pos): e.g. to mark what
     * pos completes. With depth <= 1 it follows each step. */
    void (*done)(struct raid_priv *r, void *ctx, uint64_t pos);
};

/* The most steps of one job in flight (struct raid_job_ops.depth). */
#define RAID_JOB_DEPTH_MAX 8

/* What to start (raid_job_start). */
struct raid_job_spec {
    const struct raid_job_ops *ops;
    void *ctx;           /* the kind's state: owned by the job once raid_job_start returned 0
                          * (ops->finish frees it), still the caller's after an error */
    uint64_t start, end; /* member data-area bytes [start, end) to walk; start chunk aligned */
    uint64_t rate;       /* bytes/s, 0 = unlimited */
    uint32_t slot;       /* reported in rk_raid_progress.slot (rebuild: the target) */
    bool repair;         /* reported in rk_raid_progress.repair (scrub) */
};

/* Allocate r->job (engine open; 0 or -ENOMEM) / stop a running job, wait for its thread and
 * free r->job (engine close; a no-op when r->job is NULL). */
int raid_job_init(struct raid_priv *r);
void raid_job_destroy(struct raid_priv *r);

/*
 * Start a job in a new thread: claim the job slot (reaping the thread of a finished job), reset
 * the progress (the last scrub's result is kept), make foreground writes take range locks and
 * wait until the writes that started without drained (raid_range_activate), then create the
 * thread. Call with no engine lock held.
 * Returns 0, -EBUSY (a job runs) or -errno of pthread_create (the progress then says FAILED).
 */
int raid_job_start(struct raid_priv *r, const struct raid_job_spec *spec);

/* Bytes per step of a job limited to rate bytes/s (0 = unlimited): whole chunks, about 1 MiB,
 * one chunk when a low rate limit asks for it. For sizing a kind's step buffer. */
uint64_t raid_job_step_bytes(const struct raid_priv *r, uint64_t rate);

/* The running job reads nothing (a scrub with no redundancy left to compare): it reports no
 * data rate (rk_raid_progress.rate 0) and no ETA, rather than the speed of skipping. */
void raid_job_no_rate(struct raid_priv *r);

/* Add to the running job's counters (rk_raid_progress mismatches, repaired, bad_ranges). */
void raid_job_count(struct raid_priv *r, uint64_t mismatches, uint64_t repaired,
                    uint64_t bad_ranges);

/* Scrub mismatch locations (rk_raid_scrub_mismatches): record where a scrub hook found one,
 * keeping the first RK_RAID_MISMATCH_MAX of the running job. count: m is the first location of
 * a mismatch the hook counts (chunk / stripe); then m->fixed != RK_FIX_NONE adds 1 to the job's
 * repaired counter (a hook's mismatch may span several locations). Called from a job step. */
void raid_job_mismatch(struct raid_priv *r, const struct rk_raid_mismatch *m, bool count);
/* Make the running job's locations the last scrub's (a scrub's finish hook, on success). */
void raid_job_mismatch_keep(struct raid_priv *r);

/* Run fn(p, arg) on the job's progress under job->lock (fn must not block), e.g. for a kind's
 * finish hook to record its result in the fields it owns. */
void raid_job_update(struct raid_priv *r, void (*fn)(struct rk_raid_progress *p, void *arg),
                     void *arg);

/* Run fn(r, arg) with job->lock held while no job runs, so that none starts meanwhile (fn may
 * take fail_lock, must not block otherwise). Returns fn's result, or -EBUSY when a job runs. */
int raid_job_idle_do(struct raid_priv *r, int (*fn)(struct raid_priv *r, void *arg), void *arg);

#endif
