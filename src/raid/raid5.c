/* raid5 and raid6: Linux md left-symmetric layouts, stripe-locked read-modify-write or
 * reconstruct-write writes, degraded reads by parity recovery, and the rebuild/scrub hooks. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "raid/parity.h"
#include "raid/raid_int.h"
#include "raid/rangelock.h"
#include "raid/stripe.h"

/*
 * Layout (docs/FORMAT.md "raid5, raid6"): member chunk row s of every slot forms stripe s.
 * Stripe s has parity P on slot p = n-1 - s mod n, for raid6 Q on (p+1) mod n, and data chunk k
 * (k = 0..nd-1, nd = n - nparity) on slot (p + nparity + k) mod n; array chunk c is data chunk
 * c mod nd of stripe c div nd. This is md's ALGORITHM_LEFT_SYMMETRIC (raid5_compute_sector),
 * and data chunk k has Q coefficient g^k as in md.
 *
 * Inside a stripe, blocks are numbered as parity.h wants them: data 0..nd-1, then P (nd), then
 * Q (nd+1). Masks below are over block numbers unless named slot masks.
 *
 * Request flow: a request is cut per stripe; each stripe is handled under its stripe lock in
 * column windows of at most R5_WIN bytes (bounded work buffers), one batch of parallel member
 * reads, the parity computation, then one batch of parallel member writes. Healthy reads go
 * straight to the data chunks without any lock.
 *
 * Stripe data cache (write-through, for adjacent sequential writes): a 1M write that starts or
 * ends inside a stripe leaves that stripe partly written, and the neighbouring request writes the
 * rest. Holding the first request back to gather both (a write-back window) would delay its
 * completion and need cross-request hand-off; instead a few recently written stripes remember
 * which of their data chunks hold content the engine itself just wrote or read under the stripe
 * lock (so it equals what the members hold). When a later partial-stripe write finds (cached
 * chunks + the chunks it fully covers) = every data chunk, it is a reconstruct-write with no
 * member reads; cached chunks also shorten ordinary reconstruct-writes. The first partial write
 * into a stripe still reads (it cannot know its neighbour will come). Rules: an entry is only
 * filled after the member writes of its window succeeded, is dropped on any read/write failure,
 * whenever a slot of the array is not ACTIVE or has recorded bad sectors in the stripe, and by
 * every write path that changes the stripe without updating it (whole-stripe writes, zeroing,
 * repairs); reads never use it. Memory: R5_CACHE_ENTRIES x stripe data bytes, capped at
 * R5_CACHE_BYTES (fewer entries for big stripes; off below 2 entries or when the chunk exceeds
 * the column window), allocated at open.
 *
 * Lock order (no cycles): member range lock (writes, only while a rebuild/scrub job runs; the
 * job holds it around reconstruct/scrub) -> one pool buffer -> stripe locks (one call of
 * stripe_lock_range at a time). Degraded reads take a buffer, then a stripe lock. Nothing waits
 * for a buffer or a range lock while holding a stripe lock. The cache table lock is innermost and
 * only held for lookups; an entry's data is guarded by the stripe lock of its row, plus a busy
 * mark (set under the table lock) so that no other row can take the entry over while in use.
 */

/* Largest column window processed at once: bounds the work buffer at (n + 2) * R5_WIN. */
#define R5_WIN (1024u * 1024u)
/* Memory budget for the stripe buffer pool (at least 2 buffers are always allocated). */
#define R5_POOL_BYTES (64u * 1024u * 1024u)
/* Direct member reads per round of a read request (bounded stack use). */
#define R5_ROUND 64
/* Stripe data cache: at most this many stripes, and at most this many bytes in all. */
#define R5_CACHE_ENTRIES 8
#define R5_CACHE_BYTES   (32u * 1024u * 1024u)
#define R5_NO_ROW        UINT64_MAX

/* One cached stripe: data chunk k is data + k * chunk, valid when bit k of valid is set. */
struct r5_centry {
    uint64_t row;  /* R5_NO_ROW = unused */
    uint64_t used; /* LRU tick */
    uint32_t valid;
    bool busy; /* in use by the holder of row's stripe lock */
    char *data;
};

struct r5_cache {
    pthread_mutex_t lock; /* row, used and busy of every entry */
    int n;                /* 0 = cache off */
    uint64_t tick;
    struct r5_centry e[R5_CACHE_ENTRIES];
    char *mem;
};

struct r5_priv {
    struct stripe_locks locks;
    struct stripe_pool pool;
    struct rk_parity_ctx *pctx;
    uint64_t win; /* column window: min(chunk, R5_WIN) */
    char *zero;   /* win bytes of zeros: the source of partial-stripe write-zeroes */
    struct r5_cache cache;
};

/* Where the blocks of one stripe live. */
struct r5_geo {
    uint32_t n, nd, np;
    uint64_t row; /* stripe number = member chunk row */
    uint32_t slot[RK_MAX_MEMBERS];
    uint32_t blk_of_slot[RK_MAX_MEMBERS];
};

/* One request's scratch: a pool buffer (taken on first use) and a completion batch. */
struct r5_req {
    struct raid_priv *r;
    struct r5_priv *p;
    char *buf;
    struct rk_io_batch batch;
    uint32_t wflags; /* flags of member writes (RK_WRITE_FUA) */
};

/* Member I/O of one batch: one stripe window (at most one read or write per block, plus
 * repairs), or the writes of a run of whole stripes. */
