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
 * reconstruct-writes. Chunks can also be known in part (one column range each, grown by the
 * writes and reads of each window), so sub-chunk writes build up their chunk.
 *
 * Sequential sub-chunk streams (r5c_stream, r5c_fill): a write that starts where a recent write
 * ended and covers less than a chunk of its stripe reads, once per stripe, the stripe's other
 * data chunks whole into the entry; every later write of the stream into that stripe is then a
 * reconstruct-write with no member reads. Nothing is held back: each write is written (and
 * acknowledged, FUA included) as it comes, so FLUSH and FUA keep their meaning unchanged. The
 * first partial write into a stripe that does not follow a recent write still reads (it cannot
 * know a neighbour will come); random writes never match a recent end and plan as before.
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
        e->valid = e->part = 0;
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
            c->e[i].valid = c->e[i].part = 0;
            c->e[i].used = 0;
        }
    pthread_mutex_unlock(&c->lock);
}

bool r5c_usable(struct raid_priv *r, const struct r5_geo *g)
{
    return r5_blk_readable(r, g, g->row * r->l.g.chunk, r->l.g.chunk) == (1u << g->n) - 1;
}

void r5c_forget(struct r5_centry *ce)
{
    if (ce)
        ce->valid = ce->part = 0;
}

uint32_t r5c_known(const struct r5_centry *ce, uint32_t nd, const struct r5_wwin *w)
{
    if (!ce)
        return 0;
    uint32_t m = ce->valid;
    for (uint32_t k = 0; k < nd; k++) {
        if (!(ce->part & (1u << k)))
            continue;
        uint64_t plo = ce->plo[k], phi = ce->phi[k], a = w->a[k], b = w->b[k];
        bool alone = plo <= w->lo && w->hi <= phi;
        /* Known columns then written ones (or the other way round) without a gap. */
        bool with_new = a < b && ((plo <= w->lo && phi >= a && b >= w->hi) ||
                                  (a <= w->lo && b >= plo && phi >= w->hi));
        if (alone || with_new)
            m |= 1u << k;
    }
    return m;
}

/* Chunk k of ce (not valid) is now known over [a, b), bytes from src: merge with its known
 * range when they overlap or touch (else the new range replaces it); whole chunk -> valid. */
static void r5c_learn(struct r5_centry *ce, uint32_t k, uint64_t chunk, uint64_t a, uint64_t b,
                      const char *src)
{
    uint32_t kb = 1u << k;
    memcpy(ce->data + (uint64_t)k * chunk + a, src, b - a);
    if ((ce->part & kb) && ce->plo[k] <= b && a <= ce->phi[k]) {
        a = ce->plo[k] < a ? ce->plo[k] : a;
        b = ce->phi[k] > b ? ce->phi[k] : b;
    }
    if (a == 0 && b == chunk) {
        ce->valid |= kb;
        ce->part &= ~kb;
        return;
    }
    ce->part |= kb;
    ce->plo[k] = (uint32_t)a;
    ce->phi[k] = (uint32_t)b;
}

/* Chunks recorded: valid ones patched with the new bytes; the others learn the columns the
 * window now knows: the whole window when their buffer holds it (read and patched: RMW's
 * touched blocks, RCW's read or cached blocks), else the written columns from the request. */
void r5c_update(struct r5_req *q, const struct r5_geo *g, const struct r5_wwin *w,
                struct r5_centry *ce, enum r5_mode mode, uint32_t touched, uint32_t need,
                uint32_t cv, uint32_t full)
{
    uint64_t chunk = q->r->l.g.chunk;
    /* RCW leaves a block written over the whole window in the request (its buffer unused). */
    uint32_t inbuf = mode == R5_RMW ? touched : need | (cv & touched & ~full);
    for (uint32_t k = 0; k < g->nd; k++) {
        uint32_t kb = 1u << k;
        if (ce->valid & kb) {
            if (touched & kb)
                memcpy(ce->data + (uint64_t)k * chunk + w->a[k], w->src[k], w->b[k] - w->a[k]);
        } else if (inbuf & kb) {
            r5c_learn(ce, k, chunk, w->lo, w->hi, r5_blk(q, k));
        } else if (touched & kb) {
            r5c_learn(ce, k, chunk, w->a[k], w->b[k], w->src[k]);
        }
    }
}

bool r5c_stream(struct r5_priv *p, uint64_t off, uint64_t len, uint64_t *near_end,
                uint64_t *ahead_end)
{
    struct r5_cache *c = &p->cache;
    bool hit = false;
    uint64_t ne = 0, ae = 0;
    if (near_end)
        *near_end = 0;
    if (ahead_end)
        *ahead_end = 0;
    if (!c->n)
        return false;
    pthread_mutex_lock(&c->lock);
    for (unsigned i = 0; i < R5_STREAM_ENDS && off; i++) {
        uint64_t e = c->ends[i];
        hit = hit || e == off;
        if (e && e <= off && off - e <= R5_STREAM_NEAR * len && e > ne)
            ne = e;
        if (e > off + len && e - off <= R5_STREAM_NEAR * len && (!ae || e < ae))
            ae = e;
    }
    if (near_end)
        *near_end = ne;
    if (ahead_end)
        *ahead_end = ae;
    c->ends[c->endpos++ % R5_STREAM_ENDS] = off + len;
    pthread_mutex_unlock(&c->lock);
    return hit;
}

void r5c_fill(struct r5_req *q, const struct r5_geo *g, struct r5_centry *ce, uint32_t touched)
{
    struct raid_priv *r = q->r;
    uint64_t chunk = r->l.g.chunk;
    uint32_t want = ((1u << g->nd) - 1) & ~ce->valid & ~touched;
    struct r5_ios v = {.n = 0};
    for (uint32_t k = 0; k < g->nd; k++)
        if (want & (1u << k))
            r5_io_add(&v, r, g->slot[k], RK_OP_READ, 0, ce->data + (uint64_t)k * chunk, chunk,
                      g->row * chunk);
    if (!v.n)
        return;
    uint32_t failed = r5_io_run(q, &v);
    for (int i = 0; i < v.n; i++) {
        uint32_t k = g->blk_of_slot[v.slot[i]];
        if (failed & (1u << v.slot[i]))
            continue;
        ce->valid |= 1u << k;
        ce->part &= ~(1u << k);
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
