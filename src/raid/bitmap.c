/* The write-intent bitmap layer of the engine (bitmap.h): region accounting on the write path,
 * the FUA writes of the area that set bits, the cleaner thread that clears idle ones, and the
 * unsynced-region record of a resync. */
#include "raid/bitmap.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/util.h"
#include "raid/rangelock.h"

#define BM_TICK_MS_DEFAULT 1000u
#define BM_IDLE_MS_DEFAULT 5000u

/* Write buf (an encoded area) FUA to every writable member. A member that fails is failed;
 * -EIO when the slots left no longer hold all data. Called by the one writer of bm_sync. */
static int bm_write_area(struct raid_priv *r, const uint8_t *buf)
{
    struct raid_bitmap *bm = r->bm;
    return raid_members_round(r, RK_OP_WRITE, buf, bm->area_size, bm->area_off, RK_WRITE_FUA);
}

/* A caller of bm_sync_gen, queued in arrival order (on its stack). */
struct bm_wait {
    pthread_cond_t cond;
    uint64_t my; /* the generation it needs durable */
    bool done;   /* an area write with g >= my completed ... */
    int err;     /* ... with this result */
    struct bm_wait *next;
};

/* Wake w (if any). Caller holds bm->lock. */
static void bm_wake(struct bm_wait *w)
{
    if (w)
        pthread_cond_signal(&w->cond);
}

/* The first queued caller whose generation no completed write covers (NULL if none). */
static struct bm_wait *bm_first_undone(struct raid_bitmap *bm)
{
    struct bm_wait *w = bm->wq_head;
    while (w && w->done)
        w = w->next;
    return w;
}

/*
 * Make the image as of generation my durable on the members: returns once an area write that
 * started at generation my or later (so it holds every bit set before my was taken) completed,
 * with that write's result. One write runs at a time, without bm->lock (it encodes a copy of the
 * image first); the callers that queue meanwhile share the next write, so a burst of first
 * writes into many regions costs two area writes, not one each.
 *
 * Callers leave in the order they came (a queue, each waking the next): the writes released by
 * one area write then reach the members in the order the client sent them. Released together
 * they reached the members in no order, and a disk that took a stream's writes out of order
 * paid a rotation for each (bench/RESULTS.md, "the order the stream arrives in"). my never
 * decreases along the queue (gen_want only grows, and a caller takes it under bm->lock as it
 * queues), so a caller whose write completed never waits behind one whose write did not. Only
 * the first queued caller not yet covered starts a write, when none runs. Caller holds bm->lock
 * (released while waiting or writing).
 */
static int bm_sync_gen(struct raid_priv *r, uint64_t my)
{
    struct raid_bitmap *bm = r->bm;
    struct bm_wait w = {.my = my, .done = bm->gen_done >= my, .err = bm->gen_err};
    pthread_cond_init(&w.cond, NULL);
    if (bm->wq_tail)
        bm->wq_tail->next = &w;
    else
        bm->wq_head = &w;
    bm->wq_tail = &w;
    for (;;) {
        if (w.done && bm->wq_head == &w)
            break;
        if (w.done || bm->writing || bm_first_undone(bm) != &w) {
            pthread_cond_wait(&w.cond, &bm->lock);
            continue;
        }
        bm->writing = true;
        uint64_t g = bm->gen_want;
        bool sets = bm->img_sets;
        bm->img_sets = false;
        bm->hdr.events++;
        memcpy(bm->wbuf, bm->area, (size_t)bm->area_size);
        rk_bm_encode(&bm->hdr, bm->wbuf, bm->area_size);
        pthread_mutex_unlock(&bm->lock);
        int err = bm_write_area(r, bm->wbuf);
        pthread_mutex_lock(&bm->lock);
        if (sets && !err)
            atomic_fetch_add(&bm->sets, 1);
        else if (sets)
            bm->img_sets = true; /* the next write carries them */
        bm->writing = false;
        bm->gen_done = g;
        bm->gen_err = err;
        for (struct bm_wait *q = bm->wq_head; q && q->my <= g; q = q->next)
            if (!q->done) {
                q->done = true;
                q->err = err;
            }
        if (bm->wq_head != &w)
            bm_wake(bm->wq_head);     /* the queue's head leaves first */
        bm_wake(bm_first_undone(bm)); /* and the first not covered starts the next write */
    }
    bm->wq_head = w.next;
    if (!w.next)
        bm->wq_tail = NULL;
    bm_wake(w.next);
    pthread_cond_destroy(&w.cond);
    return w.err;
}

