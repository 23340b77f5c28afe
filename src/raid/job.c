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

/* Ring of claimed steps: workers may run ahead of the oldest unfinished step by this many. */
#define JOB_RING (2 * RAID_JOB_DEPTH_MAX)

/* The largest step ops->step_mul makes (a step of one chunk may still be larger). */
#define RAID_JOB_PIPE_STEP (4 * MiB)

/* No rate is reported before a job has run this long: its first steps go at the speed of a
 * burst (the page cache, a rate limit not slept off yet) and would promise a false ETA. */
#define JOB_RATE_MIN_SECS 1.0

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
    double t0;    /* monotonic start of the job */
    bool no_rate; /* the job reads nothing (raid_job_no_rate): no data rate to report */
    /* Scrub mismatch locations of the running job and of the last finished scrub. */
    struct rk_raid_mismatch mm[RK_RAID_MISMATCH_MAX], last_mm[RK_RAID_MISMATCH_MAX];
    int n_mm, n_last_mm;
    /* Steps in flight of a job with ops->depth > 1 (job_pipe): a ring of claimed steps in
     * claim order (head = the oldest not yet popped by the job thread). */
    pthread_cond_t pcond; /* a step ended, a worker left, or ring room was made */
    uint64_t p_next, p_end, p_step;
    uint64_t p_pos[JOB_RING], p_len[JOB_RING];
    bool p_done[JOB_RING];
    uint32_t p_head, p_n, p_window, p_workers;
    int p_err; /* the first step error: no step is claimed after it */
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
    pthread_cond_init(&j->pcond, &ca);
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
    pthread_cond_destroy(&j->pcond);
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

/* The job's rate over [start, pos) since it started, in bytes/s: 0 (none to report) before
 * JOB_RATE_MIN_SECS or when it reads nothing; never above its rate limit (the step just done is
 * slept off after this is measured). Called with j->lock held. */
static double job_rate(struct raid_job *j, uint64_t pos)
{
    double dt = job_now() - j->t0;
    if (j->no_rate || dt < JOB_RATE_MIN_SECS)
        return 0;
    double rate = (double)(pos - j->prog.start) / dt;
    uint64_t limit = j->prog.rate_limit;
    return limit && rate > (double)limit ? (double)limit : rate;
}

/* Progress bookkeeping once [start, pos) is done. Called with j->lock held. */
static void job_progress(struct raid_job *j, uint64_t pos)
{
    j->prog.pos = pos;
    j->prog.rate = job_rate(j, pos);
    j->prog.eta = j->prog.rate > 0 ? (double)(j->prog.end - pos) / j->prog.rate : -1;
}

/* Sleep (j->lock held) while done bytes are ahead of the rate limit; a stop wakes it at once.
 * Returns true when it slept (the caller re-checks what may have changed meanwhile). */
static bool job_rate_wait(struct raid_job *j, uint64_t done)
{
    uint64_t rate = j->prog.rate_limit;
    bool slept = false;
    while (rate && !atomic_load(&j->stop)) {
        double wake = j->t0 + (double)done / (double)rate;
        if (wake <= job_now())
            break;
        struct timespec ts = {.tv_sec = (time_t)wake};
        ts.tv_nsec = (long)((wake - (double)ts.tv_sec) * 1e9);
        pthread_cond_timedwait(&j->cond, &j->lock, &ts);
        slept = true;
    }
    return slept;
}

/* Progress bookkeeping after a step; then sleep while ahead of the rate limit (a stop wakes
 * the sleep at once). */
static void job_advance(struct raid_job *j, uint64_t pos)
{
    pthread_mutex_lock(&j->lock);
    job_progress(j, pos);
    job_rate_wait(j, pos - j->prog.start);
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
    j->prog.rate = job_rate(j, j->prog.pos); /* over the whole job, its sleeps included */
    j->prog.eta = err ? -1 : 0;
    pthread_cond_broadcast(&j->cond);
    pthread_mutex_unlock(&j->lock);
}

