/* The cache's flusher thread (dirty blocks written back between the watermarks, at a controlled
 * rate, in backing-offset order, whole stripes first), the drain, and the online mode switch,
 * detach and attach built on it (docs/ARCHITECTURE.md "Cache"). */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cache/cache_int.h"
#include "core/util.h"
#include "raidkit/member.h"

/* Dirty blocks visited per batch (one backing flush and one commit per batch). */
#define FLUSH_BATCH 128

struct flush_ent {
    uint64_t cb, bb;
    uint32_t gen;
    bool done;
};

struct flush_scan {
    struct flush_ent *e;
    size_t n;
};

static void flush_collect(void *ctx, uint64_t cblock, uint64_t bblock)
{
    struct flush_scan *s = ctx;
    if (s->n < FLUSH_BATCH)
        s->e[s->n++] = (struct flush_ent){.cb = cblock, .bb = bblock};
}

static uint64_t flush_dirty(struct rk_cache *c)
{
    struct rk_cache_meta_stats ms;
    rk_cache_meta_stats(c->meta, &ms);
    return ms.dirty;
}

/* Whole stripes first: entries of stripes whose every block is in the batch go first, the rest
 * after, each part in ascending backing order. */
static void flush_order(struct rk_cache *c, struct flush_ent *e, size_t n)
{
    if (c->stripe <= c->bs || c->stripe % c->bs || n < 2)
        return;
    uint64_t per = c->stripe / c->bs;
    struct flush_ent *tmp = malloc(n * sizeof(*tmp));
    bool *whole = calloc(n, sizeof(*whole));
    if (!tmp || !whole) {
        free(tmp);
        free(whole);
        return;
    }
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && e[j].bb / per == e[i].bb / per)
            j++;
        for (size_t k = i; k < j; k++)
            whole[k] = j - i == per;
        i = j;
    }
    size_t m = 0;
    for (int pass = 1; pass >= 0; pass--)
        for (size_t i = 0; i < n; i++)
            if (whole[i] == (bool)pass)
                tmp[m++] = e[i];
    memcpy(e, tmp, n * sizeof(*e));
    free(tmp);
    free(whole);
}

/* Write one dirty block back (its stripe held): read it from the cache, write it to the backing.
 * 0 (done, or nothing to do), -EIO cache failed, other -errno backing failed. */
static int flush_one(struct rk_cache *c, struct flush_ent *e, void *buf)
{
    pthread_mutex_t *m = &c->stripes[e->bb % CACHE_STRIPES];
    pthread_mutex_lock(m);
    pthread_mutex_lock(&c->lock);
    const struct cache_slot *s = &c->slots[e->cb];
    bool still = s->mapped && s->dirty && s->bblock == e->bb;
    e->gen = s->gen;
    pthread_mutex_unlock(&c->lock);
    int r = 0;
    if (still) {
        uint64_t len =
            c->backing->size - e->bb * c->bs < c->bs ? c->backing->size - e->bb * c->bs : c->bs;
        r = rk_dev_read(c->cdev, buf, len, cache_coff(c, e->cb, 0));
        if (r) {
            cache_failed(c, r);
            r = -EIO;
        } else {
            r = rk_dev_write(c->backing, buf, len, e->bb * c->bs, 0);
            if (r)
                rk_err("cache %s: writing back block %" PRIu64 " to the backing failed: %s",
                       c->path, e->bb, strerror(-r));
        }
        e->done = !r;
    }
    pthread_mutex_unlock(m);
    return r;
}

/* Sleep so that bytes written since t0 (ms) stay under rate bytes/s. */
static void flush_pace(uint64_t rate, int64_t t0, uint64_t bytes)
{
    if (!rate)
        return;
    int64_t due = t0 + (int64_t)(bytes * 1000 / rate);
    int64_t now = cache_now_ms();
    if (due > now) {
        struct timespec ts = {.tv_sec = (due - now) / 1000,
                              .tv_nsec = (due - now) % 1000 * 1000000};
        nanosleep(&ts, NULL);
    }
}