/* The caller changed the image: make that change durable (a new generation). Caller holds
 * bm->lock. */
static int bm_sync(struct raid_priv *r)
{
    return bm_sync_gen(r, ++r->bm->gen_want);
}

/* Set or clear bit i of the image. Caller holds bm->lock (or is the only user: attach). */
static void bm_bit(struct raid_bitmap *bm, uint64_t i, bool on)
{
    uint8_t *b = &bm->area[RK_BM_HDR_SIZE + i / 8];
    if (on && !(*b & (1u << (i % 8)))) {
        bm->img_sets = true;
        atomic_fetch_add(&bm->bits_set, 1);
    }
    *b = on ? (uint8_t)(*b | (1u << (i % 8))) : (uint8_t)(*b & ~(1u << (i % 8)));
}

/* A stream's look-ahead (bitmap.h BM_AHEAD_BYTES): set in the image the bits of the regions from
 * region `from` on whose bit is neither durable nor in the image, stopping at the first one that
 * is (the stream has been there, or another writer sets it). Their last tick is now, so the
 * cleaner gives them the idle time from here. The caller makes them durable with a new
 * generation and then marks them BM_SET; on error they stay set in the image only (a set bit is
 * always safe). Caller holds bm->lock. Returns how many: regions [from, from + n). */
static uint32_t bm_ahead(struct raid_bitmap *bm, uint64_t from)
{
    uint64_t want = bm_ahead_regions(bm->region);
    uint32_t n = 0;
    for (uint64_t j = from; j < bm->nregions && n < want; j++, n++) {
        if ((atomic_load(&bm->state[j]) & BM_SET) || rk_bm_test(bm->area, j))
            break;
        atomic_store(&bm->last[j], atomic_load(&bm->tick));
        bm_bit(bm, j, true);
    }
    return n;
}

/* After the stream's look-ahead window [.., ahead_end) was set (or extended): arm the next
 * window's area write for the write that ends in its second half. Caller holds bm->lock. */
static void bm_arm_refill(struct raid_bitmap *bm)
{
    uint64_t half = bm_ahead_regions(bm->region) / 2;
    bool armed =
        bm->ahead_run >= BM_AHEAD_RUN && bm->ahead_end < bm->nregions && bm->ahead_end > half;
    atomic_store(&bm->refill_at, armed ? bm->ahead_end - half : UINT64_MAX);
}

/* Regions [from, from + na) set ahead are durable: BM_SET, the next window armed. Holds lock. */
static void bm_ahead_durable(struct raid_bitmap *bm, uint64_t from, uint32_t na)
{
    for (uint32_t k = 0; k < na; k++)
        atomic_fetch_or(&bm->state[from + k], BM_SET);
    if (na && bm->ahead_end == from + na)
        bm_arm_refill(bm);
}

/* Set the stream's next look-ahead window as bm_get's look-ahead does (a new generation; on error
 * the bits stay in the image only, always safe). Caller holds bm->lock (bm_sync drops it). */
static void bm_refill_locked(struct raid_priv *r)
{
    struct raid_bitmap *bm = r->bm;
    uint64_t from = bm->ahead_end;
    /* a random write may have reset the stream since; an unrecorded failure stops all writes */
    if (from >= bm->nregions || bm->ahead_run < BM_AHEAD_RUN || atomic_load(&r->writes_stopped))
        return;
    uint32_t na = bm_ahead(bm, from);
    if (!na)
        return;
    bm->ahead_end = from + na;
    if (!bm_sync(r))
        bm_ahead_durable(bm, from, na);
}

/* A write of the stream ended in region i >= refill_at: the first such writer disarms it and
 * has the cleaner set the next window (without a cleaner, sets it itself); no request waits. */
static void bm_refill(struct raid_priv *r, uint64_t i)
{
    struct raid_bitmap *bm = r->bm;
    pthread_mutex_lock(&bm->lock);
    if (i >= atomic_load(&bm->refill_at) && i < bm->ahead_end && bm->ahead_run >= BM_AHEAD_RUN) {
        atomic_store(&bm->refill_at, UINT64_MAX);
        if (bm->has_cleaner) {
            bm->refill_req = true;
            pthread_cond_broadcast(&bm->cond);
        } else {
            bm_refill_locked(r);
        }
    }
    pthread_mutex_unlock(&bm->lock);
}

