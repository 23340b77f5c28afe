/* Background jobs of a raid device (one at a time: a rebuild or a scrub) and the rebuild driver:
 * walk the slot's data area in steps, reconstruct each under the range lock, write, checkpoint. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/util.h"
#include "raid/rangelock.h"

#define MiB (1024ull * 1024ull)
/* Checkpoint the rebuild offset at least this often (seconds) and every this many bytes. */
#define REBUILD_CKPT_SECS  1.0
#define REBUILD_CKPT_BYTES (256 * MiB)
/* Consecutive unreadable bytes after which the sources count as gone. */
#define REBUILD_MAX_BAD_RUN (4 * MiB)

static struct raid_priv *job_priv(struct rk_dev *raid)
{
    /* rk_raid_geometry answers only for raid devices, so priv is a raid_priv then. */
    return rk_raid_geometry(raid) ? raid->priv : NULL;
}

/* Bytes per step: whole chunks, about 1 MiB, smaller when a low rate limit asks for it. */
static uint64_t job_step(const struct raid_priv *r, uint64_t rate)
{
    uint64_t chunk = r->l.g.chunk;
    if (rate && rate < 4 * MiB)
        return chunk;
    return chunk >= MiB ? chunk : MiB / chunk * chunk;
}

/* Progress bookkeeping after a step; then sleep while ahead of the rate limit. */
static void job_advance(struct raid_priv *r, uint64_t pos)
{
    struct raid_mgmt *m = r->mgmt;
    pthread_mutex_lock(&m->lock);
    m->prog.pos = pos;
    double dt = raid_now() - m->t0;
    uint64_t done = pos - m->prog.start, rate = m->prog.rate_limit;
    m->prog.rate = dt > 0 ? (double)done / dt : 0;
    m->prog.eta = m->prog.rate > 0 ? (double)(m->prog.end - pos) / m->prog.rate : -1;
    pthread_mutex_unlock(&m->lock);
    while (rate && !atomic_load(&m->stop)) {
        double ahead = (double)done / (double)rate - (raid_now() - m->t0);
        if (ahead <= 0)
            break;
        usleep((useconds_t)((ahead < 0.05 ? ahead : 0.05) * 1e6) + 1);
    }
}

/* Claim the job slot: -EBUSY while a job runs; reaps a finished thread. Leaves prog reset. */
static int job_begin(struct raid_priv *r, int kind, uint64_t start, uint64_t end, uint64_t rate)
{
    struct raid_mgmt *m = r->mgmt;
    pthread_t old;
    bool join = false;
    pthread_mutex_lock(&m->lock);
    if (m->prog.state == RK_JOB_RUNNING) {
        pthread_mutex_unlock(&m->lock);
        return -EBUSY;
    }
    if (m->has_thread) {
        old = m->thread;
        m->has_thread = false;
        join = true;
    }
    struct rk_raid_progress keep = m->prog;
    memset(&m->prog, 0, sizeof(m->prog));
    m->prog.scrubbed = keep.scrubbed;
    m->prog.last_mismatches = keep.last_mismatches;
    m->prog.last_repaired = keep.last_repaired;
    m->prog.last_errors = keep.last_errors;
    m->prog.last_finished = keep.last_finished;
    m->prog.kind = kind;
    m->prog.state = RK_JOB_RUNNING;
    m->prog.start = m->prog.pos = start;
    m->prog.end = end;
    m->prog.rate_limit = rate;
    m->prog.eta = -1;
    m->result = 0;
    atomic_store(&m->stop, 0);
    m->t0 = raid_now();
    pthread_mutex_unlock(&m->lock);
    if (join)
        pthread_join(old, NULL);
    return 0;
}

static int job_spawn(struct raid_priv *r, void *(*fn)(void *))
{
    struct raid_mgmt *m = r->mgmt;
    raid_mgmt_activate(r);
    pthread_mutex_lock(&m->lock);
    int rc = pthread_create(&m->thread, NULL, fn, r);
    if (rc) {
        m->prog.state = RK_JOB_FAILED;
        m->prog.error = -rc;
        atomic_store(&m->active, 0);
    } else {
        m->has_thread = true;
    }
    pthread_mutex_unlock(&m->lock);
    return -rc;
}