/* One batch: scan from the cursor, write back, flush the backing, then mark clean the blocks not
 * written again meanwhile, and commit. Returns blocks cleaned, or -errno. Caller holds c->rw. */
static int flush_batch(struct rk_cache *c, bool limited)
{
    struct flush_ent ents[FLUSH_BATCH];
    struct flush_scan s = {.e = ents};
    rk_cache_meta_dirty_scan(c->meta, c->cursor, FLUSH_BATCH, flush_collect, &s);
    if (s.n < FLUSH_BATCH && c->cursor) {
        c->cursor = 0;
        rk_cache_meta_dirty_scan(c->meta, 0, FLUSH_BATCH - s.n, flush_collect, &s);
    }
    if (!s.n) {
        c->cursor = 0;
        return 0;
    }
    c->cursor = ents[s.n - 1].bb + 1;
    flush_order(c, ents, s.n);
    void *buf = rk_buf_alloc(c->bs);
    if (!buf)
        return -ENOMEM;
    int64_t t0 = cache_now_ms();
    uint64_t bytes = 0;
    int r = 0;
    for (size_t i = 0; i < s.n && !r; i++) {
        r = flush_one(c, &ents[i], buf);
        bytes += ents[i].done ? c->bs : 0;
        if (limited)
            flush_pace(c->rate, t0, bytes);
    }
    free(buf);
    /* Clean only after the backing flushed the data. */
    int f = rk_dev_flush(c->backing);
    if (f)
        return f;
    int cleaned = 0;
    pthread_mutex_lock(&c->lock);
    for (size_t i = 0; i < s.n; i++) {
        struct cache_slot *sl = &c->slots[ents[i].cb];
        if (ents[i].done && sl->mapped && sl->dirty && sl->bblock == ents[i].bb &&
            sl->gen == ents[i].gen) {
            cache_set_dirty(c, ents[i].cb, false);
            cleaned++;
        }
    }
    double secs = (double)(cache_now_ms() - t0) / 1000.0;
    if (bytes && secs > 0)
        c->wb_rate =
            c->wb_rate ? 0.7 * c->wb_rate + 0.3 * ((double)bytes / secs) : (double)bytes / secs;
    pthread_mutex_unlock(&c->lock);
    atomic_fetch_add(&c->wb_bytes, bytes);
    int cr = cache_sync(c);
    return r ? r : cr ? cr : cleaned;
}

/* Does the flusher have work (caller holds c->lock)? Updates the watermark hysteresis. */
static bool flush_needed(struct rk_cache *c)
{
    if (!c->meta || atomic_load(&c->state) == RK_CACHE_STATE_FAILED)
        return false;
    uint64_t d = flush_dirty(c);
    if (c->drain)
        return d > 0;
    if (d > c->high)
        c->active = true;
    if (d <= c->low)
        c->active = false;
    return c->active;
}

static void *flush_thread(void *arg)
{
    struct rk_cache *c = arg;
    pthread_mutex_lock(&c->lock);
    while (!c->stop) {
        if ((c->meta || c->lost) && atomic_load(&c->state) == RK_CACHE_STATE_FAILED &&
            cache_now_ms() - atomic_load(&c->last_probe) >= 1000) {
            /* Automatic recovery: retried once a second. */
            pthread_mutex_unlock(&c->lock);
            /* Not while a mode switch or detach holds ctl (it may wait for us). */
            if (!pthread_mutex_trylock(&c->ctl)) {
                cache_recover(c);
                pthread_mutex_unlock(&c->ctl);
            } else {
                atomic_store(&c->last_probe, cache_now_ms());
            }
            pthread_mutex_lock(&c->lock);
            continue;
        }
        if (!flush_needed(c)) {
            pthread_cond_broadcast(&c->cond);
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += 100 * 1000000;
            if (ts.tv_nsec >= 1000000000) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000;
            }
            pthread_cond_timedwait(&c->cond, &c->lock, &ts);
            continue;
        }
        bool limited = !c->drain;
        pthread_mutex_unlock(&c->lock);
        pthread_rwlock_rdlock(&c->rw);
        int r = c->meta ? flush_batch(c, limited) : 0;
        pthread_rwlock_unlock(&c->rw);
        pthread_mutex_lock(&c->lock);
        c->drain_err = r < 0 ? r : 0;
        pthread_cond_broadcast(&c->cond);
        if (r < 0) {
            /* Back off; a drain waiting for us sees the error. */
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_sec += 1;
            pthread_cond_timedwait(&c->cond, &c->lock, &ts);
        }
    }
    pthread_mutex_unlock(&c->lock);
    return NULL;
}

