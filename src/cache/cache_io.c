/* The cache layer's data path: read (hits from the cache device, misses from the backing, then
 * admission and fill), write per mode, discard / write-zeroes, flush (docs/ARCHITECTURE.md
 * "Cache": what is durable before what). Every request holds the stripes of the cache blocks it
 * covers for its whole duration, so a read miss never fills a block that a bypassing write is
 * changing, and the flusher never reads a block a write is changing. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cache/cache_int.h"
#include "core/util.h"

/* Cache-device I/O of len bytes at device offset coff, through a bounce buffer when ptr is not
 * 4 KiB aligned (O_DIRECT cache devices). 0 or -errno (not yet reported to cache_failed). */
static int cio_cdev(struct rk_cache *c, bool write, void *ptr, uint64_t len, uint64_t coff)
{
    if (((uintptr_t)ptr & 4095) == 0)
        return write ? rk_dev_write(c->cdev, ptr, len, coff, 0)
                     : rk_dev_read(c->cdev, ptr, len, coff);
    void *b = rk_buf_alloc(len);
    if (!b)
        return -ENOMEM;
    int r;
    if (write) {
        memcpy(b, ptr, len);
        r = rk_dev_write(c->cdev, b, len, coff, 0);
    } else {
        r = rk_dev_read(c->cdev, b, len, coff);
        if (!r)
            memcpy(ptr, b, len);
    }
    free(b);
    return r;
}

/* One cache block's part of a request. */
struct cio_blk {
    uint64_t b;    /* backing block */
    uint64_t in;   /* offset in the block */
    uint64_t n;    /* bytes */
    uint64_t boff; /* offset in the request */
};

/* Iterate over the cache blocks of [off, off + len): false at the end, else *k is the part at
 * request offset *pos, and *pos moves past it. */
static bool cio_next(const struct rk_cache *c, uint64_t off, uint64_t len, uint64_t *pos,
                     struct cio_blk *k)
{
    if (*pos >= len)
        return false;
    uint64_t a = off + *pos;
    k->b = a / c->bs;
    k->in = a % c->bs;
    k->n = c->bs - k->in < len - *pos ? c->bs - k->in : len - *pos;
    k->boff = *pos;
    *pos += k->n;
    return true;
}

/* Lookup of k's block under c->lock: true with *cb, *dirty when mapped. */
static bool cio_lookup(struct rk_cache *c, uint64_t b, uint64_t *cb, bool *dirty)
{
    pthread_mutex_lock(&c->lock);
    bool hit = !rk_cache_meta_lookup(c->meta, b, cb, dirty);
    pthread_mutex_unlock(&c->lock);
    return hit;
}

/* True when the whole block b lies inside the backing device (the last one may be short). */
static bool cio_whole(const struct rk_cache *c, uint64_t b)
{
    return (b + 1) * c->bs <= c->backing->size;
}

/* Fill missed blocks of a read whose data is in buf (backing content): admission, allocation,
 * cache write, clean mapping. Partial blocks are read whole from the backing first. */
static void cio_read_fill(struct rk_cache *c, void *buf, uint64_t len, uint64_t off)
{
    void *bounce = NULL;
    struct cio_blk k;
    for (uint64_t pos = 0; cio_next(c, off, len, &pos, &k);) {
        uint64_t cb;
        bool d;
        if (cio_lookup(c, k.b, &cb, &d) || !cio_whole(c, k.b))
            continue;
        pthread_mutex_lock(&c->lock);
        bool admit = rk_cache_policy_admit_read(c->pol, k.b);
        pthread_mutex_unlock(&c->lock);
        if (!admit) {
            atomic_fetch_add(&c->bypass[RK_CACHE_BYPASS_COLD], 1);
            continue;
        }
        void *data = (char *)buf + k.boff;
        if (k.n != c->bs) {
            if (!bounce && !(bounce = rk_buf_alloc(c->bs)))
                break;
            if (rk_dev_read(c->backing, bounce, c->bs, k.b * c->bs))
                continue;
            data = bounce;
        }
        if (cache_alloc(c, &cb)) {
            atomic_fetch_add(&c->bypass[RK_CACHE_BYPASS_FULL], 1);
            continue;
        }
        int r = cio_cdev(c, true, data, c->bs, cache_coff(c, cb, 0));
        pthread_rwlock_rdlock(&c->synclock);
        pthread_mutex_lock(&c->lock);
        if (r)
            rk_cache_meta_release(c->meta, cb);
        else
            cache_map(c, cb, k.b, false);
        pthread_mutex_unlock(&c->lock);
        pthread_rwlock_unlock(&c->synclock);
        if (r) {
            cache_failed(c, r);
            break;
        }
        atomic_fetch_add(&c->bypass[RK_CACHE_ADMIT], 1);
    }
    free(bounce);
}