/* Last act of a job thread: record the result (nothing touches m after this but the return). */
static void job_end(struct raid_priv *r, int err)
{
    struct raid_mgmt *m = r->mgmt;
    atomic_store(&m->active, 0);
    pthread_mutex_lock(&m->lock);
    m->result = err;
    m->prog.error = err;
    m->prog.state = err ? RK_JOB_FAILED : RK_JOB_DONE;
    m->prog.eta = err ? -1 : 0;
    if (m->prog.kind == RK_JOB_SCRUB && !err) {
        m->prog.scrubbed = true;
        m->prog.last_mismatches = m->prog.mismatches;
        m->prog.last_repaired = m->prog.repaired;
        m->prog.last_errors = m->prog.bad_ranges;
        m->prog.last_finished = (int64_t)time(NULL);
    }
    pthread_mutex_unlock(&m->lock);
}

/* Flush the target and persist the checkpoint. */
static void rebuild_checkpoint(struct raid_priv *r, uint32_t slot, uint64_t pos)
{
    if (rk_dev_flush(r->members[slot]))
        return; /* not durable: keep the older checkpoint */
    if (r->ev.rebuild_checkpoint)
        r->ev.rebuild_checkpoint(r->ev.ctx, slot, pos);
}

/* Reconstruct and write one step; unreadable chunks are recorded and skipped (their bytes
 * added to *bad). Returns 0, -ENODEV (no source left), or the target's write error. */
static int rebuild_step(struct raid_priv *r, uint32_t slot, uint64_t pos, uint64_t len, char *buf,
                        uint64_t *bad)
{
    const struct raid_level *lvl = r->l.lvl;
    struct rk_dev *dst = r->members[slot];
    uint64_t doff = r->l.g.data_offset, chunk = r->l.g.chunk;
    int rc = lvl->reconstruct(r, slot, pos, len, buf);
    if (!rc)
        return rk_dev_write(dst, buf, len, doff + pos, 0);
    if (rc != -EIO)
        return rc;
    /* Narrow the failure down to chunks: the rest of the step is still rebuilt. */
    for (uint64_t o = pos; o < pos + len; o += chunk) {
        rc = lvl->reconstruct(r, slot, o, chunk, buf);
        if (!rc) {
            rc = rk_dev_write(dst, buf, chunk, doff + o, 0);
            if (rc)
                return rc;
            continue;
        }
        if (rc != -EIO)
            return rc;
        *bad += chunk;
        if (raid_bad_add(r, slot, o, chunk))
            return -EIO; /* too many bad ranges to track */
        pthread_mutex_lock(&r->mgmt->lock);
        r->mgmt->prog.bad_ranges++;
        pthread_mutex_unlock(&r->mgmt->lock);
    }
    return 0;
}

