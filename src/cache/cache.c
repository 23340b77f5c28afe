/* The cache layer: open and close, block stripes, the index mirror, allocation with eviction,
 * cache-device failure and recovery, status (docs/ARCHITECTURE.md "Cache"). */
#include "cache/cache_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/util.h"
#include "raidkit/member.h"

const char *rk_cache_state_name(enum rk_cache_state s)
{
    static const char *const names[] = {"ok", "failed", "detaching", "detached"};
    return (unsigned)s < sizeof(names) / sizeof(names[0]) ? names[s] : "?";
}

int64_t cache_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void cache_lock_range(struct rk_cache *c, uint64_t off, uint64_t len)
{
    uint64_t first = off / c->bs, last = (off + len - 1) / c->bs;
    if (last - first + 1 >= CACHE_STRIPES) {
        for (uint32_t i = 0; i < CACHE_STRIPES; i++)
            pthread_mutex_lock(&c->stripes[i]);
        return;
    }
    /* Ascending stripe order; a range may wrap around the stripe table. */
    uint32_t s0 = (uint32_t)(first % CACHE_STRIPES), n = (uint32_t)(last - first + 1);
    uint32_t wrap = s0 + n > CACHE_STRIPES ? s0 + n - CACHE_STRIPES : 0;
    for (uint32_t i = 0; i < wrap; i++)
        pthread_mutex_lock(&c->stripes[i]);
    for (uint32_t i = s0; i < s0 + n - wrap; i++)
        pthread_mutex_lock(&c->stripes[i]);
}

void cache_unlock_range(struct rk_cache *c, uint64_t off, uint64_t len)
{
    uint64_t first = off / c->bs, last = (off + len - 1) / c->bs;
    uint32_t n = last - first + 1 >= CACHE_STRIPES ? CACHE_STRIPES : (uint32_t)(last - first + 1);
    uint32_t s0 = n == CACHE_STRIPES ? 0 : (uint32_t)(first % CACHE_STRIPES);
    for (uint32_t i = 0; i < n; i++)
        pthread_mutex_unlock(&c->stripes[(s0 + i) % CACHE_STRIPES]);
}

void cache_failed(struct rk_cache *c, int r)
{
    atomic_fetch_add(&c->io_errors, 1);
    int ok = RK_CACHE_STATE_OK;
    if (atomic_compare_exchange_strong(&c->state, &ok, RK_CACHE_STATE_FAILED))
        rk_err("cache device %s failed (%s): running uncached; dirty blocks read EIO until it "
               "is readable again",
               c->path, strerror(-r));
    atomic_store(&c->last_probe, cache_now_ms());
    pthread_cond_broadcast(&c->cond); /* a drain waiting for progress gives up */
}

int cache_sync(struct rk_cache *c)
{
    if (!c->meta)
        return 0;
    /* No new mapping is queued between the flush and the commit: the commit takes every queued
     * record, and a mapping's data must be durable before it is. */
    pthread_rwlock_wrlock(&c->synclock);
    int r = rk_dev_flush(c->cdev);
    if (!r)
        r = rk_cache_meta_commit(c->meta);
    pthread_rwlock_unlock(&c->synclock);
    if (r)
        cache_failed(c, r);
    return r;
}

static void cache_free_meta(struct rk_cache *c);

int cache_recover(struct rk_cache *c)
{
    if (atomic_load(&c->state) != RK_CACHE_STATE_FAILED)
        return 0;
    atomic_store(&c->last_probe, cache_now_ms());
    void *buf = rk_buf_alloc(4096);
    int r = buf ? rk_dev_read(c->cdev, buf, 4096, 0) : -ENOMEM;
    free(buf);
    if (!r)
        r = rk_dev_flush(c->cdev);
    if (r)
        return r;
    /* The old instance is closed first (its close commits and checkpoints what it holds when
     * its own commits did not fail; one instance writes at a time), then the metadata is loaded
     * again trusting only its dirty blocks (invalidations of a failed commit never reached it).
     * If the load fails, nothing is known about dirty blocks: every request fails (lost). */
    char err[300] = "";
    pthread_rwlock_wrlock(&c->rw);
    cache_free_meta(c);
    r = cache_load(c, c->cdev, c->path, true, err, sizeof(err));
    c->lost = r != 0;
    pthread_rwlock_unlock(&c->rw);
    if (r)
        rk_warn("cache device %s: still unusable: %s", c->path, err);
    else
        rk_info("cache device %s is readable again: cache back in use", c->path);
    return r;
}