/* Read with the range's stripes held. Hits come from the cache device (a dirty hit that fails
 * is EIO, never the older backing data), runs of misses and clean blocks of a failed cache from
 * the backing. */
static int cio_read_locked(struct rk_cache *c, void *buf, uint64_t len, uint64_t off)
{
    bool failed = atomic_load(&c->state) == RK_CACHE_STATE_FAILED;
    int mode = atomic_load(&c->mode);
    uint64_t run = 0, run_len = 0, misses = 0;
    /* Every read advances its stream, hits included (policy.h): a stream beyond the cutoff
     * still reads its cached blocks from the cache, only its misses are not inserted (as bcache
     * does: hits are served, misses bypass). */
    pthread_mutex_lock(&c->lock);
    bool seq = rk_cache_policy_sequential(c->pol, off, len);
    pthread_mutex_unlock(&c->lock);
    struct cio_blk k;
    for (uint64_t pos = 0; cio_next(c, off, len, &pos, &k);) {
        uint64_t cb;
        bool dirty = false;
        bool hit = cio_lookup(c, k.b, &cb, &dirty);
        if (hit && failed && dirty)
            return -EIO;
        bool use = hit && !failed && (dirty || mode != RK_CACHE_NONE);
        if (use) {
            int r = cio_cdev(c, false, (char *)buf + k.boff, k.n, cache_coff(c, cb, k.in));
            if (!r) {
                atomic_fetch_add(&c->rhit, 1);
                pthread_mutex_lock(&c->lock);
                rk_cache_policy_touch(c->pol, cb);
                pthread_mutex_unlock(&c->lock);
                continue;
            }
            cache_failed(c, r);
            failed = true;
            if (dirty)
                return -EIO;
        }
        if (!hit)
            misses++;
        if (run_len && run + run_len == k.boff) {
            run_len += k.n;
            continue;
        }
        if (run_len) {
            int r = rk_dev_read(c->backing, (char *)buf + run, run_len, off + run);
            if (r)
                return r;
        }
        run = k.boff;
        run_len = k.n;
    }
    if (run_len) {
        int r = rk_dev_read(c->backing, (char *)buf + run, run_len, off + run);
        if (r)
            return r;
    }
    if (!misses)
        return 0;
    atomic_fetch_add(&c->rmiss, misses);
    if (failed) {
        atomic_fetch_add(&c->bypass[RK_CACHE_BYPASS_FAILED], 1);
        return 0;
    }
    if (mode == RK_CACHE_NONE || atomic_load(&c->state) == RK_CACHE_STATE_DETACHING) {
        atomic_fetch_add(
            &c->bypass[mode == RK_CACHE_NONE ? RK_CACHE_BYPASS_MODE : RK_CACHE_BYPASS_DETACHING],
            1);
        return 0;
    }
    if (seq) {
        atomic_fetch_add(&c->bypass[RK_CACHE_BYPASS_SEQUENTIAL], 1);
        return 0;
    }
    cio_read_fill(c, buf, len, off);
    return 0;
}

/* State of one write request. */
struct cio_wr {
    const char *buf;
    uint64_t len, off;
    uint32_t flags;
    enum rk_cache_reason reason; /* RK_CACHE_ADMIT: the mode caches it */
    int mode;
    uint64_t run, run_len; /* pending backing run (request offsets) */
    bool cached;           /* something went to the cache device (FUA: sync it) */
    bool dirtied;          /* ... as dirty data */
};

static int cio_wr_run_flush(struct rk_cache *c, struct cio_wr *w)
{
    if (!w->run_len)
        return 0;
    int r = rk_dev_write(c->backing, w->buf + w->run, w->run_len, w->off + w->run, w->flags);
    w->run_len = 0;
    return r;
}

