/* The background-job framework (job.h): the job slot of an array, its thread and step loop,
 * progress and rate limit, and the public rk_raid_job_wait/stop and rk_raid_progress. */
#include "raid/job.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "raid/rangelock.h"

#define MiB (1024ull * 1024ull)

struct raid_job {
    pthread_mutex_t lock; /* everything below but stop */
    pthread_cond_t cond;  /* CLOCK_MONOTONIC: the job ended, or a stop was asked */
    const struct raid_job_ops *ops;
    void *ctx;
    pthread_t thread;
    bool has_thread; /* thread started and not joined */
    _Atomic int stop;
    int result;
    struct rk_raid_progress prog;
    double t0; /* monotonic start of the job */
    /* Scrub mismatch locations of the running job and of the last finished scrub. */
    struct rk_raid_mismatch mm[RK_RAID_MISMATCH_MAX], last_mm[RK_RAID_MISMATCH_MAX];
    int n_mm, n_last_mm;
};

static double job_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int raid_job_init(struct raid_priv *r)
{
    struct raid_job *j = calloc(1, sizeof(*j));
    if (!j)
        return -ENOMEM;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&j->lock, NULL);
    pthread_cond_init(&j->cond, &ca);
    pthread_condattr_destroy(&ca);
    r->job = j;
    return 0;
}

/* Wait for the current job to end and reap its thread; returns the result of the current or
 * last job (0 when there was none). */
static int job_wait(struct raid_job *j)
{
    pthread_t t;
    bool join = false;
    pthread_mutex_lock(&j->lock);
    if (j->has_thread) {
        t = j->thread;
        j->has_thread = false;
        join = true;
    } else {
        /* Another waiter claimed the thread, or it is being created: wait for the job's end. */
        while (j->prog.state == RK_JOB_RUNNING)
            pthread_cond_wait(&j->cond, &j->lock);
    }
    pthread_mutex_unlock(&j->lock);
    if (join)
        pthread_join(t, NULL);
    pthread_mutex_lock(&j->lock);
    int ret = j->result;
    pthread_mutex_unlock(&j->lock);
    return ret;
}

static void job_stop(struct raid_job *j)
{
    pthread_mutex_lock(&j->lock);
    atomic_store(&j->stop, 1);
    pthread_cond_broadcast(&j->cond); /* wakes a rate-limit sleep */
    pthread_mutex_unlock(&j->lock);
    job_wait(j);
}

void raid_job_destroy(struct raid_priv *r)
{
    struct raid_job *j = r->job;
    if (!j)
        return;
    job_stop(j);
    pthread_cond_destroy(&j->cond);
    pthread_mutex_destroy(&j->lock);
    free(j);
    r->job = NULL;
}

uint64_t raid_job_step_bytes(const struct raid_priv *r, uint64_t rate)
{
    uint64_t chunk = r->l.g.chunk;
    if (rate && rate < 4 * MiB)
        return chunk;
    return chunk >= MiB ? chunk : MiB / chunk * chunk;
}

/* Progress bookkeeping after a step; then sleep while ahead of the rate limit (a stop wakes
 * the sleep at once). */
static void job_advance(struct raid_job *j, uint64_t pos)
{
    pthread_mutex_lock(&j->lock);
    j->prog.pos = pos;
    double dt = job_now() - j->t0;
    uint64_t done = pos - j->prog.start, rate = j->prog.rate_limit;
    j->prog.rate = dt > 0 ? (double)done / dt : 0;
    j->prog.eta = j->prog.rate > 0 ? (double)(j->prog.end - pos) / j->prog.rate : -1;
    while (rate && !atomic_load(&j->stop)) {
        double wake = j->t0 + (double)done / (double)rate;
        if (wake <= job_now())
            break;
        struct timespec ts = {.tv_sec = (time_t)wake};
        ts.tv_nsec = (long)((wake - (double)ts.tv_sec) * 1e9);
        pthread_cond_timedwait(&j->cond, &j->lock, &ts);
    }
    pthread_mutex_unlock(&j->lock);
}