/* Region i, whose bit a writer sets now, continues the stream that set bits up to ahead_end:
 * it is that region, or every region between is set already (the stream passed them on the
 * fast path, e.g. a look-ahead stopped at a region set before). Caller holds bm->lock. */
static bool bm_stream_goes_on(struct raid_bitmap *bm, uint64_t i)
{
    if (i < bm->ahead_end || i - bm->ahead_end > BM_AHEAD_MAX)
        return false;
    for (uint64_t j = bm->ahead_end; j < i; j++)
        if (!(atomic_load(&bm->state[j]) & BM_SET))
            return false;
    return true;
}

/* Count one write in region i; sets its bit on disk first when needed. */
static int bm_get(struct raid_priv *r, uint64_t i)
{
    struct raid_bitmap *bm = r->bm;
    atomic_store(&bm->last[i], atomic_load(&bm->tick));
    uint32_t v = atomic_load(&bm->state[i]);
    while (v & BM_SET)
        if (atomic_compare_exchange_weak(&bm->state[i], &v, v + 1))
            return 0;
    pthread_mutex_lock(&bm->lock);
    v = atomic_fetch_add(&bm->state[i], 1);
    int ret = 0;
    if (!(v & BM_SET)) {
        /*
         * The bit may be in the image already: another writer set it and waits for its area
         * write (v > 0), or a failed one left it. Then this writer waits for generation gen_want
         * instead of asking for a new one (a sequential stream enters each region with several
         * writes in flight; each used to cost every member one more FUA area write, in another
         * place on the disk). Durability: every change of a bit from 0 to 1 in the image is made
         * under bm->lock in the same critical section that raises gen_want (bm_sync, here and in
         * raid_bitmap_begin_member and rk_raid_bitmap_mark; the loaded bits of attach are on the
         * members already), and an area write copies the image and takes g = gen_want in one
         * critical section. So the bit was set at a generation <= gen_want now, and an area write
         * with g >= gen_want copied the image after that: it holds the bit. The write under way
         * now may have started before the bit was set: its g is then below the generation that
         * set it, so below gen_want, and it does not count. Nothing clears the bit meanwhile: the
         * cleaner clears only a region whose state is exactly BM_SET, and this writer's count stays
         * in state until it leaves. bm_sync_gen returns the result of the first completed write
         * that covered it, whose g >= gen_want: on success the bit is on every writable member.
         * Without a writer or a write pending (v == 0, gen_done == gen_want: a failed attempt left
         * the bit) a new write is asked for. Tests: unit/test_bitmap_share
         * (test_waiter_needs_later_write fails if a waiter proceeds on the write under way),
         * unit/test_bitmap test_engine_order.
         */
        bool was = rk_bm_test(bm->area, i);
        bool pending = was && (v > 0 || bm->gen_done < bm->gen_want);
        bm_bit(bm, i, true); /* stays set on error: a set bit is always safe */
        uint32_t na = 0;     /* regions [i + 1, i + 1 + na) set ahead */
        if (!was) {          /* this writer sets it: the stream goes on here or starts over */
            bm->ahead_run = bm_stream_goes_on(bm, i) ? bm->ahead_run + 1 : 1;
            na = bm->ahead_run >= BM_AHEAD_RUN ? bm_ahead(bm, i + 1) : 0;
            bm->ahead_end = i + 1 + na;
            atomic_store(&bm->refill_at, UINT64_MAX); /* armed once durable, below */
        }
        /* A pending waiter never looks ahead (was is true): bits set ahead always come with a
         * new generation (bm_sync), never with one another writer's area write may have copied
         * the image for already. */
        ret = pending ? bm_sync_gen(r, bm->gen_want) : bm_sync(r);
        if (ret) {
            atomic_fetch_sub(&bm->state[i], 1);
        } else {
            atomic_fetch_or(&bm->state[i], BM_SET);
            bm_ahead_durable(bm, i + 1, na);
        }
    }
    pthread_mutex_unlock(&bm->lock);
    return ret;
}

static void bm_put(struct raid_bitmap *bm, uint64_t i)
{
    atomic_fetch_sub(&bm->state[i], 1);
    atomic_store(&bm->last[i], atomic_load(&bm->tick));
}