static int cio_wr_backing(struct rk_cache *c, struct cio_wr *w, const struct cio_blk *k)
{
    if (w->run_len && w->run + w->run_len == k->boff) {
        w->run_len += k->n;
        return 0;
    }
    int r = cio_wr_run_flush(c, w);
    w->run = k->boff;
    w->run_len = k->n;
    return r;
}

/* A missed block the mode caches: allocate, write the whole block, map it (dirty for
 * writeback). A partial block of a miss is not cached in any mode (RK_CACHE_BYPASS_UNALIGNED):
 * it goes straight to the backing, since filling the rest of the block would cost a backing
 * read per cold small write (slower than the backing alone); nothing is mapped, so nothing is
 * invalidated, and the request's stripes are held throughout. Returns 1 when cached, 0 when it
 * must go to the backing only, -errno. */
static int cio_wr_fill(struct rk_cache *c, struct cio_wr *w, const struct cio_blk *k, bool dirty)
{
    if (!cio_whole(c, k->b) || k->n != c->bs) {
        atomic_fetch_add(&c->bypass[RK_CACHE_BYPASS_UNALIGNED], 1);
        return 0;
    }
    uint64_t cb;
    if (cache_alloc(c, &cb)) {
        atomic_fetch_add(&c->bypass[RK_CACHE_BYPASS_FULL], 1);
        return 0;
    }
    int r = cio_cdev(c, true, (void *)(w->buf + k->boff), c->bs, cache_coff(c, cb, 0));
    pthread_rwlock_rdlock(&c->synclock);
    pthread_mutex_lock(&c->lock);
    if (r)
        rk_cache_meta_release(c->meta, cb);
    else
        cache_map(c, cb, k->b, dirty);
    pthread_mutex_unlock(&c->lock);
    pthread_rwlock_unlock(&c->synclock);
    if (r) /* the cache device failed */
        cache_failed(c, r);
    if (r) /* not cached: the block goes to the backing */
        return 0;
    w->cached = true;
    w->dirtied |= dirty;
    return 1;
}

/* One block of a write. */
static int cio_wr_block(struct rk_cache *c, struct cio_wr *w, const struct cio_blk *k)
{
    uint64_t cb;
    bool dirty = false;
    bool hit = cio_lookup(c, k->b, &cb, &dirty);
    bool failed = atomic_load(&c->state) == RK_CACHE_STATE_FAILED;
    bool wb = w->reason == RK_CACHE_ADMIT && w->mode == RK_CACHE_WRITEBACK && !failed;
    bool wt = w->reason == RK_CACHE_ADMIT && w->mode == RK_CACHE_WRITETHROUGH && !failed;
    if (!hit) {
        atomic_fetch_add(&c->wmiss, 1);
        int r = wb || wt ? cio_wr_fill(c, w, k, wb) : 0;
        if (r < 0 || (r == 1 && wb))
            return r < 0 ? r : 0;
        return cio_wr_backing(c, w, k);
    }
    atomic_fetch_add(&c->whit, 1);
    if (failed && dirty)
        return -EIO;
    if (dirty || wb || wt) {
        /* In place: a dirty block stays dirty (only the flusher cleans it, after the backing
         * flushed it); writeback dirties a clean one. */
        pthread_mutex_lock(&c->lock);
        c->slots[cb].gen++;
        rk_cache_policy_touch(c->pol, cb);
        pthread_mutex_unlock(&c->lock);
        int r = cio_cdev(c, true, (void *)(w->buf + k->boff), k->n, cache_coff(c, cb, k->in));
        if (r) {
            cache_failed(c, r);
            if (dirty)
                return -EIO;
        }
        pthread_mutex_lock(&c->lock);
        if (r)
            cache_unmap(c, cb);
        else if (wb)
            cache_set_dirty(c, cb, true);
        pthread_mutex_unlock(&c->lock);
        if (!r) {
            w->cached = true;
            w->dirtied |= dirty || wb;
            if (dirty || wb)
                return 0;
        }
        return cio_wr_backing(c, w, k);
    }
    /* A clean copy that the write bypasses: dropped; the unmap reaches the journal with the
     * next commit, no later than the FLUSH that makes the backing write durable. */
    pthread_mutex_lock(&c->lock);
    cache_unmap(c, cb);
    pthread_mutex_unlock(&c->lock);
    return cio_wr_backing(c, w, k);
}

