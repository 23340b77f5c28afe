/*
 * Stripe gathering on raid5/raid6 (issue 13 item 2; docs/ARCHITECTURE.md "Stripe gathering").
 *
 * A sequential stream of writes smaller than a stripe costs, per write, member reads and a
 * parity write (and a partial parity log entry), even with the stripe cache (raid5_cache.c).
 * Here a partial-stripe write that continues a stream (r5c_stream: it starts at, or a few of its
 * lengths after, where a recent write ended) is copied into an entry of its stripe and acknowledged
 * at once, like a write into a volatile write cache; the following writes of the stream land in the
 * same entry, and the write that makes the entry whole writes the stripe out, as one full-stripe
 * write (parity from the new data, no reads, no log entry), before it replies. An entry that does
 * not become whole is written out by the gather thread when its hold time ends (hold_ns after its
 * last write, RAIDKIT_RAID5_GATHER_US, default R5G_HOLD_US; at most R5G_HOLD_MAX holds after its
 * first) as ordinary partial-stripe writes. No hold ends while a writer waits for a free entry
 * (r5g_take), up to R5G_PAUSE_MAX_NS after the entry's first write: the stream is then paced by
 * its write-outs, and the pieces that would complete the held stripes are behind the waiting
 * writes in the client's queue.
 *
 * What an acknowledged write promises does not change: it is durable after the next FLUSH
 * (the engine's flush drains every entry before it flushes the members, r5g_drain) and at once
 * with FUA (a FUA write is never held: the held data of its stripes is written out first, then
 * the FUA write goes to the members as before). Every other request sees held data as if it
 * were on the members: reads, discard, write-zeroes and block status first write out the held
 * stripes of their range; a write that is not gathered into a held stripe first writes that
 * stripe out (so the members receive writes of one stripe in the order they were acknowledged).
 *
 * A write-out is an ordinary write through r5_rw_direct: write-intent bitmap bits (made durable
 * first, raid_bitmap_begin), range lock while a job runs, stripe lock, partial parity log for
 * partial stripes, member failures recorded. Its error (the array lost data) is kept and
 * returned by the next flush, since its own request was already acknowledged.
 *
 * Only stripes whose slots are all ACTIVE and hold no bad range start an entry (r5c_usable):
 * degraded arrays, rebuilds and re-adds write as before. Random writes never match a recent end
 * and are not held; a random write into a held stripe joins it.
 *
 * Locking: g->lock guards the entries' state, rows, extents and the counters, never held across
 * I/O or a memcpy. An entry being filled counts its copiers (users); a write-out marks it
 * WRITING, waits for its copiers, then writes from its buffer without the lock. Whoever needs a
 * WRITING stripe (a write, read or drain of that row) waits on g->cond until it is FREE, and so
 * does a stream's write into a new stripe while every entry is in use and one is WRITING.
 * Everything here runs before the request takes its range lock, pool buffer or stripe lock, so
 * a thread that waits holds none of the level's locks (docs/ARCHITECTURE.md "Lock order").
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/util.h"
#include "raid/bitmap.h"
#include "raid/raid5_int.h"

enum r5g_state { R5G_FREE, R5G_HELD, R5G_WRITING };

/* How long writers waiting for an entry may keep renewing a held stripe's hold (r5g_thread):
 * bounds how long held data stays off the members while a stream is paced by its write-outs. */
#define R5G_PAUSE_MAX_NS 1000000000ull

/* Why an entry was written out (status counters, rk_raid_gather_stats). */
enum r5g_cause {
    R5G_WHOLE,   /* its last write made it a whole stripe */
    R5G_TIMEOUT, /* its hold time ended */
    R5G_FLUSH,   /* a FLUSH (or the close) drained everything */
    R5G_FUA,     /* a FUA write into the stripe */
    R5G_MEMORY,  /* every entry was in use and a new stripe needed one */
    R5G_OTHER,   /* a read, discard, write-zeroes, block status or whole-stripe write of its
                  * range, or a write too scattered for its extents */
    R5G_CAUSES
};