int raid_bitmap_begin(struct raid_priv *r, uint64_t off, uint64_t len, struct raid_bm_hold *h)
{
    struct raid_bitmap *bm = r->bm;
    h->first = 1;
    h->last = 0;
    if (!bm || !bm->area_off || !len)
        return 0;
    uint64_t lo, hi;
    raid_member_span(r, off, len, &lo, &hi);
    uint64_t first = lo / bm->region, last = (hi - 1) / bm->region;
    if (last >= bm->nregions)
        last = bm->nregions - 1;
    for (uint64_t i = first; i <= last; i++) {
        int ret = bm_get(r, i);
        if (ret) {
            while (i-- > first)
                bm_put(bm, i);
            return ret;
        }
    }
    h->first = first;
    h->last = last;
    return 0;
}

int raid_bitmap_begin_member(struct raid_priv *r, uint64_t member_off, uint64_t len,
                             struct raid_bm_hold *h)
{
    struct raid_bitmap *bm = r->bm;
    h->first = 1;
    h->last = 0;
    if (!bm || !bm->area_off || !len || member_off / bm->region >= bm->nregions)
        return 0;
    uint64_t first = member_off / bm->region, last = (member_off + len - 1) / bm->region;
    if (last >= bm->nregions)
        last = bm->nregions - 1;
    bool need = false;
    pthread_mutex_lock(&bm->lock);
    for (uint64_t i = first; i <= last; i++) {
        atomic_store(&bm->last[i], atomic_load(&bm->tick));
        if (!(atomic_fetch_add(&bm->state[i], 1) & BM_SET)) {
            bm_bit(bm, i, true);
            need = true;
        }
    }
    int ret = need ? bm_sync(r) : 0; /* one area write for the whole span */
    for (uint64_t i = first; i <= last; i++) {
        if (ret)
            atomic_fetch_sub(&bm->state[i], 1);
        else
            atomic_fetch_or(&bm->state[i], BM_SET);
    }
    pthread_mutex_unlock(&bm->lock);
    if (!ret) {
        h->first = first;
        h->last = last;
    }
    return ret;
}

void raid_bitmap_end(struct raid_priv *r, struct raid_bm_hold *h)
{
    for (uint64_t i = h->first; i <= h->last; i++)
        bm_put(r->bm, i);
    if (h->first <= h->last && h->last >= atomic_load(&r->bm->refill_at))
        bm_refill(r, h->last);
}

bool raid_bitmap_unsynced(struct raid_priv *r, uint64_t member_off, uint64_t len)
{
    struct raid_bitmap *bm = r->bm;
    if (!bm || !atomic_load_explicit(&bm->resync_pending, memory_order_acquire) || !len)
        return false;
    uint64_t first = member_off / bm->region, last = (member_off + len - 1) / bm->region;
    for (uint64_t i = first; i <= last && i < bm->nregions; i++)
        if (atomic_load_explicit(&bm->unsynced[i], memory_order_acquire) != BM_SYNCED)
            return true;
    return false;
}

void raid_bitmap_synced(struct raid_priv *r, uint64_t i)
{
    struct raid_bitmap *bm = r->bm;
    uint8_t u = atomic_exchange(&bm->unsynced[i], BM_SYNCED);
    if (u == BM_PINNED)
        bm_put(bm, i);
}

void raid_bitmap_mark_all(struct raid_priv *r, uint64_t from)
{
    struct raid_bitmap *bm = r->bm;
    for (uint64_t i = 0; i < bm->nregions; i++) {
        uint8_t want = BM_SYNCED;
        if ((i + 1) * bm->region > from)
            atomic_compare_exchange_strong(&bm->unsynced[i], &want, BM_UNSYNCED);
    }
    atomic_store(&bm->resync_pending, 1);
}

int raid_bitmap_join(struct raid_priv *r)
{
    struct raid_bitmap *bm = r->bm;
    if (!bm || !bm->area_off)
        return 0;
    pthread_mutex_lock(&bm->lock);
    int ret = bm_sync(r); /* a write that starts now: the new slot is among the writable ones */
    pthread_mutex_unlock(&bm->lock);
    return ret;
}