/* Why a write is not cached (RK_CACHE_ADMIT: it is). */
static enum rk_cache_reason cio_wr_reason(struct rk_cache *c, uint64_t len, uint64_t off)
{
    int st = atomic_load(&c->state);
    int mode = atomic_load(&c->mode);
    /* Every write advances its stream, whatever the mode (policy.h). */
    pthread_mutex_lock(&c->lock);
    bool seq = rk_cache_policy_sequential(c->pol, off, len);
    pthread_mutex_unlock(&c->lock);
    if (st == RK_CACHE_STATE_FAILED)
        return RK_CACHE_BYPASS_FAILED;
    if (st == RK_CACHE_STATE_DETACHING)
        return RK_CACHE_BYPASS_DETACHING;
    if (mode == RK_CACHE_NONE || mode == RK_CACHE_WRITEAROUND)
        return RK_CACHE_BYPASS_MODE;
    return seq ? RK_CACHE_BYPASS_SEQUENTIAL : RK_CACHE_ADMIT;
}

static int cio_write_locked(struct rk_cache *c, const void *buf, uint64_t len, uint64_t off,
                            uint32_t flags)
{
    struct cio_wr w = {.buf = buf, .len = len, .off = off, .flags = flags};
    w.mode = atomic_load(&c->mode);
    w.reason = cio_wr_reason(c, len, off);
    if (w.reason != RK_CACHE_ADMIT)
        atomic_fetch_add(&c->bypass[w.reason], 1);
    /* A failed cache with dirty blocks in the range: nothing is written (the dirty data would
     * be shadowed or half-overwritten). */
    if (w.reason == RK_CACHE_BYPASS_FAILED) {
        struct cio_blk k;
        for (uint64_t pos = 0; cio_next(c, off, len, &pos, &k);) {
            uint64_t cb;
            bool d;
            if (cio_lookup(c, k.b, &cb, &d) && d)
                return -EIO;
        }
    }
    int r = 0;
    struct cio_blk k;
    for (uint64_t pos = 0; !r && cio_next(c, off, len, &pos, &k);) {
        r = cio_wr_block(c, &w, &k);
    }
    if (!r)
        r = cio_wr_run_flush(c, &w);
    if (!r && (flags & RK_WRITE_FUA) && w.cached) {
        int s = cache_sync(c);
        if (s && w.dirtied)
            r = -EIO;
    }
    return r;
}

/* Discard / write-zeroes: clean copies in the range are dropped, dirty blocks get zeros in
 * place (a dirty block is only ever cleaned by the flusher), then the backing does the op. */
static int cio_zero_locked(struct rk_cache *c, bool discard, uint64_t len, uint64_t off,
                           uint32_t flags)
{
    bool failed = atomic_load(&c->state) == RK_CACHE_STATE_FAILED;
    void *zero = NULL;
    int r = 0;
    bool dirtied = false;
    struct cio_blk k;
    for (uint64_t pos = 0; !r && cio_next(c, off, len, &pos, &k);) {
        uint64_t cb;
        bool d;
        if (!cio_lookup(c, k.b, &cb, &d))
            continue;
        if (!d) {
            pthread_mutex_lock(&c->lock);
            cache_unmap(c, cb);
            pthread_mutex_unlock(&c->lock);
            continue;
        }
        if (failed || (!zero && !(zero = rk_buf_alloc(c->bs)))) {
            r = failed ? -EIO : -ENOMEM;
            break;
        }
        memset(zero, 0, c->bs);
        pthread_mutex_lock(&c->lock);
        c->slots[cb].gen++;
        pthread_mutex_unlock(&c->lock);
        r = rk_dev_write(c->cdev, zero, k.n, cache_coff(c, cb, k.in), 0);
        if (r) {
            cache_failed(c, r);
            r = -EIO;
        }
        dirtied = true;
    }
    free(zero);
    if (r)
        return r;
    r = discard ? rk_dev_discard(c->backing, len, off)
                : rk_dev_write_zeroes(c->backing, len, off, flags);
    if (!r && dirtied && (flags & RK_WRITE_FUA) && cache_sync(c))
        r = -EIO;
    return r;
}