#define R5_BATCH_IOS (2 * RK_MAX_MEMBERS)

struct r5_ios {
    int n;
    struct rk_io io[R5_BATCH_IOS];
    uint32_t slot[R5_BATCH_IOS];
};

static uint32_t r5_nparity(const struct raid_layout *l)
{
    return l->g.level == RK_LEVEL_RAID6 ? 2 : 1;
}

static void r5_geo(const struct raid_layout *l, uint64_t row, struct r5_geo *g)
{
    uint32_t n = l->g.members, np = r5_nparity(l), nd = n - np;
    uint32_t p = n - 1 - (uint32_t)(row % n);
    g->n = n;
    g->np = np;
    g->nd = nd;
    g->row = row;
    g->slot[nd] = p;
    if (np == 2)
        g->slot[nd + 1] = (p + 1) % n;
    for (uint32_t k = 0; k < nd; k++)
        g->slot[k] = (p + np + k) % n;
    for (uint32_t b = 0; b < n; b++)
        g->blk_of_slot[g->slot[b]] = b;
}

static void r5_setup(struct raid_layout *l)
{
    l->size = (uint64_t)(l->g.members - r5_nparity(l)) * l->min_data;
}

static int r5_map(const struct raid_layout *l, uint64_t off, struct rk_raid_extent *copies, int max,
                  uint64_t *run)
{
    uint64_t chunk = l->g.chunk, n = l->g.members, np = r5_nparity(l), nd = n - np;
    uint64_t c = off / chunk, row = c / nd, k = c % nd;
    uint64_t p = n - 1 - row % n;
    if (max > 0) {
        copies[0].slot = (uint32_t)((p + np + k) % n);
        copies[0].member_off = row * chunk + off % chunk;
    }
    *run = chunk - off % chunk;
    return 1;
}

static int raid5_max_failed(uint32_t members)
{
    return 1;
}

static int raid6_max_failed(uint32_t members)
{
    return 2;
}

/* Every stripe has every slot, so data survives while at most nparity slots are gone. */
static bool r5_survives(const struct raid_layout *l, uint32_t alive)
{
    uint32_t all = raid_all_mask(l->g.members);
    return (uint32_t)__builtin_popcount(all & ~alive) <= r5_nparity(l);
}

/* ---- slot states ---- */

static bool r5_readable(struct raid_priv *r, uint32_t slot)
{
    return atomic_load(&r->state[slot]) == RK_SLOT_ACTIVE;
}

static bool r5_writable(struct raid_priv *r, uint32_t slot)
{
    int s = atomic_load(&r->state[slot]);
    return s == RK_SLOT_ACTIVE || s == RK_SLOT_REBUILDING;
}

static uint32_t r5_slot_mask_readable(struct raid_priv *r)
{
    uint32_t m = 0;
    for (uint32_t i = 0; i < r->l.g.members; i++)
        if (r5_readable(r, i))
            m |= 1u << i;
    return m;
}

/* Blocks of stripe g whose member range [moff, moff+len) can be read: ACTIVE slot, and not
 * recorded unreadable by a rebuild (such bytes are rebuilt from the others or give EIO). */
static uint32_t r5_blk_readable(struct raid_priv *r, const struct r5_geo *g, uint64_t moff,
                                uint64_t len)
{
    uint32_t m = 0;
    for (uint32_t b = 0; b < g->n; b++)
        if (r5_readable(r, g->slot[b]) && !raid_bad_hit(r, g->slot[b], moff, len))
            m |= 1u << b;
    return m;
}

/* ---- member I/O of one window ---- */

static void r5_io_add(struct r5_ios *v, struct raid_priv *r, uint32_t slot, enum rk_op op,
                      uint32_t flags, void *buf, uint64_t len, uint64_t moff)
{
    struct rk_io *io = &v->io[v->n];
    memset(io, 0, sizeof(*io));
    io->dev = r->members[slot];
    io->op = op;
    io->flags = flags;
    io->buf = buf;
    io->len = len;
    io->off = r->l.g.data_offset + moff;
    v->slot[v->n++] = slot;
}

/* Submit every io of v in parallel and wait; returns the slot mask of the ios that failed. */
static uint32_t r5_io_run(struct r5_req *q, struct r5_ios *v)
{
    uint32_t failed = 0;
    if (rk_io_run(&q->batch, v->io, v->n))
        for (int i = 0; i < v->n; i++)
            if (v->io[i].result)
                failed |= 1u << v->slot[i];
    return failed;
}

/* Fail every slot whose write failed (a slot that missed a write no longer holds its data). */
static void r5_fail_writes(struct r5_req *q, struct r5_ios *v)
{
    for (int i = 0; i < v->n; i++)
        if (v->io[i].result)
            raid_fail(q->r, v->slot[i], v->io[i].result);
}

static uint32_t r5_blk_mask_of_slots(const struct r5_geo *g, uint32_t slots)
{
    uint32_t m = 0;
    for (uint32_t b = 0; b < g->n; b++)
        if (slots & (1u << g->slot[b]))
            m |= 1u << b;
    return m;
}

static char *r5_blk(struct r5_req *q, uint32_t b)
{
    return q->buf + (uint64_t)b * q->p->win;
}

static void r5_req_init(struct r5_req *q, struct raid_priv *r, uint32_t wflags)
{
    q->r = r;
    q->p = r->level_priv;
    q->buf = NULL;
    q->wflags = wflags;
    rk_io_batch_init(&q->batch);
}