bool raid_flush_writable(struct raid_priv *r)
{
    /* Inside the level's flush hooks, as a client FLUSH (engine.c raid_flush): raid5/6 retire
     * the log entries of every write complete before the flush began, so a write that no
     * client FLUSH followed (the bitmap cleaner, resync checkpoints) does not stay live. */
    uint64_t mark[RK_MAX_MEMBERS];
    if (r->l.lvl->flush_begin)
        r->l.lvl->flush_begin(r, mark);
    uint32_t usable = raid_slot_mask(r, RAID_STATES_WRITE);
    bool ok = true;
    for (uint32_t i = 0; i < r->l.g.members; i++)
        if ((usable & (1u << i)) && rk_dev_flush(r->members[i]))
            ok = false;
    if (ok && r->l.lvl->flush_end)
        r->l.lvl->flush_end(r, mark);
    return ok;
}

bool raid_bitmap_degraded(struct raid_priv *r)
{
    return raid_slot_mask(r, RAID_STATES_READ) != raid_all_mask(r->l.g.members);
}

bool raid_bitmap_region_set(struct raid_priv *r, uint64_t i)
{
    struct raid_bitmap *bm = r->bm;
    return bm && i < bm->nregions && (atomic_load(&bm->state[i]) & BM_SET);
}

/* One cleaner pass: regions with their bit set, nothing in flight and no write for the idle
 * time are candidates; after a flush of the members (raid_flush_writable), each candidate still
 * untouched since the scan (its state word still exactly BM_SET, its last tick old) loses its bit,
 * and the area is rewritten. While degraded no bit is cleared, but the members are still flushed
 * once per idle transition: only when some candidate was written since the last flush of the
 * cleaner (so a region that stays idle costs one flush, not one per tick). all: every idle
 * region, whatever its age (close). */
static void bm_clean(struct raid_priv *r, bool all)
{
    struct raid_bitmap *bm = r->bm;
    uint32_t now = atomic_fetch_add(&bm->tick, 1) + 1, n = 0;
    bool fresh = false; /* a candidate was written since the last flush of the cleaner began */
    for (uint64_t i = 0; i < bm->nregions; i++) {
        uint32_t last = atomic_load(&bm->last[i]);
        if (atomic_load(&bm->state[i]) == BM_SET && (all || now - last >= bm->idle_ticks)) {
            bm->cand[n++] = (uint32_t)i;
            fresh |= !bm->flushed || (int32_t)(last - bm->flush_tick) >= 0;
        }
    }
    if (!n || atomic_load(&r->writes_stopped))
        return;
    bool degraded = raid_bitmap_degraded(r);
    if (degraded && !fresh)
        return;
    if (!raid_flush_writable(r))
        return;
    bm->flush_tick = now; /* every write that ended before tick now is durable */
    bm->flushed = true;
    /* Again after the flush: a slot that failed while it ran (a remote member's flush can take
     * its whole op timeout) must not see the clear's event recorded, which would make its
     * re-add a whole rebuild. */
    if (degraded || raid_bitmap_degraded(r))
        return;
    /* The clear's event count is durable before any bit goes: a member copied away before it
     * has a lower count and is never re-added from the bitmap (docs/FORMAT.md "Re-add"). */
    if (r->ev.bitmap_clearing && r->ev.bitmap_clearing(r->ev.ctx))
        return;
    pthread_mutex_lock(&bm->lock);
    bool changed = false;
    for (uint32_t k = 0; k < n; k++) {
        uint32_t i = bm->cand[k], v = BM_SET;
        if (raid_bitmap_degraded(r))
            break; /* a slot left meanwhile: what is still set, it will need */
        if (!atomic_compare_exchange_strong(&bm->state[i], &v, 0))
            continue;
        /* A write that started and ended since the scan may not be covered by the flush: it
         * stored a tick >= now - 1. (At close no write runs.) */
        if (!all && now - atomic_load(&bm->last[i]) < bm->idle_ticks) {
            atomic_fetch_or(&bm->state[i], BM_SET);
            continue;
        }
        bm_bit(bm, i, false);
        changed = true;
    }
    if (changed) {
        bm_sync(r);
        atomic_fetch_add(&bm->clears, 1);
    }
    pthread_mutex_unlock(&bm->lock);
}