/* One request of the layer. */
struct cio_req {
    enum rk_op op; /* READ, WRITE, DISCARD or WRITE_ZEROES */
    void *buf;
    uint64_t len, off;
    uint32_t flags;
};

/* The request straight to the backing (no cache attached). */
static int cio_backing(struct rk_cache *c, const struct cio_req *q)
{
    switch (q->op) {
    case RK_OP_READ:
        return rk_dev_read(c->backing, q->buf, q->len, q->off);
    case RK_OP_WRITE:
        return rk_dev_write(c->backing, q->buf, q->len, q->off, q->flags);
    case RK_OP_DISCARD:
        return rk_dev_discard(c->backing, q->len, q->off);
    default:
        return rk_dev_write_zeroes(c->backing, q->len, q->off, q->flags);
    }
}

/* Every request: the metadata instance held (c->rw), EIO while it is lost, passthrough when
 * detached, else the op with the stripes of its cache blocks held. */
static int cio_run(struct rk_dev *dev, struct cio_req q)
{
    struct rk_cache *c = dev->priv;
    pthread_rwlock_rdlock(&c->rw);
    int r;
    if (c->lost) {
        r = -EIO;
    } else if (!c->meta) {
        r = cio_backing(c, &q);
    } else {
        cache_lock_range(c, q.off, q.len);
        if (q.op == RK_OP_READ)
            r = cio_read_locked(c, q.buf, q.len, q.off);
        else if (q.op == RK_OP_WRITE)
            r = cio_write_locked(c, q.buf, q.len, q.off, q.flags);
        else
            r = cio_zero_locked(c, q.op == RK_OP_DISCARD, q.len, q.off, q.flags);
        cache_unlock_range(c, q.off, q.len);
    }
    pthread_rwlock_unlock(&c->rw);
    return r;
}

static int cio_read(struct rk_dev *dev, void *buf, uint64_t len, uint64_t off)
{
    return cio_run(dev, (struct cio_req){.op = RK_OP_READ, .buf = buf, .len = len, .off = off});
}

static int cio_write(struct rk_dev *dev, const void *buf, uint64_t len, uint64_t off,
                     uint32_t flags)
{
    return cio_run(
        dev, (struct cio_req){
                 .op = RK_OP_WRITE, .buf = (void *)buf, .len = len, .off = off, .flags = flags});
}

static int cio_discard(struct rk_dev *dev, uint64_t len, uint64_t off)
{
    return cio_run(dev, (struct cio_req){.op = RK_OP_DISCARD, .len = len, .off = off});
}

static int cio_write_zeroes(struct rk_dev *dev, uint64_t len, uint64_t off, uint32_t flags)
{
    return cio_run(
        dev, (struct cio_req){.op = RK_OP_WRITE_ZEROES, .len = len, .off = off, .flags = flags});
}

/* FLUSH: cache data durable -> metadata (maps, dirty bits, invalidations) durable -> backing
 * durable. A failed cache device fails the flush only while it holds dirty blocks. */
static int cio_flush(struct rk_dev *dev)
{
    struct rk_cache *c = dev->priv;
    pthread_rwlock_rdlock(&c->rw);
    int r = c->lost ? -EIO : 0;
    if (c->meta) {
        if (atomic_load(&c->state) != RK_CACHE_STATE_FAILED)
            r = cache_sync(c);
        if (r || atomic_load(&c->state) == RK_CACHE_STATE_FAILED) {
            struct rk_cache_meta_stats ms;
            rk_cache_meta_stats(c->meta, &ms);
            r = ms.dirty ? -EIO : 0;
        }
    }
    int b = rk_dev_flush(c->backing);
    pthread_rwlock_unlock(&c->rw);
    return r ? r : b;
}

void cache_close(struct rk_dev *dev);

const struct rk_dev_ops cache_dev_ops = {
    .kind = "cache",
    .read = cio_read,
    .write = cio_write,
    .flush = cio_flush,
    .discard = cio_discard,
    .write_zeroes = cio_write_zeroes,
    .close = cache_close,
};