void cache_map(struct rk_cache *c, uint64_t cblock, uint64_t bblock, bool dirty)
{
    rk_cache_meta_map(c->meta, cblock, bblock, dirty);
    c->slots[cblock] = (struct cache_slot){
        .bblock = bblock, .gen = c->slots[cblock].gen + 1, .mapped = 1, .dirty = dirty};
    rk_cache_policy_insert(c->pol, cblock);
}

void cache_unmap(struct rk_cache *c, uint64_t cblock)
{
    rk_cache_meta_unmap(c->meta, cblock);
    c->slots[cblock].mapped = c->slots[cblock].dirty = 0;
    c->slots[cblock].gen++;
    rk_cache_policy_remove(c->pol, cblock);
}

void cache_set_dirty(struct rk_cache *c, uint64_t cblock, bool dirty)
{
    if (c->slots[cblock].dirty == dirty)
        return;
    rk_cache_meta_set_dirty(c->meta, cblock, dirty);
    c->slots[cblock].dirty = dirty;
}

/* Eviction filter: clean, and no request or flusher holds the block's stripe (idle). */
static bool cache_can_evict(void *ctx, uint64_t cblock)
{
    struct rk_cache *c = ctx;
    const struct cache_slot *s = &c->slots[cblock];
    if (!s->mapped || s->dirty)
        return false;
    pthread_mutex_t *m = &c->stripes[s->bblock % CACHE_STRIPES];
    if (pthread_mutex_trylock(m))
        return false;
    pthread_mutex_unlock(m);
    return true;
}

/* Clean blocks evicted at once when the cache is full (their unmaps share one commit). */
#define CACHE_EVICT_BATCH 32

int cache_alloc(struct rk_cache *c, uint64_t *cblock)
{
    pthread_mutex_lock(&c->lock);
    int r = rk_cache_meta_alloc(c->meta, cblock);
    if (r != -ENOSPC) {
        pthread_mutex_unlock(&c->lock);
        return r;
    }
    int n = 0;
    uint64_t v;
    while (n < CACHE_EVICT_BATCH && !rk_cache_policy_evict(c->pol, cache_can_evict, c, &v)) {
        /* The victim's stripe is free and we hold c->lock: nobody can look it up meanwhile. */
        rk_cache_meta_unmap(c->meta, v);
        c->slots[v].mapped = 0;
        c->slots[v].gen++;
        n++;
    }
    pthread_mutex_unlock(&c->lock);
    if (!n)
        return -ENOSPC;
    /* A freed block is handed out only once its unmap is durable (meta.h); the commit also
     * carries other requests' mappings, so the cache device is flushed first. */
    if (cache_sync(c))
        return -ENOSPC;
    pthread_mutex_lock(&c->lock);
    r = rk_cache_meta_alloc(c->meta, cblock);
    pthread_mutex_unlock(&c->lock);
    return r;
}

uint64_t cache_load_index(struct rk_cache *c, bool drop_clean)
{
    uint64_t nb = c->backing->size / c->bs, dirty = 0, dropped = 0;
    pthread_mutex_lock(&c->lock);
    for (uint64_t b = 0; b < nb; b++) {
        uint64_t cb;
        bool d;
        if (rk_cache_meta_lookup(c->meta, b, &cb, &d) || cb >= c->blocks)
            continue;
        if (!d && drop_clean) {
            rk_cache_meta_unmap(c->meta, cb);
            dropped++;
            continue;
        }
        c->slots[cb] = (struct cache_slot){.bblock = b, .mapped = 1, .dirty = d};
        rk_cache_policy_insert(c->pol, cb);
        dirty += d;
    }
    pthread_mutex_unlock(&c->lock);
    if (dropped)
        rk_info("cache %s: %" PRIu64 " clean blocks dropped (after an unclean shutdown only dirty "
                "blocks are trusted)",
                c->path, dropped);
    return dirty;
}

/* Free the metadata, policy and mirror held by c (not the device). */
static void cache_free_meta(struct rk_cache *c)
{
    if (c->meta) {
        int r = rk_cache_meta_close(c->meta);
        if (r && atomic_load(&c->state) != RK_CACHE_STATE_FAILED)
            rk_warn("cache %s: final checkpoint failed: %s", c->path, strerror(-r));
    }
    rk_cache_policy_free(c->pol);
    free(c->slots);
    c->meta = NULL;
    c->pol = NULL;
    c->slots = NULL;
}