int cache_flusher_start(struct rk_cache *c)
{
    int r = pthread_create(&c->thread, NULL, flush_thread, c);
    if (r)
        return -r;
    c->thread_started = true;
    return 0;
}

void cache_flusher_stop(struct rk_cache *c)
{
    if (!c->thread_started)
        return;
    pthread_mutex_lock(&c->lock);
    c->stop = true;
    pthread_cond_broadcast(&c->cond);
    pthread_mutex_unlock(&c->lock);
    pthread_join(c->thread, NULL);
    c->thread_started = false;
}

int cache_drain(struct rk_cache *c)
{
    pthread_mutex_lock(&c->lock);
    c->drain++;
    c->drain_err = 0;
    pthread_cond_broadcast(&c->cond);
    int r = 0;
    while (flush_dirty(c) > 0) {
        if (atomic_load(&c->state) == RK_CACHE_STATE_FAILED || c->drain_err) {
            r = -EIO;
            break;
        }
        pthread_cond_wait(&c->cond, &c->lock);
    }
    c->drain--;
    pthread_mutex_unlock(&c->lock);
    return r;
}

int rk_cache_set_mode(struct rk_cache *c, enum rk_cache_mode mode, char *err, size_t errlen)
{
    pthread_mutex_lock(&c->ctl);
    int st = atomic_load(&c->state);
    int r = 0;
    if (!c->meta || st != RK_CACHE_STATE_OK) {
        rk_set_err(err, errlen, "no working cache device attached (state %s)",
                   rk_cache_state_name(st));
        r = -ENODEV;
        goto out;
    }
    int old = atomic_exchange(&c->mode, mode);
    if (old == RK_CACHE_WRITEBACK && mode != RK_CACHE_WRITEBACK) {
        rk_info("cache %s: writing back dirty blocks before leaving writeback", c->path);
        r = cache_drain(c);
        if (r) {
            rk_set_err(err, errlen,
                       "cache %s: writing back the dirty blocks failed; mode %s in "
                       "memory, writeback still recorded",
                       c->path, rk_cache_mode_name(mode));
            goto out;
        }
    }
    r = rk_cache_meta_set_mode(c->meta, mode);
    if (r)
        rk_set_err(err, errlen, "cache %s: recording mode %s: %s", c->path,
                   rk_cache_mode_name(mode), strerror(-r));
    else
        rk_info("cache %s: mode %s (was %s)", c->path, rk_cache_mode_name(mode),
                rk_cache_mode_name(old));
out:
    pthread_mutex_unlock(&c->ctl);
    return r;
}

/* Detach a failed cache without dirty blocks, or finish a drained detach: with c->rw held for
 * writing (no request in flight), flush the backing, drop every mapping, record mode none,
 * commit, close. */
static int detach_finish(struct rk_cache *c, char *err, size_t errlen)
{
    int r = rk_dev_flush(c->backing);
    if (r) {
        rk_set_err(err, errlen, "detach: flushing the backing failed: %s", strerror(-r));
        return r;
    }
    if (atomic_load(&c->state) != RK_CACHE_STATE_FAILED) {
        pthread_mutex_lock(&c->lock);
        for (uint64_t i = 0; i < c->blocks; i++)
            if (c->slots[i].mapped)
                cache_unmap(c, i);
        pthread_mutex_unlock(&c->lock);
        r = rk_cache_meta_set_mode(c->meta, RK_CACHE_NONE);
        if (!r)
            r = cache_sync(c);
        if (r) {
            rk_set_err(err, errlen, "detach: recording it on cache %s failed: %s", c->path,
                       strerror(-r));
            return r;
        }
    }
    rk_info("cache %s detached", c->path);
    cache_unload(c);
    return 0;
}