/* Last act of a job thread: record the result (nothing touches j after this but the return). */
static void job_end(struct raid_priv *r, int err)
{
    struct raid_job *j = r->job;
    raid_range_deactivate(r);
    pthread_mutex_lock(&j->lock);
    j->result = err;
    j->prog.error = err;
    j->prog.state = err ? RK_JOB_FAILED : RK_JOB_DONE;
    j->prog.eta = err ? -1 : 0;
    pthread_cond_broadcast(&j->cond);
    pthread_mutex_unlock(&j->lock);
}

static void *job_thread(void *arg)
{
    struct raid_priv *r = arg;
    struct raid_job *j = r->job;
    pthread_mutex_lock(&j->lock);
    const struct raid_job_ops *ops = j->ops;
    void *ctx = j->ctx;
    uint64_t pos = j->prog.start, end = j->prog.end;
    uint64_t step = raid_job_step_bytes(r, j->prog.rate_limit), ck_pos = pos;
    pthread_mutex_unlock(&j->lock);
    double ck_time = job_now();
    int err = 0;

    if (ops->begin)
        ops->begin(r, ctx, pos, end);
    while (pos < end) {
        if (atomic_load(&j->stop)) {
            err = -EINTR;
            break;
        }
        uint64_t len = end - pos < step ? end - pos : step;
        struct raid_range lk;
        raid_range_lock(r, &lk, pos, len);
        err = ops->step(r, ctx, pos, len);
        raid_range_unlock(r, &lk);
        if (err)
            break;
        pos += len;
        if (ops->checkpoint && pos < end &&
            (job_now() - ck_time >= RAID_JOB_CKPT_SECS || pos - ck_pos >= RAID_JOB_CKPT_BYTES)) {
            ops->checkpoint(r, ctx, pos);
            ck_pos = pos;
            ck_time = job_now();
        }
        job_advance(j, pos);
    }
    if (err == -EINTR && ops->checkpoint)
        ops->checkpoint(r, ctx, pos);
    err = ops->finish(r, ctx, pos, err);
    job_end(r, err);
    return NULL;
}

/* Claim the job slot for spec: -EBUSY while a job runs; reaps a finished thread. */
static int job_claim(struct raid_job *j, const struct raid_job_spec *spec)
{
    pthread_t old;
    bool join = false;
    pthread_mutex_lock(&j->lock);
    if (j->prog.state == RK_JOB_RUNNING) {
        pthread_mutex_unlock(&j->lock);
        return -EBUSY;
    }
    if (j->has_thread) {
        old = j->thread;
        j->has_thread = false;
        join = true;
    }
    /* The last finished scrub's result outlives later jobs. */
    struct rk_raid_progress keep = j->prog;
    memset(&j->prog, 0, sizeof(j->prog));
    j->prog.scrubbed = keep.scrubbed;
    j->prog.last_mismatches = keep.last_mismatches;
    j->prog.last_repaired = keep.last_repaired;
    j->prog.last_errors = keep.last_errors;
    j->prog.last_finished = keep.last_finished;
    j->n_mm = 0;
    j->prog.kind = spec->ops->kind;
    j->prog.state = RK_JOB_RUNNING;
    j->prog.slot = spec->slot;
    j->prog.repair = spec->repair;
    j->prog.start = j->prog.pos = spec->start;
    j->prog.end = spec->end;
    j->prog.rate_limit = spec->rate;
    j->prog.eta = -1;
    j->ops = spec->ops;
    j->ctx = spec->ctx;
    j->result = 0;
    atomic_store(&j->stop, 0);
    j->t0 = job_now();
    pthread_mutex_unlock(&j->lock);
    if (join)
        pthread_join(old, NULL);
    return 0;
}

