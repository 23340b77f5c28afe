/*
 * The raid5/raid6 stripe data cache (write-through, for adjacent sequential writes).
 *
 * A 1M write that starts or ends inside a stripe leaves that stripe partly written, and the
 * neighbouring request writes the rest. Holding the first request back to gather both (a
 * write-back window) would delay its completion and need cross-request hand-off; instead a few
 * recently written stripes remember which of their data chunks hold content the engine itself
 * just wrote or read under the stripe lock (so it equals what the members hold). When a later
 * partial-stripe write finds (cached chunks + the chunks it fully covers) = every data chunk, it
 * is a reconstruct-write with no member reads; cached chunks also shorten ordinary
 * reconstruct-writes. The first partial write into a stripe still reads (it cannot know its
 * neighbour will come).
 *
 * Rules: an entry is only filled after the member writes of its window succeeded, is dropped on
 * any read/write failure, whenever a slot of the array is not ACTIVE or has recorded bad sectors
 * in the stripe, and by every write path that changes the stripe without updating it
 * (whole-stripe writes, zeroing, repairs); reads never use it. Memory: R5_CACHE_ENTRIES x stripe
 * data bytes, capped at R5_CACHE_BYTES (fewer entries for big stripes; off below 2 entries or
 * when the chunk exceeds the column window), allocated at open.
 */
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "raid/raid5_int.h"

struct r5_centry *r5c_get(struct r5_priv *p, uint64_t row, bool create)
{
    struct r5_cache *c = &p->cache;
    struct r5_centry *e = NULL, *victim = NULL;
    if (!c->n)
        return NULL;
    pthread_mutex_lock(&c->lock);
    for (int i = 0; i < c->n; i++) {
        struct r5_centry *x = &c->e[i];
        if (x->row == row) {
            e = x;
            break;
        }
        if (!x->busy && (!victim || x->used < victim->used))
            victim = x;
    }
    if (!e && create && victim) {
        e = victim;
        e->row = row;
        e->valid = 0;
    }
    if (e) {
        e->busy = true;
        e->used = ++c->tick;
    }
    pthread_mutex_unlock(&c->lock);
    return e;
}

void r5c_put(struct r5_priv *p, struct r5_centry *e)
{
    if (!e)
        return;
    pthread_mutex_lock(&p->cache.lock);
    e->busy = false;
    pthread_mutex_unlock(&p->cache.lock);
}

void r5c_drop(struct r5_priv *p, uint64_t row, uint64_t count)
{
    struct r5_cache *c = &p->cache;
    if (!c->n)
        return;
    pthread_mutex_lock(&c->lock);
    for (int i = 0; i < c->n; i++)
        if (c->e[i].row != R5_NO_ROW && c->e[i].row - row < count) {
            c->e[i].row = R5_NO_ROW;
            c->e[i].valid = 0;
            c->e[i].used = 0;
        }
    pthread_mutex_unlock(&c->lock);
}

bool r5c_usable(struct raid_priv *r, const struct r5_geo *g)
{
    return r5_blk_readable(r, g, g->row * r->l.g.chunk, r->l.g.chunk) == (1u << g->n) - 1;
}

/* Chunks recorded: written in full, read + patched over the whole chunk, or already cached and
 * patched with the new bytes. */
void r5c_update(struct r5_req *q, const struct r5_geo *g, const struct r5_wwin *w,
                struct r5_centry *ce, enum r5_mode mode, uint32_t touched, uint32_t need)
{
    uint64_t chunk = q->r->l.g.chunk;
    bool whole = w->lo == 0 && w->hi == chunk;
    uint32_t inbuf = mode == R5_RMW ? touched : need; /* blocks whose buffer holds new data */
    for (uint32_t k = 0; k < g->nd; k++) {
        uint32_t kb = 1u << k;
        char *ck = ce->data + (uint64_t)k * chunk;
        if ((touched & kb) && (ce->valid & kb)) {
            memcpy(ck + w->a[k], w->src[k], w->b[k] - w->a[k]);
        } else if ((touched & kb) && w->a[k] == 0 && w->b[k] == chunk) {
            memcpy(ck, w->src[k], chunk);
            ce->valid |= kb;
        } else if (whole && (inbuf & kb)) {
            memcpy(ck, r5_blk(q, k), chunk);
            ce->valid |= kb;
        }
    }
}

/* Without memory the array simply runs without the cache. */
void r5c_open(struct raid_priv *r, struct r5_priv *p)
{
    uint64_t chunk = r->l.g.chunk;
    uint64_t sbytes = r5_stripe_bytes(&r->l);
    uint64_t n = R5_CACHE_BYTES / sbytes;
    n = n > R5_CACHE_ENTRIES ? R5_CACHE_ENTRIES : n;
    if (n < 2 || chunk > p->win)
        return;
    p->cache.mem = rk_buf_alloc(n * sbytes);
    if (!p->cache.mem)
        return;
    pthread_mutex_init(&p->cache.lock, NULL);
    for (uint64_t i = 0; i < n; i++) {
        p->cache.e[i].row = R5_NO_ROW;
        p->cache.e[i].data = p->cache.mem + i * sbytes;
    }
    p->cache.n = (int)n;
}

void r5c_close(struct r5_priv *p)
{
    if (p->cache.n)
        pthread_mutex_destroy(&p->cache.lock);
    free(p->cache.mem);
    p->cache.mem = NULL;
    p->cache.n = 0;
}