/* When a checkpoint is due at pos (ck_*: the last one). */
static bool job_ckpt_due(const struct raid_job_ops *ops, uint64_t pos, uint64_t end,
                         uint64_t ck_pos, double ck_time)
{
    return ops->checkpoint && pos < end &&
           (job_now() - ck_time >= RAID_JOB_CKPT_SECS || pos - ck_pos >= RAID_JOB_CKPT_BYTES);
}

/* One step after another on the job thread, from *pos to end; *pos = where it stopped.
 * Returns 0, -EINTR (stopped) or the step's error. */
static int job_serial(struct raid_priv *r, const struct raid_job_ops *ops, void *ctx,
                      uint64_t *posp, uint64_t end, uint64_t step)
{
    struct raid_job *j = r->job;
    uint64_t pos = *posp, ck_pos = pos;
    double ck_time = job_now();
    int err = 0;
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
        if (ops->done)
            ops->done(r, ctx, pos);
        if (job_ckpt_due(ops, pos, end, ck_pos, ck_time)) {
            ops->checkpoint(r, ctx, pos);
            ck_pos = pos;
            ck_time = job_now();
        }
        job_advance(j, pos);
    }
    *posp = pos;
    return err;
}

/* A worker of a pipelined job (job_pipe): claim the next step in order (within the ring's
 * window, after the rate limit's sleep), lock its range, run it, mark it done; until the end,
 * a stop or a step error. */
static void *job_worker(void *arg)
{
    struct raid_priv *r = arg;
    struct raid_job *j = r->job;
    pthread_mutex_lock(&j->lock);
    const struct raid_job_ops *ops = j->ops;
    void *ctx = j->ctx;
    while (!atomic_load(&j->stop) && !j->p_err && j->p_next < j->p_end) {
        if (j->p_n >= j->p_window) {
            pthread_cond_wait(&j->pcond, &j->lock);
            continue;
        }
        if (job_rate_wait(j, j->p_next - j->prog.start))
            continue;
        uint32_t k = (j->p_head + j->p_n++) % JOB_RING;
        uint64_t pos = j->p_next, len = j->p_end - pos < j->p_step ? j->p_end - pos : j->p_step;
        j->p_pos[k] = pos;
        j->p_len[k] = len;
        j->p_done[k] = false;
        j->p_next += len;
        pthread_mutex_unlock(&j->lock);
        struct raid_range lk;
        raid_range_lock(r, &lk, pos, len);
        int err = ops->step(r, ctx, pos, len);
        raid_range_unlock(r, &lk);
        pthread_mutex_lock(&j->lock);
        if (err && !j->p_err)
            j->p_err = err; /* the step stays not done: the job's position stops before it */
        j->p_done[k] = !err;
        pthread_cond_broadcast(&j->pcond);
    }
    j->p_workers--;
    pthread_cond_broadcast(&j->pcond);
    pthread_mutex_unlock(&j->lock);
    return NULL;
}

/* Start up to ops->depth workers over [*posp, end). Returns the number started (0: none). */
static uint32_t job_pipe_start(struct raid_priv *r, const struct raid_job_ops *ops, uint64_t pos,
                               uint64_t end, uint64_t step, pthread_t *th)
{
    struct raid_job *j = r->job;
    uint32_t depth = ops->depth < RAID_JOB_DEPTH_MAX ? ops->depth : RAID_JOB_DEPTH_MAX, n = 0;
    pthread_mutex_lock(&j->lock);
    j->p_next = pos;
    j->p_end = end;
    j->p_step = step;
    j->p_head = j->p_n = j->p_workers = 0;
    j->p_window = 2 * depth;
    j->p_err = 0;
    for (uint32_t i = 0; i < depth; i++) {
        j->p_workers++;
        if (pthread_create(&th[n], NULL, job_worker, r)) {
            j->p_workers--;
            break;
        }
        n++;
    }
    pthread_mutex_unlock(&j->lock);
    return n;
}