static void *bm_cleaner(void *arg)
{
    struct raid_priv *r = arg;
    struct raid_bitmap *bm = r->bm;
    pthread_mutex_lock(&bm->lock);
    while (!bm->stop) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        uint64_t ns = (uint64_t)ts.tv_nsec + bm->tick_ms * 1000000ull;
        ts.tv_sec += (time_t)(ns / 1000000000ull);
        ts.tv_nsec = (long)(ns % 1000000000ull);
        /* Until the tick: a stream's look-ahead refills (bm_refill) as they are asked for. */
        while (!bm->stop) {
            if (bm->refill_req) {
                bm->refill_req = false;
                bm_refill_locked(r);
                continue;
            }
            if (pthread_cond_timedwait(&bm->cond, &bm->lock, &ts) == ETIMEDOUT)
                break;
        }
        if (bm->stop)
            break;
        pthread_mutex_unlock(&bm->lock);
        bm_clean(r, false);
        pthread_mutex_lock(&bm->lock);
    }
    pthread_mutex_unlock(&bm->lock);
    return NULL;
}

static void bm_free(struct raid_bitmap *bm)
{
    if (!bm)
        return;
    pthread_cond_destroy(&bm->cond);
    pthread_mutex_destroy(&bm->lock);
    free(bm->area);
    free(bm->wbuf);
    free((void *)bm->state);
    free((void *)bm->last);
    free((void *)bm->unsynced);
    free(bm->cand);
    free(bm);
}

void raid_bitmap_destroy(struct raid_priv *r)
{
    struct raid_bitmap *bm = r->bm;
    if (!bm)
        return;
    if (bm->has_cleaner) {
        pthread_mutex_lock(&bm->lock);
        bm->stop = true;
        pthread_cond_broadcast(&bm->cond);
        pthread_mutex_unlock(&bm->lock);
        pthread_join(bm->cleaner, NULL);
        bm_clean(r, true);
    }
    r->bm = NULL;
    bm_free(bm);
}

/* Allocate bm's per-region arrays and the area image. */
static int bm_alloc(struct raid_bitmap *bm)
{
    size_t n = (size_t)bm->nregions;
    bm->state = calloc(n, sizeof(*bm->state));
    bm->last = calloc(n, sizeof(*bm->last));
    bm->unsynced = calloc(n, sizeof(*bm->unsynced));
    bm->cand = calloc(n, sizeof(*bm->cand));
    if (bm->area_off) {
        bm->area = calloc(1, (size_t)bm->area_size);
        bm->wbuf = rk_buf_alloc((size_t)bm->area_size);
    }
    return bm->state && bm->last && bm->unsynced && bm->cand &&
                   ((bm->area && bm->wbuf) || !bm->area_off)
               ? 0
               : -ENOMEM;
}

/* The largest data area of the array. */
static uint64_t bm_max_data(const struct raid_priv *r)
{
    uint64_t m = 0;
    for (uint32_t i = 0; i < r->l.g.members; i++)
        if (r->l.g.data_size[i] > m)
            m = r->l.g.data_size[i];
    return m;
}

/* Regions named in o->bits start set on disk and pinned until a resync reaches them; those
 * only in o->keep start set (a cleaner pass may clear them once no slot is away). */
static void bm_load_bits(struct raid_bitmap *bm, const uint8_t *bits, const uint8_t *keep)
{
    bool any = false;
    for (uint64_t i = 0; keep && i < bm->nregions; i++) {
        if (!((keep[i / 8] >> (i % 8)) & 1))
            continue;
        atomic_store(&bm->state[i], BM_SET);
        if (bm->area)
            bm_bit(bm, i, true);
    }
    for (uint64_t i = 0; bits && i < bm->nregions; i++) {
        if (!((bits[i / 8] >> (i % 8)) & 1))
            continue;
        atomic_store(&bm->state[i], BM_SET | 1u);
        atomic_store(&bm->unsynced[i], BM_PINNED);
        if (bm->area)
            bm_bit(bm, i, true);
        any = true;
    }
    atomic_store(&bm->resync_pending, any);
    bm->img_sets = false; /* the loaded bits are on the members already */
    atomic_store(&bm->bits_set, 0);
}