/* One held stripe: data is the stripe's array bytes, valid over the extents [lo[i], hi[i])
 * (stripe offsets, sorted, neither overlapping nor touching). */
struct r5g_ent {
    uint64_t row;
    enum r5g_state state;
    int users; /* absorbs copying into data now */
    int next;
    uint64_t lo[R5G_EXTENTS], hi[R5G_EXTENTS];
    uint64_t deadline; /* CLOCK_MONOTONIC ns: written out by the thread from then on */
    uint64_t first;    /* CLOCK_MONOTONIC ns of its first write */
    uint64_t gen;      /* order of creation: a drain writes out only entries older than it */
    char *data;
};

struct r5_gather {
    pthread_mutex_t lock;
    pthread_cond_t cond; /* an entry left WRITING, or its copiers finished */
    pthread_cond_t wake; /* CLOCK_MONOTONIC: a new deadline, or stop */
    struct raid_priv *r;
    int n;
    struct r5g_ent e[R5G_ENTRIES];
    char *mem;
    _Atomic int nheld; /* entries not FREE */
    uint64_t hold_ns;
    uint64_t sbytes;
    uint64_t gens; /* entries created so far */
    /* counters (under lock; status, logged at close): writes held, bytes held, write-outs
     * whole / in part, write-outs per cause */
    uint64_t held, held_bytes, out_whole, out_part, out_cause[R5G_CAUSES];
    int err; /* first write-out error since the last whole drain */
    bool stop;
    /* Writers waiting in r5g_take for an entry a write-out will free. While there are any, the
     * client's queue is full of writes waiting on the members, and the pieces that would make
     * the held stripes whole cannot come yet: their holds do not end (r5g_thread renews them). */
    int takers;
    pthread_t thr;
};

static uint64_t r5g_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The entry of row in any state but FREE, or NULL (g->lock held). */
static struct r5g_ent *r5g_find(struct r5_gather *g, uint64_t row)
{
    for (int i = 0; i < g->n; i++)
        if (g->e[i].state != R5G_FREE && g->e[i].row == row)
            return &g->e[i];
    return NULL;
}

/* One held range of array bytes to the members as an ordinary write (see the top). */
static int r5g_put(struct raid_priv *r, char *buf, uint64_t len, uint64_t off)
{
    if (atomic_load(&r->writes_stopped))
        return -EIO;
    struct raid_bm_hold h;
    int ret = raid_bitmap_begin(r, off, len, &h);
    if (ret)
        return ret;
    ret = r5_rw_direct(r, RK_OP_WRITE, buf, len, off, 0, false);
    raid_bitmap_end(r, &h);
    return ret;
}

/*
 * Write out entry e while it holds row (g->lock held on entry and on return, dropped during
 * the I/O). An entry already being written out is waited for instead. Returns 0 or the
 * write-out's error (also kept in g->err).
 */
static int r5g_write_out(struct r5_gather *g, struct r5g_ent *e, uint64_t row, enum r5g_cause cause)
{
    if (e->state == R5G_FREE || e->row != row)
        return 0;
    if (e->state == R5G_WRITING) {
        while (e->state == R5G_WRITING && e->row == row)
            pthread_cond_wait(&g->cond, &g->lock);
        return 0;
    }
    e->state = R5G_WRITING;
    g->out_cause[cause]++;
    while (e->users)
        pthread_cond_wait(&g->cond, &g->lock);
    int next = e->next, ret = 0;
    uint64_t lo[R5G_EXTENTS], hi[R5G_EXTENTS];
    memcpy(lo, e->lo, sizeof(lo));
    memcpy(hi, e->hi, sizeof(hi));
    pthread_mutex_unlock(&g->lock);
    for (int i = 0; i < next; i++) {
        int x = r5g_put(g->r, e->data + lo[i], hi[i] - lo[i], row * g->sbytes + lo[i]);
        ret = ret ? ret : x;
    }
    pthread_mutex_lock(&g->lock);
    bool whole = next == 1 && lo[0] == 0 && hi[0] == g->sbytes;
    g->out_whole += whole;
    g->out_part += !whole;
    e->state = R5G_FREE;
    e->row = R5_NO_ROW;
    atomic_fetch_sub(&g->nheld, 1);
    if (ret && !g->err)
        g->err = ret;
    pthread_cond_broadcast(&g->cond);
    return ret;
}