int rk_cache_detach(struct rk_cache *c, char *err, size_t errlen)
{
    pthread_mutex_lock(&c->ctl);
    int r = 0;
    int st = atomic_load(&c->state);
    if (!c->meta) {
        rk_set_err(err, errlen, "no cache attached");
        r = -ENODEV;
        goto out;
    }
    if (st == RK_CACHE_STATE_FAILED) {
        if (flush_dirty(c)) {
            rk_set_err(err, errlen,
                       "cache %s failed and holds %" PRIu64 " dirty blocks: not detached (make it "
                       "readable again, then `cache attach %s`)",
                       c->path, flush_dirty(c), c->path);
            r = -EIO;
            goto out;
        }
    } else {
        atomic_store(&c->state, RK_CACHE_STATE_DETACHING);
        rk_info("cache %s: detaching: writing back dirty blocks", c->path);
        r = cache_drain(c);
        if (r) {
            int d = RK_CACHE_STATE_DETACHING;
            atomic_compare_exchange_strong(&c->state, &d, RK_CACHE_STATE_OK);
            rk_set_err(err, errlen, "detach: writing back the dirty blocks of %s failed", c->path);
            goto out;
        }
    }
    pthread_rwlock_wrlock(&c->rw);
    r = flush_dirty(c) && atomic_load(&c->state) != RK_CACHE_STATE_FAILED ? -EAGAIN : 0;
    if (!r)
        r = detach_finish(c, err, errlen);
    else
        rk_set_err(err, errlen, "detach: blocks became dirty meanwhile; retry");
    if (r && atomic_load(&c->state) == RK_CACHE_STATE_DETACHING)
        atomic_store(&c->state, RK_CACHE_STATE_OK);
    pthread_rwlock_unlock(&c->rw);
out:
    pthread_mutex_unlock(&c->ctl);
    return r;
}

int rk_cache_attach(struct rk_cache *c, const char *path, uint32_t file_flags, char *err,
                    size_t errlen)
{
    pthread_mutex_lock(&c->ctl);
    int r = 0;
    int st = atomic_load(&c->state);
    if (st == RK_CACHE_STATE_FAILED) {
        if (strcmp(path, c->path)) {
            rk_set_err(err, errlen, "cache %s failed; attach it again (%s) to retry it", c->path,
                       c->path);
            r = -EBUSY;
            goto out;
        }
        if (cache_recover(c)) {
            rk_set_err(err, errlen, "cache %s is still failing", c->path);
            r = -EIO;
        }
        goto out;
    }
    if (c->meta) {
        rk_set_err(err, errlen, "cache %s is attached (%s); detach it first", c->path,
                   rk_cache_state_name(st));
        r = -EBUSY;
        goto out;
    }
    struct rk_dev *cdev = NULL;
    r = rk_file_open(path, file_flags, &cdev);
    if (r) {
        rk_set_err(err, errlen, "cache device %s: %s", path, strerror(-r));
        goto out;
    }
    if (cdev->block_size > c->dev->block_size) {
        rk_set_err(err, errlen, "cache device %s has %u-byte blocks, the volume serves %u", path,
                   cdev->block_size, c->dev->block_size);
        rk_dev_close(cdev);
        r = -EINVAL;
        goto out;
    }
    pthread_rwlock_wrlock(&c->rw);
    r = cache_load(c, cdev, path, true, err, errlen);
    if (r)
        rk_dev_close(cdev);
    if (!r && flush_dirty(c)) {
        rk_set_err(err, errlen,
                   "cache %s holds %" PRIu64 " dirty blocks of an earlier session, older than "
                   "what the array got since; refusing to attach it",
                   path, flush_dirty(c));
        cache_unload(c);
        r = -EBUSY;
    }
    pthread_rwlock_unlock(&c->rw);
    if (!r)
        rk_info("cache %s attached (%s)", path, rk_cache_mode_name(atomic_load(&c->mode)));
out:
    pthread_mutex_unlock(&c->ctl);
    return r;
}