int raid_job_start(struct raid_priv *r, const struct raid_job_spec *spec)
{
    struct raid_job *j = r->job;
    int ret = job_claim(j, spec);
    if (ret)
        return ret;
    raid_range_activate(r);
    pthread_mutex_lock(&j->lock);
    int rc = pthread_create(&j->thread, NULL, job_thread, r);
    if (rc) {
        j->prog.state = RK_JOB_FAILED;
        j->prog.error = -rc;
        j->ctx = NULL; /* still the caller's */
        raid_range_deactivate(r);
        pthread_cond_broadcast(&j->cond);
    } else {
        j->has_thread = true;
    }
    pthread_mutex_unlock(&j->lock);
    return -rc;
}

void raid_job_count(struct raid_priv *r, uint64_t mismatches, uint64_t repaired,
                    uint64_t bad_ranges)
{
    struct raid_job *j = r->job;
    pthread_mutex_lock(&j->lock);
    j->prog.mismatches += mismatches;
    j->prog.repaired += repaired;
    j->prog.bad_ranges += bad_ranges;
    pthread_mutex_unlock(&j->lock);
}

void raid_job_mismatch(struct raid_priv *r, const struct rk_raid_mismatch *m, bool count)
{
    struct raid_job *j = r->job;
    pthread_mutex_lock(&j->lock);
    if (j->n_mm < RK_RAID_MISMATCH_MAX)
        j->mm[j->n_mm++] = *m;
    if (count && m->fixed != RK_FIX_NONE)
        j->prog.repaired++;
    pthread_mutex_unlock(&j->lock);
}

void raid_job_mismatch_keep(struct raid_priv *r)
{
    struct raid_job *j = r->job;
    pthread_mutex_lock(&j->lock);
    memcpy(j->last_mm, j->mm, sizeof(j->mm[0]) * (size_t)j->n_mm);
    j->n_last_mm = j->n_mm;
    pthread_mutex_unlock(&j->lock);
}

int rk_raid_scrub_mismatches(struct rk_dev *raid, bool last, struct rk_raid_mismatch *out, int max)
{
    struct raid_priv *r = raid_priv_of(raid);
    if (!r || max < 0 || (!out && max > 0))
        return -EINVAL;
    struct raid_job *j = r->job;
    pthread_mutex_lock(&j->lock);
    int n = last ? j->n_last_mm : j->n_mm;
    if (max > 0)
        memcpy(out, last ? j->last_mm : j->mm, sizeof(*out) * (size_t)(n < max ? n : max));
    pthread_mutex_unlock(&j->lock);
    return n;
}

void raid_job_update(struct raid_priv *r, void (*fn)(struct rk_raid_progress *p, void *arg),
                     void *arg)
{
    struct raid_job *j = r->job;
    pthread_mutex_lock(&j->lock);
    fn(&j->prog, arg);
    pthread_mutex_unlock(&j->lock);
}

int raid_job_idle_do(struct raid_priv *r, int (*fn)(struct raid_priv *r, void *arg), void *arg)
{
    struct raid_job *j = r->job;
    pthread_mutex_lock(&j->lock);
    int ret = j->prog.state == RK_JOB_RUNNING ? -EBUSY : fn(r, arg);
    pthread_mutex_unlock(&j->lock);
    return ret;
}

int rk_raid_job_wait(struct rk_dev *raid)
{
    struct raid_priv *r = raid_priv_of(raid);
    return r ? job_wait(r->job) : -EINVAL;
}

void rk_raid_job_stop(struct rk_dev *raid)
{
    struct raid_priv *r = raid_priv_of(raid);
    if (r && r->job)
        job_stop(r->job);
}

int rk_raid_progress(struct rk_dev *raid, struct rk_raid_progress *p)
{
    struct raid_priv *r = raid_priv_of(raid);
    if (!r || !p)
        return -EINVAL;
    pthread_mutex_lock(&r->job->lock);
    *p = r->job->prog;
    pthread_mutex_unlock(&r->job->lock);
    return 0;
}