/* Add [lo, hi) to e's extents, merged with those it overlaps or touches. Returns false (e
 * unchanged) when that would need more than R5G_EXTENTS extents. */
static bool r5g_extent_add(struct r5g_ent *e, uint64_t lo, uint64_t hi)
{
    uint64_t nlo[R5G_EXTENTS], nhi[R5G_EXTENTS];
    int n = 0, i = 0;
    for (; i < e->next && e->hi[i] < lo; i++, n++) {
        nlo[n] = e->lo[i];
        nhi[n] = e->hi[i];
    }
    for (; i < e->next && e->lo[i] <= hi; i++) {
        lo = e->lo[i] < lo ? e->lo[i] : lo;
        hi = e->hi[i] > hi ? e->hi[i] : hi;
    }
    if (n + 1 + (e->next - i) > R5G_EXTENTS)
        return false;
    nlo[n] = lo;
    nhi[n++] = hi;
    for (; i < e->next; i++, n++) {
        nlo[n] = e->lo[i];
        nhi[n] = e->hi[i];
    }
    memcpy(e->lo, nlo, sizeof(nlo));
    memcpy(e->hi, nhi, sizeof(nhi));
    e->next = n;
    return true;
}

/* A FREE entry for a new row (g->lock held; may drop it). When none is free but one is being
 * written out, wait for that write-out to free it: the stream is then paced by its whole-stripe
 * write-outs. Writing out a held stripe instead (the one whose hold ends first) would write a
 * stripe the stream is still filling in parts (member reads, a log entry, and on a disk the
 * seeks back to it); that is done only when no write-out is under way. NULL when every entry
 * is being filled, or another writer started this row meanwhile. */
static struct r5g_ent *r5g_take(struct r5_gather *g, uint64_t row)
{
    for (int tries = 0; tries < 2;) {
        struct r5g_ent *victim = NULL;
        bool writing = false;
        for (int i = 0; i < g->n; i++) {
            struct r5g_ent *x = &g->e[i];
            if (x->state == R5G_FREE)
                return x;
            writing |= x->state == R5G_WRITING;
            if (x->state == R5G_HELD && !x->users && (!victim || x->deadline < victim->deadline))
                victim = x;
        }
        if (writing) {
            g->takers++; /* the stream is paced by write-outs: holds pause (r5g_thread) */
            pthread_cond_wait(&g->cond, &g->lock); /* its end broadcasts */
            g->takers--;
        } else if (victim) {
            r5g_write_out(g, victim, victim->row, R5G_MEMORY);
            tries++;
        } else {
            return NULL;
        }
        if (r5g_find(g, row))
            return NULL;
    }
    return NULL;
}

/*
 * The piece [lo, hi) (stripe offsets) of row from src: copied into row's entry (a new one only
 * when start: a stream piece of a healthy stripe), and the entry written out when it became
 * whole. Returns 1 when the piece was taken (*err: the write-out's error), 0 when it was not:
 * then nothing of row is held or being written out (the caller writes the piece itself).
 */