static void r5_req_buf(struct r5_req *q)
{
    if (!q->buf)
        q->buf = stripe_pool_get(&q->p->pool);
}

static void r5_req_done(struct r5_req *q)
{
    if (q->buf)
        stripe_pool_put(&q->p->pool, q->buf);
    rk_io_batch_destroy(&q->batch);
}

/* ---- stripe data cache ---- */

/* The entry of row (caller holds row's stripe lock), marked busy; with create, a free or the
 * least recently used idle entry is taken over (empty). NULL when there is none. */
static struct r5_centry *r5c_get(struct r5_priv *p, uint64_t row, bool create)
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

static void r5c_put(struct r5_priv *p, struct r5_centry *e)
{
    if (!e)
        return;
    pthread_mutex_lock(&p->cache.lock);
    e->busy = false;
    pthread_mutex_unlock(&p->cache.lock);
}

/* Forget rows [row, row+count) (caller holds their stripe locks, so none of them is busy). */
static void r5c_drop(struct r5_priv *p, uint64_t row, uint64_t count)
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

/* True when stripe g may use the cache: every slot ACTIVE and nothing recorded unreadable. */
static bool r5c_usable(struct raid_priv *r, const struct r5_geo *g)
{
    return r5_blk_readable(r, g, g->row * r->l.g.chunk, r->l.g.chunk) == (1u << g->n) - 1;
}

/*
 * Read the blocks of stripe g that are not in excl (and are readable) over columns [lo, hi)
 * into the block buffers, and rebuild the others (want, and whatever else is missing) with the
 * parity code. Read errors exclude that block too and retry. Returns 0 with every block of
 * "want" valid in its buffer, or -EIO when more blocks are missing than the parity covers.
 * *bad_out gets the blocks whose reads failed (candidates for a repair write).
 */
static int r5_recover_window(struct r5_req *q, const struct r5_geo *g, uint64_t lo, uint64_t hi,
                             uint32_t want, uint32_t excl, uint32_t *bad_out)
{
    uint64_t len = hi - lo, moff = g->row * q->r->l.g.chunk + lo;
    uint32_t nblk = g->n, bad = 0;
    uint32_t all = (1u << nblk) - 1;
    for (;;) {
        uint32_t have = r5_blk_readable(q->r, g, moff, len) & ~excl & ~want & ~bad;
        uint32_t missing = all & ~have;
        if ((uint32_t)__builtin_popcount(missing) > g->np)
            return -EIO;
        /* raid6 with one data block lost: P alone rebuilds it, so Q is not read (the parity
         * code recomputes it, which costs less than a member read). */
        uint32_t pbit = 1u << g->nd, qbit = 1u << (g->nd + 1);
        if (g->np == 2 && __builtin_popcount(missing) == 1 && (missing & ((1u << g->nd) - 1)) &&
            (have & pbit)) {
            have &= ~qbit;
            missing |= qbit;
        }
        struct r5_ios v = {.n = 0};
        for (uint32_t b = 0; b < nblk; b++)
            if (have & (1u << b))
                r5_io_add(&v, q->r, g->slot[b], RK_OP_READ, 0, r5_blk(q, b), len, moff);
        uint32_t failed = r5_io_run(q, &v);
        if (failed) {
            bad |= r5_blk_mask_of_slots(g, failed);
            continue;
        }
        void *blocks[RK_MAX_MEMBERS];
        int miss[2], nmiss = 0;
        for (uint32_t b = 0; b < nblk; b++) {
            blocks[b] = r5_blk(q, b);
            if (missing & (1u << b))
                miss[nmiss++] = (int)b;
        }
        if (nmiss &&
            rk_parity_recover(q->p->pctx, (int)g->nd, (int)g->np, len, blocks, miss, nmiss))
            return -EIO;
        if (bad_out)
            *bad_out = bad;
        return 0;
    }
}

/* Write back the blocks in "bad" (their reads failed, their buffers now hold the right
 * content) over columns [lo, hi); a slot that cannot take the repair write is failed. */
static void r5_repair(struct r5_req *q, const struct r5_geo *g, uint64_t lo, uint64_t hi,
                      uint32_t bad)
{
    struct r5_ios v = {.n = 0};
    uint64_t moff = g->row * q->r->l.g.chunk + lo;
    for (uint32_t b = 0; b < g->n; b++)
        if ((bad & (1u << b)) && r5_readable(q->r, g->slot[b]))
            r5_io_add(&v, q->r, g->slot[b], RK_OP_WRITE, 0, r5_blk(q, b), hi - lo, moff);
    if (!v.n)
        return;
    r5c_drop(q->p, g->row, 1); /* only the cached path keeps an entry current */
    if (r5_io_run(q, &v)) {
        r5_fail_writes(q, &v);
        return;
    }
    for (int i = 0; i < v.n; i++)
        rk_info("raid: repaired %llu bytes at member offset %llu on slot %u",
                (unsigned long long)(hi - lo), (unsigned long long)moff, v.slot[i]);
}

/* ---- writes ---- */

/* The touched columns [a[k], b[k]) of each data chunk inside the window (a == b: untouched) and
 * the bytes to write there. */
struct r5_wwin {
    uint64_t lo, hi;
    uint64_t a[RK_MAX_MEMBERS], b[RK_MAX_MEMBERS];
    const char *src[RK_MAX_MEMBERS];
};

enum r5_mode { R5_RMW, R5_RCW, R5_RECOVER };