int cache_load(struct rk_cache *c, struct rk_dev *cdev, const char *name, bool drop_clean,
               char *err, size_t errlen)
{
    struct rk_cache_meta *m = NULL;
    int r = rk_cache_meta_open(cdev, name, c->uuid, c->backing->size, &m, err, errlen);
    if (r)
        return r;
    uint32_t bs = rk_cache_meta_block_size(m);
    uint64_t blocks = rk_cache_meta_blocks(m);
    struct rk_cache_policy_params pp;
    rk_cache_policy_defaults(&pp, blocks, bs);
    struct rk_cache_policy *pol = rk_cache_policy_new(&pp);
    struct cache_slot *slots = calloc(blocks, sizeof(*slots));
    if (!pol || !slots || bs % c->backing->block_size) {
        rk_cache_policy_free(pol);
        free(slots);
        rk_cache_meta_close(m);
        rk_set_err(err, errlen, "cache %s: %s", name,
                   pol && slots ? "block size not a multiple of the volume's" : "out of memory");
        return pol && slots ? -EINVAL : -ENOMEM;
    }
    c->meta = m;
    c->pol = pol;
    c->slots = slots;
    c->bs = bs;
    c->blocks = blocks;
    c->data_off = rk_cache_meta_data_offset(m);
    c->cdev = cdev;
    c->high = blocks * c->high_pct / 100;
    c->low = blocks * c->low_pct / 100;
    if (name != c->path)
        snprintf(c->path, sizeof(c->path), "%s", name);
    uint64_t dirty = cache_load_index(c, drop_clean);
    if (drop_clean) {
        r = rk_cache_meta_commit(m);
        if (r)
            rk_warn("cache %s: cannot commit the dropped clean blocks: %s", name, strerror(-r));
    }
    atomic_store(&c->mode, rk_cache_meta_mode(m));
    atomic_store(&c->state, RK_CACHE_STATE_OK);
    rk_info("cache %s: %s, %" PRIu64 " blocks of %" PRIu32 " bytes, %" PRIu64 " dirty", c->path,
            rk_cache_mode_name(rk_cache_meta_mode(m)), blocks, bs, dirty);
    return 0;
}

void cache_unload(struct rk_cache *c)
{
    cache_free_meta(c);
    rk_dev_close(c->cdev);
    c->cdev = c->fault = NULL;
    c->blocks = 0;
    c->bs = 4096;
    atomic_store(&c->state, RK_CACHE_STATE_DETACHED);
    atomic_store(&c->mode, RK_CACHE_NONE);
}

int rk_cache_open(struct rk_dev *backing, struct rk_dev *cdev, const char *name,
                  const struct rk_cache_opts *o, struct rk_cache **out, struct rk_dev **dev,
                  char *err, size_t errlen)
{
    *out = NULL;
    *dev = NULL;
    struct rk_cache *c = calloc(1, sizeof(*c));
    if (!c) {
        rk_set_err(err, errlen, "out of memory");
        return -ENOMEM;
    }
    c->backing = backing;
    memcpy(c->uuid, o->array_uuid, 16);
    c->stripe = o->stripe;
    c->rate = o->writeback_rate;
    c->high_pct = o->high_pct ? o->high_pct : 50;
    c->low_pct = o->low_pct ? o->low_pct : 10;
    if (c->low_pct > c->high_pct)
        c->low_pct = c->high_pct;
    pthread_rwlock_init(&c->rw, NULL);
    pthread_rwlock_init(&c->synclock, NULL);
    pthread_mutex_init(&c->lock, NULL);
    pthread_mutex_init(&c->ctl, NULL);
    pthread_cond_init(&c->cond, NULL);
    for (uint32_t i = 0; i < CACHE_STRIPES; i++)
        pthread_mutex_init(&c->stripes[i], NULL);
    int r = cache_load(c, cdev, name, o->unclean, err, errlen);
    bool loaded = !r;
    if (!r) {
        c->dev = rk_dev_alloc(&cache_dev_ops, c, backing->name);
        if (!c->dev) {
            rk_set_err(err, errlen, "out of memory");
            r = -ENOMEM;
        }
    }
    if (!r && (r = cache_flusher_start(c)) != 0)
        rk_set_err(err, errlen, "cache %s: cannot start the flusher: %s", name, strerror(-r));
    if (r) {
        if (loaded)
            cache_unload(c); /* closes cdev */
        else
            rk_dev_close(cdev);
        free(c->dev); /* allocated by rk_dev_alloc, never opened further */
        free(c);
        return r;
    }
    c->dev->size = backing->size;
    /* Requests must suit the cache device too (a 512-byte write on a 4 KiB O_DIRECT device). */
    c->dev->block_size =
        backing->block_size > c->cdev->block_size ? backing->block_size : c->cdev->block_size;
    if (backing->size % c->dev->block_size)
        c->dev->block_size = backing->block_size;
    c->dev->opt_io_size = backing->opt_io_size;
    c->dev->direct = backing->direct;
    *out = c;
    *dev = c->dev;
    return 0;
}