static int r5g_absorb(struct r5_gather *g, uint64_t row, uint64_t lo, uint64_t hi, const char *src,
                      bool start, bool fua, int *err)
{
    struct r5g_ent *e;
    pthread_mutex_lock(&g->lock);
    for (;;) {
        e = r5g_find(g, row);
        if (e && e->state == R5G_WRITING) {
            pthread_cond_wait(&g->cond, &g->lock); /* wait for the write-out's end */
            continue;
        }
        if (e && (fua || !r5g_extent_add(e, lo, hi))) {
            /* a FUA or scattered piece goes to the members after it */
            r5g_write_out(g, e, row, fua ? R5G_FUA : R5G_OTHER);
            continue;
        }
        if (e)
            break;
        e = start && !fua ? r5g_take(g, row) : NULL;
        if (!e && r5g_find(g, row))
            continue; /* another writer started this row meanwhile: join it */
        if (!e) {
            pthread_mutex_unlock(&g->lock);
            return 0;
        }
        e->row = row;
        e->state = R5G_HELD;
        e->next = 0;
        e->gen = ++g->gens;
        e->first = r5g_now();
        e->deadline = e->first + g->hold_ns;
        r5g_extent_add(e, lo, hi);
        atomic_fetch_add(&g->nheld, 1);
        pthread_cond_signal(&g->wake);
        break;
    }
    bool whole = e->next == 1 && e->lo[0] == 0 && e->hi[0] == g->sbytes;
    /* Each write renews the hold, up to R5G_HOLD_MAX holds after the first write. */
    uint64_t renew = r5g_now() + g->hold_ns, cap = e->first + R5G_HOLD_MAX * g->hold_ns;
    e->deadline = renew < cap ? renew : cap;
    g->held++;
    g->held_bytes += hi - lo;
    e->users++;
    pthread_mutex_unlock(&g->lock);
    memcpy(e->data + lo, src, hi - lo);
    pthread_mutex_lock(&g->lock);
    if (--e->users == 0)
        pthread_cond_broadcast(&g->cond);
    *err = whole ? r5g_write_out(g, e, row, R5G_WHOLE) : 0;
    pthread_mutex_unlock(&g->lock);
    return 1;
}

/* May a new entry start for row: every slot ACTIVE and nothing recorded bad in the stripe. */
static bool r5g_healthy(struct raid_priv *r, uint64_t row)
{
    struct r5_geo geo;
    r5_geo(&r->l, row, &geo);
    return r5c_usable(r, &geo);
}

int r5g_write(struct raid_priv *r, const char *buf, uint64_t len, uint64_t off, uint32_t flags)
{
    struct r5_priv *p = r->level_priv;
    struct r5_gather *g = p->gather;
    uint64_t sb = g->sbytes, end = off + len, pos = off, dstart = UINT64_MAX;
    uint64_t ne, ae, row0 = off / sb;
    bool stream = r5c_stream(p, off, len, &ne, &ae), fua = flags & RK_WRITE_FUA;
    /* Out of order (requests run on several threads): a recent write ended a little before off
     * in the same stripe, or at its start (the previous stripe's tail: the pieces before off
     * are still on their way), or anywhere in the previous stripe when off starts a stripe; or
     * a later piece of off's stripe came first. A strided pattern across stripes, ending inside
     * them, is no stream. */
    bool near = stream ||
                (ne && ((ne - 1) / sb == row0 || ne == row0 * sb ||
                        (off % sb == 0 && (ne - 1) / sb + 1 == row0))) ||
                (ae && (ae - 1) / sb == row0);
    int ret = 0, x;
    if (!near && !atomic_load(&g->nheld))
        return r5_rw_direct(r, RK_OP_WRITE, (char *)buf, len, off, flags, false);
    /* Pieces not taken are written directly, consecutive ones in one call (whole stripes keep
     * their batching), after any held data of their stripes was written out. */
    while (pos < end) {
        uint64_t row = pos / sb, rs = row * sb, e = end < rs + sb ? end : rs + sb;
        bool partial = pos > rs || e < rs + sb;
        int err = 0;
        if (partial && r5g_absorb(g, row, pos - rs, e - rs, buf + (pos - off),
                                  near && r5g_healthy(r, row), fua, &err)) {
            if (dstart != UINT64_MAX) {
                x = r5_rw_direct(r, RK_OP_WRITE, (char *)buf + (dstart - off), pos - dstart, dstart,
                                 flags, stream);
                ret = ret ? ret : x;
                dstart = UINT64_MAX;
            }
            ret = ret ? ret : err;
        } else {
            if (!partial)
                r5g_drain(r, rs, sb);
            if (dstart == UINT64_MAX)
                dstart = pos;
        }
        pos = e;
    }
    if (dstart != UINT64_MAX) {
        x = r5_rw_direct(r, RK_OP_WRITE, (char *)buf + (dstart - off), end - dstart, dstart, flags,
                         stream);
        ret = ret ? ret : x;
    }
    return ret;
}