/*
 * After a successful write of window w in mode: record in the cache entry every data chunk whose
 * whole content is now known (written in full, read + patched over the whole chunk, or already
 * cached and patched with the new bytes).
 */
static void r5c_update(struct r5_req *q, const struct r5_geo *g, const struct r5_wwin *w,
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

/*
 * Write one window of one stripe (stripe lock held). Per window the cheaper of
 * read-modify-write (read the touched data and the parity) and reconstruct-write (read the data
 * chunks the write does not fully cover) is chosen by member reads; when a chunk it needs is on a
 * missing slot, everything readable is read and the missing blocks rebuilt first (RECOVER).
 * ce (NULL: none) is the stripe's cache entry: its valid chunks are not read by reconstruct-write
 * (so a write that completes a cached stripe reads nothing), and it is updated or dropped after.
 */
static int r5_write_window(struct r5_req *q, const struct r5_geo *g, const struct r5_wwin *w,
                           struct r5_centry *ce)
{
    struct raid_priv *r = q->r;
    uint64_t lo = w->lo, len = w->hi - w->lo, moff = g->row * r->l.g.chunk + lo;
    uint32_t nd = g->nd, np = g->np, nblk = g->n;
    uint32_t dmask = (1u << nd) - 1;
    uint32_t touched = 0, full = 0, bad = 0, missing = 0, need = 0;
    uint32_t cv = ce ? ce->valid : 0;
    enum r5_mode mode;

    for (uint32_t k = 0; k < nd; k++) {
        if (w->a[k] < w->b[k])
            touched |= 1u << k;
        if (w->a[k] == w->lo && w->b[k] == w->hi)
            full |= 1u << k;
    }
    /* Parity blocks that will be written: a parity slot that is gone needs no update, and
     * with no parity left to update, data is simply written (nothing to read). */
    uint32_t pwrite = 0;
    for (uint32_t b = nd; b < nblk; b++)
        if (r5_writable(r, g->slot[b]))
            pwrite |= 1u << b;
    for (;;) {
        uint32_t rd = r5_blk_readable(r, g, moff, len) & ~bad, want;
        need = dmask & ~full & ~cv;
        uint32_t rmw_want = pwrite ? touched | pwrite : 0;
        bool rmw_ok = (rmw_want & ~rd) == 0, rcw_ok = (need & ~rd) == 0;
        int rmw_reads = __builtin_popcount(rmw_want), rcw_reads = __builtin_popcount(need);
        if (rmw_ok && (!rcw_ok || rmw_reads <= rcw_reads)) {
            mode = R5_RMW;
            want = rmw_want;
        } else if (rcw_ok) {
            mode = R5_RCW;
            want = need;
        } else {
            mode = R5_RECOVER;
            missing = ((1u << nblk) - 1) & ~rd;
            if ((uint32_t)__builtin_popcount(missing) > np)
                return -EIO;
            want = rd;
        }
        struct r5_ios v = {.n = 0};
        for (uint32_t b = 0; b < nblk; b++)
            if (want & (1u << b))
                r5_io_add(&v, r, g->slot[b], RK_OP_READ, 0, r5_blk(q, b), len, moff);
        uint32_t failed = r5_io_run(q, &v);
        if (!failed)
            break;
        bad |= r5_blk_mask_of_slots(g, failed);
    }

    char *pbuf = r5_blk(q, nd), *qbuf = np == 2 ? r5_blk(q, nd + 1) : NULL;
    if (mode == R5_RMW) {
        /* Only the parity blocks that were read (and will be written) are updated. */
        if (!(pwrite & (1u << nd)))
            pbuf = NULL;
        if (qbuf && !(pwrite & (1u << (nd + 1))))
            qbuf = NULL;
        /* P ^= old ^ new (Q ^= g^k (old ^ new)) over the touched columns only. */
        for (uint32_t k = 0; k < nd; k++) {
            if (!(touched & (1u << k)))
                continue;
            uint64_t off = w->a[k] - lo, n = w->b[k] - w->a[k];
            char *d = r5_blk(q, k) + off;
            if (!pwrite)
                break;
            if (pbuf)
                rk_parity_xor_into(n, pbuf + off, d);
            if (qbuf)
                rk_parity_mul_into((int)k, n, qbuf + off, d);
            memcpy(d, w->src[k], n);
            if (pbuf)
                rk_parity_xor_into(n, pbuf + off, d);
            if (qbuf)
                rk_parity_mul_into((int)k, n, qbuf + off, d);
        }
        pbuf = r5_blk(q, nd);
        qbuf = np == 2 ? r5_blk(q, nd + 1) : NULL;
    } else {
        void *data[RK_MAX_MEMBERS];
        if (mode == R5_RECOVER) {
            void *blocks[RK_MAX_MEMBERS];
            int miss[2], nmiss = 0;
            for (uint32_t b = 0; b < nblk; b++) {
                blocks[b] = r5_blk(q, b);
                if (missing & (1u << b))
                    miss[nmiss++] = (int)b;
            }
            if (nmiss &&
                rk_parity_recover(q->p->pctx, (int)nd, (int)np, len, blocks, miss, nmiss)) {
                if (ce)
                    ce->valid = 0;
                return -EIO;
            }
        }
        for (uint32_t k = 0; k < nd; k++) {
            if (mode == R5_RCW && (full & (1u << k))) {
                data[k] = (void *)w->src[k]; /* only read by the parity code */
                continue;
            }
            if (mode == R5_RCW && (cv & (1u << k))) {
                char *ck = ce->data + (uint64_t)k * r->l.g.chunk + lo;
                if (!(touched & (1u << k))) {
                    data[k] = ck; /* only read by the parity code */
                    continue;
                }
                memcpy(r5_blk(q, k), ck, len);
            }
            data[k] = r5_blk(q, k);
            if (touched & (1u << k))
                memcpy(r5_blk(q, k) + (w->a[k] - lo), w->src[k], w->b[k] - w->a[k]);
        }
        if (np == 2)
            rk_parity_pq((int)nd, len, data, pbuf, qbuf);
        else
            rk_parity_xor((int)nd, len, data, pbuf);
    }

    /* New data where written, new parity, and read-failed data blocks rewritten (repair). */
    struct r5_ios v = {.n = 0};
    for (uint32_t b = 0; b < nblk; b++) {
        uint32_t s = g->slot[b];
        if (!r5_writable(r, s))
            continue;
        if (b >= nd || (mode == R5_RECOVER && (bad & (1u << b))))
            r5_io_add(&v, r, s, RK_OP_WRITE, q->wflags, r5_blk(q, b), len, moff);
        else if (touched & (1u << b))
            r5_io_add(&v, r, s, RK_OP_WRITE, q->wflags, (void *)w->src[b], w->b[b] - w->a[b],
                      g->row * r->l.g.chunk + w->a[b]);
    }
    if (r5_io_run(q, &v)) {
        r5_fail_writes(q, &v);
        if (ce)
            ce->valid = 0;
        if (!r5_survives(&r->l, r5_slot_mask_readable(r)))
            return -EIO;
        return 0;
    }
    if (ce) {
        if (bad || mode == R5_RECOVER)
            ce->valid = 0;
        else
            r5c_update(q, g, w, ce, mode, touched, need);
    }
    return 0;
}

/*
 * Whole stripes [row, row+count) from buf (count fits the work buffer and one io batch): parity
 * computed from the new data alone, then every member write of every stripe in one parallel
 * batch, so a large sequential write costs one round trip per batch, and no reads.
 */
static int r5_full_stripes(struct r5_req *q, const char *buf, uint64_t row, uint64_t count)
{
    struct raid_priv *r = q->r;
    uint64_t chunk = r->l.g.chunk;
    struct r5_ios v = {.n = 0};
    struct r5_geo g;
    int ret = 0;
    stripe_lock_range(&q->p->locks, row, count);
    r5c_drop(q->p, row, count);
    for (uint64_t i = 0; i < count; i++) {
        r5_geo(&r->l, row + i, &g);
        const char *src = buf + i * chunk * g.nd;
        void *data[RK_MAX_MEMBERS];
        char *par = r5_blk(q, (uint32_t)(i * g.np));
        for (uint32_t k = 0; k < g.nd; k++)
            data[k] = (void *)(src + k * chunk); /* only read by the parity code */
        if (g.np == 2)
            rk_parity_pq((int)g.nd, chunk, data, par, par + q->p->win);
        else
            rk_parity_xor((int)g.nd, chunk, data, par);
        for (uint32_t b = 0; b < g.n; b++) {
            if (!r5_writable(r, g.slot[b]))
                continue;
            void *from = b < g.nd ? data[b] : par + (uint64_t)(b - g.nd) * q->p->win;
            r5_io_add(&v, r, g.slot[b], RK_OP_WRITE, q->wflags, from, chunk, (row + i) * chunk);
        }
    }
    if (r5_io_run(q, &v)) {
        r5_fail_writes(q, &v);
        if (!r5_survives(&r->l, r5_slot_mask_readable(r)))
            ret = -EIO;
    }
    stripe_unlock_range(&q->p->locks, row, count);
    return ret;
}

/* Write (buf) or write zeros (buf NULL) over array range [off, off+len), stripe by stripe. */
static int r5_write(struct r5_req *q, const char *buf, uint64_t len, uint64_t off)
{
    const struct raid_layout *l = &q->r->l;
    uint64_t chunk = l->g.chunk, win = q->p->win;
    uint32_t nd = l->g.members - r5_nparity(l);
    uint64_t sbytes = chunk * nd;
    struct r5_geo g;
    int ret = 0;

    r5_req_buf(q);
    while (len) {
        uint64_t row = off / sbytes, soff = off % sbytes;
        uint32_t members = l->g.members, np = members - nd;
        if (buf && soff == 0 && len >= sbytes && chunk <= win) {
            /* A run of whole stripes: as many per batch as parity buffers and ios allow. */
            uint64_t count = len / sbytes, max = (members + 2) / np;
            if (max > R5_BATCH_IOS / members)
                max = R5_BATCH_IOS / members;
            count = count < max ? count : max;
            ret = r5_full_stripes(q, buf, row, count);
            if (ret)
                return ret;
            buf += count * sbytes;
            off += count * sbytes;
            len -= count * sbytes;
            continue;
        }
        uint64_t n = sbytes - soff < len ? sbytes - soff : len;
        uint64_t ca[RK_MAX_MEMBERS], cb[RK_MAX_MEMBERS], hlo = chunk, hhi = 0;
        for (uint32_t k = 0; k < nd; k++) {
            uint64_t s = k * chunk, e = s + chunk;
            uint64_t a = soff > s ? soff : s, b = soff + n < e ? soff + n : e;
            if (a < b) {
                ca[k] = a - s;
                cb[k] = b - s;
                hlo = ca[k] < hlo ? ca[k] : hlo;
                hhi = cb[k] > hhi ? cb[k] : hhi;
            } else {
                ca[k] = cb[k] = 0;
            }
        }
        r5_geo(l, row, &g);
        stripe_lock_range(&q->p->locks, row, 1);
        struct r5_centry *ce = NULL;
        if (r5c_usable(q->r, &g))
            ce = r5c_get(q->p, row, true);
        else
            r5c_drop(q->p, row, 1);
        for (uint64_t lo = hlo; lo < hhi && !ret; lo += win) {
            struct r5_wwin w;
            w.lo = lo;
            w.hi = lo + win < hhi ? lo + win : hhi;
            for (uint32_t k = 0; k < nd; k++) {
                uint64_t a = ca[k] > w.lo ? ca[k] : w.lo, b = cb[k] < w.hi ? cb[k] : w.hi;
                if (a >= b) {
                    w.a[k] = w.b[k] = w.lo;
                    w.src[k] = NULL;
                    continue;
                }
                w.a[k] = a;
                w.b[k] = b;
                /* Array offset of column a of chunk k, relative to the request start. */
                uint64_t rel = row * sbytes + k * chunk + a - off;
                w.src[k] = buf ? buf + rel : q->p->zero;
            }
            ret = r5_write_window(q, &g, &w, ce);
        }
        if (ce && ret)
            ce->valid = 0;
        r5c_put(q->p, ce);
        stripe_unlock_range(&q->p->locks, row, 1);
        if (ret)
            return ret;
        if (buf)
            buf += n;
        off += n;
        len -= n;
    }
    return 0;
}

/*
 * Whole stripes [row, row+count): zero data and parity on every writable slot with one member
 * write-zeroes each (the stripes are contiguous rows on every member). Zeros are consistent
 * parity (P and Q of zero data are zero), which member discard would not guarantee: a member
 * may keep old data on discard, so discard requests also zero.
 */
static int r5_zero_stripes(struct r5_req *q, uint64_t row, uint64_t count, uint32_t flags)
{
    struct raid_priv *r = q->r;
    uint64_t chunk = r->l.g.chunk;
    struct r5_ios v = {.n = 0};
    int ret = 0;
    stripe_lock_range(&q->p->locks, row, count);
    r5c_drop(q->p, row, count);
    for (uint32_t s = 0; s < r->l.g.members; s++)
        if (r5_writable(r, s))
            r5_io_add(&v, r, s, RK_OP_WRITE_ZEROES, flags, NULL, count * chunk, row * chunk);
    if (r5_io_run(q, &v)) {
        r5_fail_writes(q, &v);
        if (!r5_survives(&r->l, r5_slot_mask_readable(r)))
            ret = -EIO;
    }
    stripe_unlock_range(&q->p->locks, row, count);
    return ret;
}

/* Discard (zero = false) or write-zeroes over [off, off+len): whole stripes are zeroed on the
 * members; the partial stripes at the ends are written with zeros (write-zeroes) or left alone
 * (discard: advisory, and a partial-stripe discard could only break parity). */
static int r5_zero(struct r5_req *q, uint64_t len, uint64_t off, bool zero, uint32_t flags)
{
    const struct raid_layout *l = &q->r->l;
    uint64_t sbytes = (uint64_t)l->g.chunk * (l->g.members - r5_nparity(l));
    uint64_t end = off + len;
    uint64_t first = (off + sbytes - 1) / sbytes, last = end / sbytes; /* whole: [first, last) */
    int ret = 0;
    if (first >= last) {
        return zero ? r5_write(q, NULL, len, off) : 0;
    }
    if (zero && off < first * sbytes)
        ret = r5_write(q, NULL, first * sbytes - off, off);
    if (!ret)
        ret = r5_zero_stripes(q, first, last - first, zero ? flags : 0);
    if (!ret && zero && last * sbytes < end)
        ret = r5_write(q, NULL, end - last * sbytes, last * sbytes);
    return ret;
}

/* ---- reads ---- */

/* Read array range [off, off+len) of one data chunk through parity recovery; with bad_slot set
 * (a read error there), the recovered data is written back over the bad slot. */
static int r5_read_degraded(struct r5_req *q, char *dst, uint64_t len, uint64_t off, int bad_slot)
{
    const struct raid_layout *l = &q->r->l;
    uint64_t chunk = l->g.chunk, win = q->p->win;
    uint32_t nd = l->g.members - r5_nparity(l);
    uint64_t c = off / chunk, row = c / nd;
    uint32_t k = (uint32_t)(c % nd);
    uint64_t col = off % chunk;
    struct r5_geo g;
    int ret = 0;

    r5_req_buf(q);
    r5_geo(l, row, &g);
    stripe_lock_range(&q->p->locks, row, 1);
    for (uint64_t done = 0; done < len && !ret;) {
        uint64_t n = len - done < win ? len - done : win;
        uint32_t bad = 0;
        ret = r5_recover_window(q, &g, col + done, col + done + n, 1u << k, 0, &bad);
        if (ret)
            break;
        memcpy(dst + done, r5_blk(q, k), n);
        if (bad_slot >= 0)
            bad |= 1u << k;
        r5_repair(q, &g, col + done, col + done + n, bad);
        done += n;
    }
    stripe_unlock_range(&q->p->locks, row, 1);
    return ret;
}

struct r5_piece {
    char *buf;
    uint64_t off, len;
    uint32_t slot;
    int io; /* index in the round's ios, -1 = slot not readable */
};

static int r5_read(struct r5_req *q, char *buf, uint64_t len, uint64_t off)
{
    struct raid_priv *r = q->r;
    const struct raid_layout *l = &r->l;
    struct rk_io io[R5_ROUND];
    struct r5_piece pc[R5_ROUND];
    int ret = 0;

    while (len) {
        int npc = 0, nio = 0;
        while (len && npc < R5_ROUND) {
            struct rk_raid_extent e;
            uint64_t run;
            r5_map(l, off, &e, 1, &run);
            uint64_t n = run < len ? run : len;
            struct r5_piece *p = &pc[npc++];
            p->buf = buf;
            p->off = off;
            p->len = n;
            p->slot = e.slot;
            p->io = -1;
            if (r5_readable(r, e.slot) && !raid_bad_hit(r, e.slot, e.member_off, n)) {
                struct rk_io *x = &io[nio];
                memset(x, 0, sizeof(*x));
                x->dev = r->members[e.slot];
                x->op = RK_OP_READ;
                x->buf = buf;
                x->len = n;
                x->off = l->g.data_offset + e.member_off;
                p->io = nio++;
            }
            buf += n;
            off += n;
            len -= n;
        }
        int errs = rk_io_run(&q->batch, io, nio);
        for (int i = 0; i < npc; i++) {
            struct r5_piece *p = &pc[i];
            if (p->io >= 0 && (!errs || !io[p->io].result))
                continue;
            int bad = p->io >= 0 ? (int)p->slot : -1;
            if (r5_read_degraded(q, p->buf, p->len, p->off, bad))
                ret = -EIO;
        }
    }
    return ret;
}

/* The level's request hook (raid_int.h). */
static int r5_rw(struct raid_priv *r, enum rk_op op, char *buf, uint64_t len, uint64_t off,
                 uint32_t flags)
{
    struct r5_req q;
    struct raid_range node;
    bool locked = false;
    int ret;
    r5_req_init(&q, r, flags & RK_WRITE_FUA);
    if (op != RK_OP_READ) {
        /*
         * While a rebuild or scrub runs, writes also take the member range lock of the whole
         * rows they touch (parity columns included): the job computes a row under that lock and
         * writes it afterwards, so a write in between would be overwritten. The array range of
         * whole stripes [first, last] maps to exactly those rows. Taken before any pool buffer,
         * because a job holding the range lock needs a buffer to make progress.
         */
        uint64_t sbytes = (uint64_t)r->l.g.chunk * (r->l.g.members - r5_nparity(&r->l));
        uint64_t first = off / sbytes, last = (off + len - 1) / sbytes;
        locked = raid_write_begin(r, &node, first * sbytes, (last - first + 1) * sbytes);
    }
    switch (op) {
    case RK_OP_READ:
        ret = r5_read(&q, buf, len, off);
        break;
    case RK_OP_WRITE:
        ret = r5_write(&q, buf, len, off);
        break;
    case RK_OP_DISCARD:
        ret = r5_zero(&q, len, off, false, 0);
        break;
    case RK_OP_WRITE_ZEROES:
        ret = r5_zero(&q, len, off, true, flags);
        break;
    default:
        ret = -EINVAL;
    }
    r5_req_done(&q);
    if (op != RK_OP_READ)
        raid_write_end(r, &node, locked);
    return ret;
}

/* ---- rebuild and scrub hooks ---- */

static int r5_check_range(struct raid_priv *r, uint64_t member_off, uint64_t len)
{
    uint64_t chunk = r->l.g.chunk;
    if (member_off % chunk || len % chunk || member_off > r->l.min_data ||
        len > r->l.min_data - member_off)
        return -EINVAL;
    return 0;
}

static int r5_reconstruct(struct raid_priv *r, uint32_t slot, uint64_t member_off, uint64_t len,
                          void *out)
{
    struct r5_req q;
    uint64_t chunk = r->l.g.chunk;
    struct r5_geo g;
    int ret = r5_check_range(r, member_off, len);
    if (ret || slot >= r->l.g.members)
        return ret ? ret : -EINVAL;
    r5_req_init(&q, r, 0);
    r5_req_buf(&q);
    for (uint64_t done = 0; done < len && !ret; done += chunk) {
        uint64_t row = (member_off + done) / chunk;
        r5_geo(&r->l, row, &g);
        uint32_t b = g.blk_of_slot[slot];
        stripe_lock_range(&q.p->locks, row, 1);
        for (uint64_t lo = 0; lo < chunk && !ret; lo += q.p->win) {
            uint64_t hi = lo + q.p->win < chunk ? lo + q.p->win : chunk;
            uint32_t bad = 0;
            ret = r5_recover_window(&q, &g, lo, hi, 1u << b, 1u << b, &bad);
            if (ret)
                break;
            memcpy((char *)out + done + lo, r5_blk(&q, b), hi - lo);
            r5_repair(&q, &g, lo, hi, bad & ~(1u << b));
        }
        stripe_unlock_range(&q.p->locks, row, 1);
    }
    r5_req_done(&q);
    return ret;
}

static int r5_scrub(struct raid_priv *r, uint64_t member_off, uint64_t len, bool repair,
                    uint64_t *mismatches)
{
    struct r5_req q;
    uint64_t chunk = r->l.g.chunk;
    struct r5_geo g;
    int ret = r5_check_range(r, member_off, len);
    if (ret)
        return ret;
    r5_req_init(&q, r, 0);
    r5_req_buf(&q);
    for (uint64_t done = 0; done < len && !ret; done += chunk) {
        uint64_t row = (member_off + done) / chunk, moff = row * chunk;
        bool mism = false;
        r5_geo(&r->l, row, &g);
        uint32_t all = (1u << g.n) - 1, nd = g.nd;
        stripe_lock_range(&q.p->locks, row, 1);
        for (uint64_t lo = 0; lo < chunk && !ret; lo += q.p->win) {
            uint64_t hi = lo + q.p->win < chunk ? lo + q.p->win : chunk, n = hi - lo;
            /* A degraded stripe has no redundancy left to compare (raid6 with one slot gone
             * could still check, but a rebuild is what that stripe needs). */
            if (r5_blk_readable(r, &g, moff + lo, n) != all)
                break;
            uint32_t bad = 0;
            ret = r5_recover_window(&q, &g, lo, hi, 0, 0, &bad);
            if (ret)
                break;
            if (bad) {
                /* Unreadable sectors were rebuilt from parity: write them back. */
                r5_repair(&q, &g, lo, hi, bad);
                continue;
            }
            void *data[RK_MAX_MEMBERS];
            for (uint32_t k = 0; k < nd; k++)
                data[k] = r5_blk(&q, k);
            char *np0 = r5_blk(&q, g.n), *np1 = r5_blk(&q, g.n + 1);
            if (g.np == 2)
                rk_parity_pq((int)nd, n, data, np0, np1);
            else
                rk_parity_xor((int)nd, n, data, np0);
            bool bp = memcmp(np0, r5_blk(&q, nd), n) != 0;
            bool bq = g.np == 2 && memcmp(np1, r5_blk(&q, nd + 1), n) != 0;
            if (!bp && !bq)
                continue;
            mism = true;
            if (!repair)
                continue;
            struct r5_ios v = {.n = 0};
            if (bp && r5_writable(r, g.slot[nd]))
                r5_io_add(&v, r, g.slot[nd], RK_OP_WRITE, 0, np0, n, moff + lo);
            if (bq && r5_writable(r, g.slot[nd + 1]))
                r5_io_add(&v, r, g.slot[nd + 1], RK_OP_WRITE, 0, np1, n, moff + lo);
            if (r5_io_run(&q, &v)) {
                r5_fail_writes(&q, &v);
                ret = -EIO;
            }
        }
        stripe_unlock_range(&q.p->locks, row, 1);
        if (mism && mismatches)
            (*mismatches)++;
    }
    r5_req_done(&q);
    return ret;
}

/* ---- open / close ---- */

/* Allocate the stripe data cache (see the header comment for its size); without memory the
 * array simply runs without it. */
static void r5c_open(struct raid_priv *r, struct r5_priv *p)
{
    uint64_t chunk = r->l.g.chunk;
    uint64_t sbytes = chunk * (r->l.g.members - r5_nparity(&r->l));
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

static void r5_close(struct raid_priv *r)
{
    struct r5_priv *p = r->level_priv;
    if (!p)
        return;
    stripe_pool_destroy(&p->pool);
    stripe_locks_destroy(&p->locks);
    rk_parity_ctx_destroy(p->pctx);
    if (p->cache.n)
        pthread_mutex_destroy(&p->cache.lock);
    free(p->cache.mem);
    free(p->zero);
    free(p);
    r->level_priv = NULL;
}

static int r5_open(struct raid_priv *r)
{
    struct r5_priv *p = calloc(1, sizeof(*p));
    if (!p)
        return -ENOMEM;
    p->win = r->l.g.chunk < R5_WIN ? r->l.g.chunk : R5_WIN;
    /* Block buffers of a window: n members plus two for the scrub's recomputed parity. */
    uint64_t bufsize = (uint64_t)(r->l.g.members + 2) * p->win;
    uint64_t nbuf = R5_POOL_BYTES / bufsize;
    nbuf = nbuf < 2 ? 2 : nbuf > STRIPE_POOL_MAX ? STRIPE_POOL_MAX : nbuf;
    stripe_locks_init(&p->locks);
    int ret = stripe_pool_init(&p->pool, (int)nbuf, bufsize);
    if (ret) {
        stripe_locks_destroy(&p->locks);
        free(p);
        return ret;
    }
    r->level_priv = p;
    p->zero = rk_buf_alloc(p->win);
    ret = p->zero ? rk_parity_ctx_create(0, &p->pctx) : -ENOMEM;
    if (ret) {
        r5_close(r);
        return ret;
    }
    memset(p->zero, 0, p->win);
    r5c_open(r, p);
    return 0;
}

const struct raid_level raid_level_raid5 = {
    .level = RK_LEVEL_RAID5,
    .name = "raid5",
    .min_members = 3,
    .max_copies = 1,
    .max_failed = raid5_max_failed,
    .setup = r5_setup,
    .map = r5_map,
    .survives = r5_survives,
    .rw = r5_rw,
    .reconstruct = r5_reconstruct,
    .scrub = r5_scrub,
    .open = r5_open,
    .close = r5_close,
    .write_hole = true,
};

const struct raid_level raid_level_raid6 = {
    .level = RK_LEVEL_RAID6,
    .name = "raid6",
    .min_members = 4,
    .max_copies = 1,
    .max_failed = raid6_max_failed,
    .setup = r5_setup,
    .map = r5_map,
    .survives = r5_survives,
    .rw = r5_rw,
    .reconstruct = r5_reconstruct,
    .scrub = r5_scrub,
    .open = r5_open,
    .close = r5_close,
    .write_hole = true,
};