static void *rebuild_thread(void *arg)
{
    struct raid_priv *r = arg;
    struct raid_mgmt *m = r->mgmt;
    uint32_t slot = m->prog.slot;
    uint64_t pos = m->prog.start, end = m->prog.end;
    uint64_t step = job_step(r, m->prog.rate_limit), ck_pos = pos, bad_run = 0;
    double ck_time = raid_now();
    char *buf = rk_buf_alloc(step);
    int err = buf ? 0 : -ENOMEM;

    rk_info("rebuild of slot %u started at data offset %llu of %llu", slot, (unsigned long long)pos,
            (unsigned long long)end);
    while (!err && pos < end) {
        if (atomic_load(&m->stop)) {
            err = -EINTR;
            break;
        }
        if (atomic_load(&r->state[slot]) != RK_SLOT_REBUILDING) {
            rk_err("rebuild of slot %u: the slot failed; rebuild abandoned", slot);
            err = -EIO;
            break;
        }
        uint64_t len = end - pos < step ? end - pos : step;
        struct raid_range lk;
        raid_range_lock(r, &lk, pos, len);
        uint64_t bad = 0;
        int rc = rebuild_step(r, slot, pos, len, buf, &bad);
        raid_range_unlock(r, &lk);
        /* A source that fails every read for this long is gone, not a few bad sectors: stop
         * instead of recording the rest of the slot as unreadable. */
        bad_run = bad == len ? bad_run + bad : 0;
        if (!rc && bad_run >= REBUILD_MAX_BAD_RUN)
            rc = -ENODEV;
        if (rc == -ENODEV) {
            rk_err("rebuild of slot %u: no live source left at data offset %llu; the array is "
                   "offline",
                   slot, (unsigned long long)pos);
            err = rc;
            break;
        }
        if (rc) {
            rk_err("rebuild of slot %u: writing the new member failed: %s", slot, strerror(-rc));
            raid_fail(r, slot, rc);
            err = rc;
            break;
        }
        pos += len;
        if (pos < end &&
            (raid_now() - ck_time >= REBUILD_CKPT_SECS || pos - ck_pos >= REBUILD_CKPT_BYTES)) {
            rebuild_checkpoint(r, slot, pos);
            ck_pos = pos;
            ck_time = raid_now();
        }
        job_advance(r, pos);
    }
    free(buf);
    if (!err) {
        err = rk_dev_flush(r->members[slot]);
        int want = RK_SLOT_REBUILDING;
        if (!err && !atomic_compare_exchange_strong(&r->state[slot], &want, RK_SLOT_ACTIVE))
            err = -EIO;
        if (!err)
            rk_info("rebuild of slot %u complete%s", slot,
                    atomic_load(&m->nbad) ? " (with unreadable ranges, see status)" : "");
    } else if (err == -EINTR) {
        rebuild_checkpoint(r, slot, pos);
        rk_info("rebuild of slot %u stopped at data offset %llu (checkpointed)", slot,
                (unsigned long long)pos);
    }
    if (r->ev.rebuild_done)
        r->ev.rebuild_done(r->ev.ctx, slot, err);
    job_end(r, err);
    return NULL;
}

int rk_raid_add_member(struct rk_dev *raid, uint32_t slot, struct rk_dev *member)
{
    struct raid_priv *r = job_priv(raid);
    if (!r || !member || slot >= r->l.g.members)
        return -EINVAL;
    if (!r->l.lvl->reconstruct)
        return -EOPNOTSUPP;
    const struct rk_raid_geom *g = &r->l.g;
    if (member->size < g->data_offset || member->size - g->data_offset < g->data_size[slot] ||
        member->block_size > raid->block_size || g->data_offset % member->block_size)
        return -EINVAL;
    struct raid_mgmt *m = r->mgmt;
    int ret = 0;
    pthread_mutex_lock(&m->lock);
    pthread_mutex_lock(&r->fail_lock);
    int s = atomic_load(&r->state[slot]);
    if (m->prog.state == RK_JOB_RUNNING || (s != RK_SLOT_FAILED && s != RK_SLOT_MISSING)) {
        ret = -EBUSY;
    } else {
        r->members[slot] = member;
        atomic_store(&r->state[slot], RK_SLOT_REBUILDING);
    }
    pthread_mutex_unlock(&r->fail_lock);
    pthread_mutex_unlock(&m->lock);
    /* The slot's new contents come from its rebuild: ranges the last one could not
     * reconstruct say nothing about them (the slot serves no reads until then). */
    if (!ret)
        raid_bad_drop(r, slot);
    return ret;
}

int rk_raid_rebuild_start(struct rk_dev *raid, uint32_t slot, uint64_t from, uint64_t rate)
{
    struct raid_priv *r = job_priv(raid);
    if (!r || slot >= r->l.g.members)
        return -EINVAL;
    if (!r->l.lvl->reconstruct)
        return -EOPNOTSUPP;
    if (atomic_load(&r->state[slot]) != RK_SLOT_REBUILDING || !r->members[slot])
        return -EBUSY;
    uint64_t end = raid_job_end(r);
    from -= from % r->l.g.chunk;
    if (from > end)
        from = end;
    int ret = job_begin(r, RK_JOB_REBUILD, from, end, rate);
    if (ret)
        return ret;
    pthread_mutex_lock(&r->mgmt->lock);
    r->mgmt->prog.slot = slot;
    pthread_mutex_unlock(&r->mgmt->lock);
    return job_spawn(r, rebuild_thread);
}