int r5g_drain(struct raid_priv *r, uint64_t off, uint64_t len)
{
    struct r5_priv *p = r->level_priv;
    struct r5_gather *g = p ? p->gather : NULL;
    bool all = len == UINT64_MAX;
    if (!g || (!atomic_load(&g->nheld) && !all))
        return 0;
    uint64_t first = all ? 0 : off / g->sbytes;
    uint64_t last = all ? UINT64_MAX : (off + (len ? len : 1) - 1) / g->sbytes;
    int ret = 0;
    pthread_mutex_lock(&g->lock);
    /* Entries started after the drain hold only writes that did not complete before it: left
     * alone, so a drain ends under a continuous stream. */
    uint64_t gen = g->gens;
    for (;;) {
        struct r5g_ent *e = NULL;
        for (int i = 0; i < g->n && !e; i++)
            if (g->e[i].state != R5G_FREE && g->e[i].gen <= gen && g->e[i].row >= first &&
                g->e[i].row <= last)
                e = &g->e[i];
        if (!e)
            break;
        if (e->state == R5G_WRITING) {
            pthread_cond_wait(&g->cond, &g->lock);
            continue;
        }
        int x = r5g_write_out(g, e, e->row, all ? R5G_FLUSH : R5G_OTHER);
        ret = ret ? ret : x;
    }
    if (all) {
        ret = ret ? ret : g->err;
        g->err = 0;
    }
    pthread_mutex_unlock(&g->lock);
    return all ? ret : 0;
}

/* The gather thread: writes out every entry whose hold time ended, sleeps until the next. */
static void *r5g_thread(void *arg)
{
    struct r5_gather *g = arg;
    pthread_mutex_lock(&g->lock);
    while (!g->stop) {
        uint64_t now = r5g_now(), next = UINT64_MAX;
        struct r5g_ent *due = NULL;
        for (int i = 0; i < g->n && !due; i++) {
            struct r5g_ent *x = &g->e[i];
            if (x->state != R5G_HELD)
                continue;
            if (g->takers && x->deadline < now + g->hold_ns && now - x->first < R5G_PAUSE_MAX_NS)
                x->deadline = now + g->hold_ns;
            if (x->deadline <= now)
                due = x;
            else if (x->deadline < next)
                next = x->deadline;
        }
        if (due) {
            r5g_write_out(g, due, due->row, R5G_TIMEOUT);
            continue;
        }
        if (next == UINT64_MAX) {
            pthread_cond_wait(&g->wake, &g->lock);
            continue;
        }
        struct timespec ts = {.tv_sec = (time_t)(next / 1000000000u),
                              .tv_nsec = (long)(next % 1000000000u)};
        pthread_cond_timedwait(&g->wake, &g->lock, &ts);
    }
    pthread_mutex_unlock(&g->lock);
    return NULL;
}