/* ops->close of the layer: stop the flusher, commit, close the cache device. */
void cache_close(struct rk_dev *dev);
void cache_close(struct rk_dev *dev)
{
    struct rk_cache *c = dev->priv;
    cache_flusher_stop(c);
    if (c->meta && atomic_load(&c->state) != RK_CACHE_STATE_FAILED)
        cache_sync(c);
    cache_unload(c);
    for (uint32_t i = 0; i < CACHE_STRIPES; i++)
        pthread_mutex_destroy(&c->stripes[i]);
    pthread_mutex_destroy(&c->lock);
    pthread_mutex_destroy(&c->ctl);
    pthread_cond_destroy(&c->cond);
    pthread_rwlock_destroy(&c->rw);
    pthread_rwlock_destroy(&c->synclock);
    free(c);
}

struct rk_cache *rk_cache_of(struct rk_dev *dev)
{
    return dev && dev->ops == &cache_dev_ops ? dev->priv : NULL;
}

void rk_cache_status(struct rk_cache *c, struct rk_cache_status *st)
{
    memset(st, 0, sizeof(*st));
    pthread_rwlock_rdlock(&c->rw);
    st->state = atomic_load(&c->state);
    st->mode = atomic_load(&c->mode);
    snprintf(st->path, sizeof(st->path), "%s", c->meta ? c->path : "");
    st->block_size = c->meta ? c->bs : 0;
    st->blocks = c->blocks;
    if (c->meta) {
        rk_cache_meta_stats(c->meta, &st->meta);
        st->mapped = st->meta.mapped;
        st->dirty = st->meta.dirty;
    }
    st->read_hits = atomic_load(&c->rhit);
    st->read_misses = atomic_load(&c->rmiss);
    st->write_hits = atomic_load(&c->whit);
    st->write_misses = atomic_load(&c->wmiss);
    for (int i = 0; i < RK_CACHE_REASONS; i++)
        st->bypass[i] = atomic_load(&c->bypass[i]);
    st->written_back = atomic_load(&c->wb_bytes);
    st->io_errors = atomic_load(&c->io_errors);
    pthread_mutex_lock(&c->lock);
    st->writeback_rate = c->wb_rate;
    pthread_mutex_unlock(&c->lock);
    double left = (double)st->dirty * st->block_size;
    st->eta = !st->dirty ? 0 : st->writeback_rate > 0 ? left / st->writeback_rate : -1;
    pthread_rwlock_unlock(&c->rw);
}

int rk_cache_uuid(struct rk_cache *c, uint8_t out[16])
{
    pthread_rwlock_rdlock(&c->rw);
    int r = c->meta ? 0 : -ENODEV;
    if (c->meta)
        memcpy(out, rk_cache_meta_uuid(c->meta), 16);
    pthread_rwlock_unlock(&c->rw);
    return r;
}

void rk_cache_set_fault_dev(struct rk_cache *c, struct rk_dev *fault)
{
    c->fault = fault;
}

int rk_cache_debug_fault(struct rk_cache *c, const char *spec, char *err, size_t errlen)
{
    pthread_rwlock_rdlock(&c->rw);
    int r = -ENODEV;
    if (!c->fault)
        rk_set_err(err, errlen,
                   "the cache device is not a fault member (serve --debug-fault "
                   "cache:SPEC)");
    else if (!strcmp(spec, "clear")) {
        rk_fault_clear(c->fault);
        r = 0;
    } else
        r = rk_fault_apply_spec(c->fault, spec, err, errlen);
    pthread_rwlock_unlock(&c->rw);
    return r;
}