int rk_raid_scrub_start(struct rk_dev *raid, bool repair, uint64_t rate)
{
    struct raid_priv *r = job_priv(raid);
    if (!r)
        return -EINVAL;
    int ret = job_begin(r, RK_JOB_SCRUB, 0, raid_job_end(r), rate);
    if (ret)
        return ret;
    pthread_mutex_lock(&r->mgmt->lock);
    r->mgmt->prog.repair = repair;
    pthread_mutex_unlock(&r->mgmt->lock);
    return job_spawn(r, raid_scrub_thread);
}

uint64_t raid_job_step(const struct raid_priv *r, uint64_t rate)
{
    return job_step(r, rate);
}

void raid_job_advance(struct raid_priv *r, uint64_t pos)
{
    job_advance(r, pos);
}

void raid_job_finish(struct raid_priv *r, int err)
{
    job_end(r, err);
}

int rk_raid_job_wait(struct rk_dev *raid)
{
    struct raid_priv *r = job_priv(raid);
    if (!r)
        return -EINVAL;
    struct raid_mgmt *m = r->mgmt;
    pthread_t t;
    bool join = false;
    pthread_mutex_lock(&m->lock);
    if (m->has_thread) {
        t = m->thread;
        m->has_thread = false;
        join = true;
    }
    pthread_mutex_unlock(&m->lock);
    if (join)
        pthread_join(t, NULL);
    pthread_mutex_lock(&m->lock);
    /* Another waiter may have claimed the thread: wait for the job's own end. */
    int ret = m->prog.state == RK_JOB_RUNNING ? -EBUSY : m->result;
    pthread_mutex_unlock(&m->lock);
    while (ret == -EBUSY) {
        usleep(10000);
        pthread_mutex_lock(&m->lock);
        ret = m->prog.state == RK_JOB_RUNNING ? -EBUSY : m->result;
        pthread_mutex_unlock(&m->lock);
    }
    return ret;
}

void rk_raid_job_stop(struct rk_dev *raid)
{
    struct raid_priv *r = job_priv(raid);
    if (!r || !r->mgmt)
        return;
    atomic_store(&r->mgmt->stop, 1);
    rk_raid_job_wait(raid);
}

int rk_raid_progress(struct rk_dev *raid, struct rk_raid_progress *p)
{
    struct raid_priv *r = job_priv(raid);
    if (!r || !p)
        return -EINVAL;
    pthread_mutex_lock(&r->mgmt->lock);
    *p = r->mgmt->prog;
    pthread_mutex_unlock(&r->mgmt->lock);
    return 0;
}

int rk_raid_bad_ranges(struct rk_dev *raid, struct rk_raid_bad_range *out, int max)
{
    struct raid_priv *r = job_priv(raid);
    if (!r)
        return -EINVAL;
    struct raid_mgmt *m = r->mgmt;
    int total = 0;
    pthread_mutex_lock(&m->lock);
    int n = atomic_load(&m->nbad);
    for (int i = 0; i < n; i++) {
        const struct rk_raid_bad_range *b = &m->bad[i];
        /* Dropped entries and those of a failed slot (never read again; a replace drops them)
         * are not reported, so they do not reach the superblock. */
        if (b->slot == RAID_BAD_DEAD || atomic_load(&r->state[b->slot]) == RK_SLOT_FAILED)
            continue;
        if (total < max)
            out[total] = *b;
        total++;
    }
    pthread_mutex_unlock(&m->lock);
    return total;
}

int rk_raid_add_bad_range(struct rk_dev *raid, uint32_t slot, uint64_t member_off, uint64_t len)
{
    struct raid_priv *r = job_priv(raid);
    if (!r || slot >= r->l.g.members || !len || member_off > r->l.g.data_size[slot] ||
        len > r->l.g.data_size[slot] - member_off)
        return -EINVAL;
    return raid_bad_add(r, slot, member_off, len);
}