int r5g_open(struct raid_priv *r, struct r5_priv *p)
{
    uint64_t sbytes = r5_stripe_bytes(&r->l), us = R5G_HOLD_US;
    const char *env = getenv("RAIDKIT_RAID5_GATHER_US");
    if (env && *env) {
        char *endp;
        unsigned long long v = strtoull(env, &endp, 10);
        if (*endp || v > 60000000ull) {
            rk_warn("RAIDKIT_RAID5_GATHER_US=%s: not 0..60000000, using %llu", env,
                    (unsigned long long)us);
        } else {
            us = v;
        }
    }
    uint64_t n = R5G_BYTES / sbytes;
    n = n > R5G_ENTRIES ? R5G_ENTRIES : n;
    if (!us || !p->cache.n || n < 2)
        return 0;
    struct r5_gather *g = calloc(1, sizeof(*g));
    if (!g)
        return -ENOMEM;
    g->mem = rk_buf_alloc(n * sbytes);
    if (!g->mem) {
        free(g);
        return -ENOMEM;
    }
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&g->wake, &ca);
    pthread_condattr_destroy(&ca);
    pthread_cond_init(&g->cond, NULL);
    pthread_mutex_init(&g->lock, NULL);
    g->r = r;
    g->n = (int)n;
    g->sbytes = sbytes;
    g->hold_ns = us * 1000u;
    for (uint64_t i = 0; i < n; i++) {
        g->e[i].row = R5_NO_ROW;
        g->e[i].data = g->mem + i * sbytes;
    }
    int ret = pthread_create(&g->thr, NULL, r5g_thread, g);
    if (ret) {
        pthread_mutex_destroy(&g->lock);
        pthread_cond_destroy(&g->cond);
        pthread_cond_destroy(&g->wake);
        free(g->mem);
        free(g);
        return -ret;
    }
    p->gather = g;
    return 0;
}

void r5g_close(struct r5_priv *p)
{
    struct r5_gather *g = p->gather;
    if (!g)
        return;
    pthread_mutex_lock(&g->lock);
    rk_debug("raid5 gather: %llu writes held, %llu whole-stripe write-outs, %llu partial (%llu at "
             "the end of their hold)",
             (unsigned long long)g->held, (unsigned long long)g->out_whole,
             (unsigned long long)g->out_part, (unsigned long long)g->out_cause[R5G_TIMEOUT]);
    g->stop = true;
    pthread_cond_signal(&g->wake);
    pthread_mutex_unlock(&g->lock);
    pthread_join(g->thr, NULL);
    pthread_mutex_destroy(&g->lock);
    pthread_cond_destroy(&g->cond);
    pthread_cond_destroy(&g->wake);
    free(g->mem);
    free(g);
    p->gather = NULL;
}

int rk_raid_gather_stats(struct rk_dev *raid, struct rk_raid_gather_stats *s)
{
    struct raid_priv *r = raid_priv_of(raid);
    if (!r || !s)
        return -EINVAL;
    memset(s, 0, sizeof(*s));
    if (r->l.lvl->drain != r5g_drain)
        return 0;
    struct r5_priv *p = r->level_priv;
    struct r5_gather *g = p ? p->gather : NULL;
    s->level_has = true;
    if (!g)
        return 0;
    pthread_mutex_lock(&g->lock);
    s->on = true;
    s->hold_us = g->hold_ns / 1000u;
    s->entries = (uint32_t)g->n;
    s->stripe_bytes = g->sbytes;
    for (int i = 0; i < g->n; i++)
        s->held_now += g->e[i].state != R5G_FREE;
    s->writes_held = g->held;
    s->bytes_held = g->held_bytes;
    s->full_stripe_writes = g->out_whole;
    s->partial_writes = g->out_part;
    s->out_whole_fill = g->out_cause[R5G_WHOLE];
    s->out_timeout = g->out_cause[R5G_TIMEOUT];
    s->out_flush = g->out_cause[R5G_FLUSH];
    s->out_fua = g->out_cause[R5G_FUA];
    s->out_memory = g->out_cause[R5G_MEMORY];
    s->out_other = g->out_cause[R5G_OTHER];
    pthread_mutex_unlock(&g->lock);
    return 0;
}