int rk_raid_bitmap_attach(struct rk_dev *raid, const struct rk_raid_bitmap_opts *o)
{
    struct raid_priv *r = raid_priv_of(raid);
    if (!r || !o || r->bm)
        return -EINVAL;
    if (!r->l.lvl->reconstruct)
        return -EOPNOTSUPP; /* nothing to resync: raid_member_span needs a rebuildable layout */
    uint64_t maxd = bm_max_data(r);
    uint64_t region = o->region ? o->region : rk_bm_default_region(maxd, r->l.g.chunk);
    if (region < r->l.g.chunk || (region & (region - 1)))
        return -EINVAL;
    struct raid_bitmap *bm = calloc(1, sizeof(*bm));
    if (!bm)
        return -ENOMEM;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&bm->lock, NULL);
    pthread_cond_init(&bm->cond, &ca);
    pthread_condattr_destroy(&ca);
    bm->region = region;
    bm->nregions = (maxd + region - 1) / region;
    bm->area_off = o->area_offset;
    bm->area_size = o->area_offset ? o->area_size : 0;
    if (bm->area_off && bm->area_size < rk_bm_area_size(bm->nregions)) {
        bm_free(bm);
        return -EINVAL;
    }
    bm->hdr.region = region;
    bm->hdr.nregions = bm->nregions;
    bm->hdr.events = o->events;
    memcpy(bm->hdr.uuid, o->uuid, sizeof(bm->hdr.uuid));
    uint32_t idle = o->idle_ms ? o->idle_ms : BM_IDLE_MS_DEFAULT;
    bm->tick_ms = idle < 2 * BM_TICK_MS_DEFAULT ? (idle + 1) / 2 : BM_TICK_MS_DEFAULT;
    bm->idle_ticks = (uint32_t)((idle + bm->tick_ms - 1) / bm->tick_ms);
    bm->ahead_end = UINT64_MAX; /* no stream yet */
    atomic_store(&bm->refill_at, UINT64_MAX);
    if (bm->idle_ticks < 2)
        bm->idle_ticks = 2;
    int ret = bm_alloc(bm);
    if (ret) {
        bm_free(bm);
        return ret;
    }
    bm_load_bits(bm, o->bits, bm->area_off ? o->keep : NULL);
    r->bm = bm;
    if (bm->area_off && pthread_create(&bm->cleaner, NULL, bm_cleaner, r) == 0)
        bm->has_cleaner = true;
    return 0;
}

int rk_raid_bitmap_mark(struct rk_dev *raid, const uint8_t *bits, uint64_t nregions)
{
    struct raid_priv *r = raid_priv_of(raid);
    if (!r || !bits)
        return -EINVAL;
    struct raid_bitmap *bm = r->bm;
    if (!bm || !bm->area_off)
        return -ENOENT;
    if (nregions != bm->nregions)
        return -EINVAL;
    bool need = false;
    pthread_mutex_lock(&bm->lock);
    /* Each marked region is held (counted in state, as a write) while the area write runs
     * with bm->lock released: else the cleaner may clear a region that was set at the scan,
     * and the BM_SET below would then claim a bit the area no longer holds. */
    for (uint64_t i = 0; i < nregions; i++)
        if (((bits[i / 8] >> (i % 8)) & 1) && !(atomic_fetch_add(&bm->state[i], 1) & BM_SET)) {
            bm_bit(bm, i, true); /* on disk first, then BM_SET (writers then skip the sync) */
            need = true;
        }
    int ret = need ? bm_sync(r) : 0;
    for (uint64_t i = 0; i < nregions; i++)
        if ((bits[i / 8] >> (i % 8)) & 1) {
            if (!ret)
                atomic_fetch_or(&bm->state[i], BM_SET);
            bm_put(bm, i);
        }
    pthread_mutex_unlock(&bm->lock);
    return ret;
}

int rk_raid_bitmap_stats(struct rk_dev *raid, struct rk_raid_bitmap_stats *s)
{
    struct raid_priv *r = raid_priv_of(raid);
    if (!r || !s)
        return -EINVAL;
    memset(s, 0, sizeof(*s));
    struct raid_bitmap *bm = r->bm;
    if (!bm)
        return 0;
    s->region = bm->region;
    s->nregions = bm->nregions;
    s->on_disk = bm->area_off != 0;
    for (uint64_t i = 0; i < bm->nregions; i++) {
        s->set += (atomic_load(&bm->state[i]) & BM_SET) != 0;
        s->unsynced += atomic_load(&bm->unsynced[i]) != BM_SYNCED;
    }
    s->area_offset = bm->area_off;
    s->area_size = bm->area_size;
    s->area_sets = atomic_load(&bm->sets);
    s->bits_set = atomic_load(&bm->bits_set);
    s->area_clears = atomic_load(&bm->clears);
    return 0;
}