/* Several steps in flight (ops->depth > 1): workers run the steps, this thread pops them in
 * claim order and, for each advance of the position (every step before it done), calls
 * ops->done, a due checkpoint and the progress update, so a checkpoint never claims a step
 * that is still running. *posp = the position reached. Returns 0, -EINTR, a step's error,
 * or -EAGAIN when no worker could be started (nothing was done). */
static int job_pipe(struct raid_priv *r, const struct raid_job_ops *ops, void *ctx, uint64_t *posp,
                    uint64_t end, uint64_t step)
{
    struct raid_job *j = r->job;
    pthread_t th[RAID_JOB_DEPTH_MAX];
    uint32_t nth = job_pipe_start(r, ops, *posp, end, step, th);
    if (!nth)
        return -EAGAIN;
    uint64_t pos = *posp, ck_pos = pos;
    double ck_time = job_now();
    pthread_mutex_lock(&j->lock);
    for (;;) {
        uint64_t npos = pos;
        while (j->p_n && j->p_done[j->p_head]) {
            npos = j->p_pos[j->p_head] + j->p_len[j->p_head];
            j->p_head = (j->p_head + 1) % JOB_RING;
            j->p_n--;
        }
        if (npos == pos) {
            if (!j->p_workers)
                break;
            pthread_cond_wait(&j->pcond, &j->lock);
            continue;
        }
        pthread_cond_broadcast(&j->pcond); /* ring room */
        pthread_mutex_unlock(&j->lock);
        pos = npos;
        if (ops->done)
            ops->done(r, ctx, pos);
        if (job_ckpt_due(ops, pos, end, ck_pos, ck_time)) {
            ops->checkpoint(r, ctx, pos);
            ck_pos = pos;
            ck_time = job_now();
        }
        pthread_mutex_lock(&j->lock);
        job_progress(j, pos);
    }
    int err = j->p_err;
    pthread_mutex_unlock(&j->lock);
    for (uint32_t i = 0; i < nth; i++)
        pthread_join(th[i], NULL);
    *posp = pos;
    return err ? err : pos < end ? -EINTR : 0;
}

static void *job_thread(void *arg)
{
    struct raid_priv *r = arg;
    struct raid_job *j = r->job;
    pthread_mutex_lock(&j->lock);
    const struct raid_job_ops *ops = j->ops;
    void *ctx = j->ctx;
    uint64_t pos = j->prog.start, end = j->prog.end, rate = j->prog.rate_limit;
    uint64_t step = raid_job_step_bytes(r, rate);
    pthread_mutex_unlock(&j->lock);
    int err = -EAGAIN;
    /* ops->begin ran in raid_job_start */
    if (ops->depth > 1 && pos < end) {
        /* step_mul x step, but no more than RAID_JOB_PIPE_STEP (large chunks: one chunk). */
        uint64_t mul = ops->step_mul && (!rate || rate >= 4 * MiB) ? ops->step_mul : 1;
        while (mul > 1 && step * mul > RAID_JOB_PIPE_STEP)
            mul--;
        err = job_pipe(r, ops, ctx, &pos, end, step * mul);
    }
    if (err == -EAGAIN)
        err = job_serial(r, ops, ctx, &pos, end, step);
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
    j->prog.last_uncompared = keep.last_uncompared;
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
    j->no_rate = false;
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
    /* Before the thread and before this returns: the job's "started" line (and a scrub's note
     * that it has nothing to compare) comes before any progress a caller prints. */
    if (spec->ops->begin)
        spec->ops->begin(r, spec->ctx, spec->start, spec->end);
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

void raid_job_no_rate(struct raid_priv *r)
{
    struct raid_job *j = r->job;
    pthread_mutex_lock(&j->lock);
    j->no_rate = true;
    j->prog.rate = 0;
    pthread_mutex_unlock(&j->lock);
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
