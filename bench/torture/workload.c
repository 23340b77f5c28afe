/* The fast torture driver's workload and checks (see workload.h). */
#include "workload.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "blake2b.h"
#include "core/util.h"

uint64_t wl_rand(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

int wl_init(struct wl *w, uint64_t nblocks, uint64_t seed, uint64_t max_ops)
{
    memset(w, 0, sizeof(*w));
    pthread_mutex_init(&w->mu, NULL);
    w->nblocks = nblocks;
    w->max_ops = max_ops;
    w->stream = seed % 4 != 0;
    uint64_t rows = nblocks / WL_STREAM_BLOCKS;
    w->next = rows ? (seed * 0x9e3779b97f4a7c15ull >> 17) % rows * WL_STREAM_BLOCKS : 0;
    /* The key: BLAKE2b of the seed, so a replayed seed writes the same stamps. */
    struct blake2b s;
    blake2b_init(&s, STAMP_KEY, NULL, 0, "rk-torture-key", 14);
    blake2b_update(&s, &seed, sizeof(seed));
    blake2b_final(&s, w->key);
    w->busy = calloc(nblocks, 1);
    w->src = calloc(nblocks, 1);
    w->acked = calloc(nblocks, sizeof(uint32_t));
    w->durable = calloc(nblocks, sizeof(uint32_t));
    w->snap = calloc(nblocks, sizeof(uint32_t));
    w->issued = calloc(nblocks, sizeof(uint32_t));
    if (!w->busy || !w->src || !w->acked || !w->durable || !w->snap || !w->issued) {
        wl_free(w);
        return -ENOMEM;
    }
    return 0;
}

void wl_free(struct wl *w)
{
    free(w->busy);
    free(w->src);
    free(w->acked);
    free(w->durable);
    free(w->snap);
    free(w->issued);
    w->issued = NULL;
    free(w->macs);
    w->macs = NULL;
    w->nmacs = w->capmacs = 0;
    w->busy = w->src = NULL;
    w->acked = w->durable = w->snap = NULL;
    pthread_mutex_destroy(&w->mu);
}

/*
 * A partial write into the stripe the stream writes next, which the stream then overwrites
 * whole: in the log, a partial entry between a window and a write under that window, the order
 * the windows' cut keeps (docs/FORMAT.md "Partial parity log"). 3 of 4 cover every data chunk
 * but one whole (the replay's partial parity then covers every chunk present, the path that
 * trusts the log's order), leaving out the chunk on the slot the check removes when it is at
 * either end of the stripe (w->lay), else the first or last at random; the others 1..8 blocks
 * from a random block of that stripe. mu held.
 */
static void wl_ahead(const struct wl *w, uint64_t r, struct wl_op *op)
{
    uint64_t row = w->next / WL_STREAM_BLOCKS;
    uint32_t nd = WL_STREAM_BLOCKS / WL_CHUNK_BLOCKS, first = (uint32_t)((r >> 33) & 1);
    if (w->lay.n) { /* the left-symmetric layout (docs/FORMAT.md "raid5, raid6") */
        uint32_t n = w->lay.n, p = n - 1 - (uint32_t)(row % n);
        uint32_t k = (w->lay.slot + 2 * n - p - w->lay.np) % n;
        first = k == 0 ? 1 : k == nd - 1 ? 0 : first;
    }
    if ((r >> 32) % 8) {
        op->n = (nd - 1) * WL_CHUNK_BLOCKS;
        op->start = row * WL_STREAM_BLOCKS + first * WL_CHUNK_BLOCKS;
    } else {
        op->start = row * WL_STREAM_BLOCKS + (r >> 34) % WL_STREAM_BLOCKS;
    }
    if (op->start + op->n > w->nblocks)
        op->start = (r >> 16) % w->nblocks;
}

bool wl_pick(struct wl *w, uint64_t *rng, struct wl_op *op)
{
    for (;;) {
        if (atomic_load(&w->stop))
            return false;
        uint64_t r = wl_rand(rng);
        unsigned p = (unsigned)(r % 100);
        memset(op, 0, sizeof(*op));
        pthread_mutex_lock(&w->mu);
        if (w->ops >= w->max_ops) {
            pthread_mutex_unlock(&w->mu);
            return false;
        }
        /* Stream cycles flush less (3%): a FLUSH closes the log's windows and retires their
         * entries, and what the stream cycle is after lives between two FLUSHes. */
        unsigned fl = w->flush_pct ? w->flush_pct : w->stream ? 3u : 8u;
        if (p < fl && !w->flushing) {
            op->flush = true;
            w->flushing = true;
            memcpy(w->snap, w->acked, w->nblocks * sizeof(uint32_t));
            w->ops++;
            w->flushes++;
            pthread_mutex_unlock(&w->mu);
            return true;
        }
        op->fua = w->fua_pct ? (r >> 52) % 100 < w->fua_pct : p >= 8 && p < 22;
        /* In a stream cycle, a quarter of the writes continue one sequential stream of whole
         * stripes (the partial parity log's windows), 3 of 4 of them FUA (durable while the
         * window that covers them is still live), and 30% are partial writes into the stripe
         * the stream writes next (wl_ahead); the rest land anywhere. */
        bool stream = w->stream && p >= 22 && p < 47;
        bool ahead = w->stream && p >= 47 && p < 77;
        op->n = stream ? WL_STREAM_BLOCKS : 1 + (uint32_t)((r >> 8) % WL_RAND_BLOCKS);
        op->start = stream ? w->next : (r >> 16) % w->nblocks;
        if (stream)
            op->fua = (r >> 40) % 8 != 0;
        if (ahead)
            wl_ahead(w, r, op);
        if (stream && op->start + op->n > w->nblocks)
            op->start = 0;
        if (op->start + op->n > w->nblocks)
            op->n = (uint32_t)(w->nblocks - op->start);
        bool free_range = true;
        for (uint32_t i = 0; i < op->n && free_range; i++)
            free_range = !w->busy[op->start + i];
        if (free_range) {
            memset(w->busy + op->start, 1, op->n);
            op->g = ++w->gen;
            if (stream)
                w->next = op->start + op->n;
            for (uint32_t i = 0; i < op->n; i++)
                w->issued[op->start + i] = op->g;
            w->ops++;
            w->writes++;
            w->fuas += op->fua;
        }
        pthread_mutex_unlock(&w->mu);
        if (free_range)
            return true;
    }
}

static uint64_t wl_mac_hash(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    return k ^ (k >> 33);
}

/* The MAC slot of key k in tab (cap a power of two): its entry or the free slot for it. */
static struct wl_mac *wl_mac_slot(struct wl_mac *tab, uint64_t cap, uint64_t k)
{
    for (uint64_t i = wl_mac_hash(k) & (cap - 1);; i = (i + 1) & (cap - 1))
        if (tab[i].key == k || tab[i].key == 0)
            return &tab[i];
}

/* Remember mac for (b, g); mu held. Returns 0 or -ENOMEM. */
static int wl_mac_put(struct wl *w, uint64_t b, uint64_t g, const uint8_t *mac)
{
    if (2 * (w->nmacs + 1) > w->capmacs) {
        uint64_t cap = w->capmacs ? 2 * w->capmacs : 1u << 14;
        struct wl_mac *t = calloc(cap, sizeof(*t));
        if (!t)
            return -ENOMEM;
        for (uint64_t i = 0; i < w->capmacs; i++)
            if (w->macs[i].key)
                *wl_mac_slot(t, cap, w->macs[i].key) = w->macs[i];
        free(w->macs);
        w->macs = t;
        w->capmacs = cap;
    }
    uint64_t k = (b << 32 | g) + 1;
    struct wl_mac *e = wl_mac_slot(w->macs, w->capmacs, k);
    if (!e->key)
        w->nmacs++;
    e->key = k;
    memcpy(e->mac, mac, 32);
    return 0;
}

int wl_stamp(struct wl *w, const struct wl_op *op, uint8_t *buf)
{
    int r = 0;
    for (uint32_t i = 0; i < op->n; i++)
        stamp_block(w->key, op->start + i, op->g, buf + (size_t)i * STAMP_BLOCK);
    pthread_mutex_lock(&w->mu);
    for (uint32_t i = 0; i < op->n && !r; i++)
        r = wl_mac_put(w, op->start + i, op->g, buf + (size_t)i * STAMP_BLOCK + 24);
    pthread_mutex_unlock(&w->mu);
    return r;
}

void wl_done(struct wl *w, const struct wl_op *op, int r)
{
    pthread_mutex_lock(&w->mu);
    if (op->flush) {
        if (r == 0) {
            for (uint64_t b = 0; b < w->nblocks; b++) {
                if (w->snap[b] > w->durable[b]) {
                    w->durable[b] = w->snap[b];
                    w->src[b] = WL_SRC_FLUSH;
                }
            }
        }
        w->flushing = false;
    } else {
        for (uint32_t i = 0; i < op->n; i++) {
            uint64_t b = op->start + i;
            w->busy[b] = 0;
            if (r == 0) {
                w->acked[b] = op->g;
                if (op->fua && op->g > w->durable[b]) {
                    w->durable[b] = op->g;
                    w->src[b] = WL_SRC_FUA;
                }
            }
        }
    }
    if (r != 0) {
        if (!w->failed++)
            w->first_err = r;
        atomic_store(&w->stop, true);
    }
    pthread_mutex_unlock(&w->mu);
}

struct wl_thread {
    struct wl *w;
    struct rk_dev *dev;
    uint64_t rng;
    pthread_t t;
};

static void *wl_dev_thread(void *arg)
{
    struct wl_thread *t = arg;
    uint8_t *buf = rk_buf_alloc((size_t)WL_MAX_BLOCKS * STAMP_BLOCK);
    struct wl_op op;
    while (buf && wl_pick(t->w, &t->rng, &op)) {
        int r;
        if (op.flush) {
            r = rk_dev_flush(t->dev);
        } else {
            r = wl_stamp(t->w, &op, buf);
            if (!r)
                r = rk_dev_write(t->dev, buf, (uint64_t)op.n * STAMP_BLOCK, op.start * STAMP_BLOCK,
                                 op.fua ? RK_WRITE_FUA : 0);
        }
        wl_done(t->w, &op, r);
    }
    free(buf);
    return NULL;
}

int wl_run_dev(struct wl *w, struct rk_dev *dev, int nthreads, uint64_t seed)
{
    struct wl_thread th[32];
    if (nthreads < 1 || nthreads > 32)
        return -EINVAL;
    int started = 0, r = 0;
    for (int i = 0; i < nthreads; i++) {
        th[i] = (struct wl_thread){.w = w, .dev = dev, .rng = seed * 64 + (uint64_t)i + 1};
        if (pthread_create(&th[i].t, NULL, wl_dev_thread, &th[i])) {
            r = -EAGAIN;
            atomic_store(&w->stop, true);
            break;
        }
        started++;
    }
    for (int i = 0; i < started; i++)
        pthread_join(th[i].t, NULL);
    return r;
}

/* Classify one block read at index b (data: STAMP_BLOCK bytes). */
static void wl_classify(const struct wl *w, uint64_t b, const uint8_t *data, uint8_t *scratch,
                        struct wl_verify *v)
{
    static const uint8_t zero[STAMP_BLOCK];
    uint64_t claim = stamp_claim(b, data);
    int64_t g = -1;
    if (claim && claim <= w->gen && w->capmacs) {
        const struct wl_mac *e = wl_mac_slot(w->macs, w->capmacs, (b << 32 | claim) + 1);
        g = e->key ? stamp_match(w->key, b, claim, data, e->mac)
                   : stamp_parse(w->key, b, data, w->gen, scratch);
    } else if (!claim && memcmp(data, zero, STAMP_BLOCK) == 0) {
        g = 0;
    }
    uint64_t *bad = NULL;
    if (g < 0)
        bad = &v->garbage;
    else if ((uint32_t)g == w->durable[b])
        v->old++;
    else if ((uint32_t)g > w->durable[b])
        v->neu++;
    else
        bad = w->src[b] == WL_SRC_FUA ? &v->lost_fua : &v->lost_flush;
    if (bad) {
        (*bad)++;
        if (v->first_bad == UINT64_MAX) {
            v->first_bad = b;
            v->first_bad_g = g;
        }
    }
}

void wl_verify(const struct wl *w, struct rk_dev *dev, struct wl_verify *v, wl_skip_fn skip,
               void *ctx)
{
    enum { CHUNK = 64 }; /* blocks per read */
    memset(v, 0, sizeof(*v));
    v->first_bad = UINT64_MAX;
    uint8_t *buf = rk_buf_alloc((size_t)CHUNK * STAMP_BLOCK);
    uint8_t *scratch = rk_buf_alloc(STAMP_BLOCK);
    for (uint64_t b = 0; buf && scratch && b < w->nblocks; b += CHUNK) {
        uint64_t n = w->nblocks - b < CHUNK ? w->nblocks - b : CHUNK;
        if (rk_dev_read(dev, buf, n * STAMP_BLOCK, b * STAMP_BLOCK) == 0) {
            for (uint64_t i = 0; i < n; i++)
                if (skip && skip(ctx, b + i))
                    v->unproven++;
                else
                    wl_classify(w, b + i, buf + i * STAMP_BLOCK, scratch, v);
            continue;
        }
        for (uint64_t i = 0; i < n; i++) { /* block by block: which ones fail */
            if (skip && skip(ctx, b + i)) {
                v->unproven++;
            } else if (rk_dev_read(dev, buf, STAMP_BLOCK, (b + i) * STAMP_BLOCK) == 0) {
                wl_classify(w, b + i, buf, scratch, v);
            } else {
                v->read_errors++;
                if (v->first_bad == UINT64_MAX) {
                    v->first_bad = b + i;
                    v->first_bad_g = -2;
                }
            }
        }
    }
    if (!buf || !scratch)
        v->read_errors = w->nblocks;
    free(buf);
    free(scratch);
}

bool wl_verify_ok(const struct wl_verify *v)
{
    return !v->lost_flush && !v->lost_fua && !v->garbage && !v->read_errors;
}
