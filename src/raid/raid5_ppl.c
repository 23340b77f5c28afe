/*
 * The partial parity log of raid5/raid6 (docs/FORMAT.md "Partial parity log"; md's
 * "Partial Parity Log" design, extended to raid6).
 *
 * Write step: before the member writes of a window that is not a whole-stripe write, an entry
 * (stripe, modified ranges, partial parity of the unmodified data for P and, raid6, for Q) is
 * written with FUA on every parity member the window updates. Only then are data and parity
 * written (r5_write_window). Whole-stripe writes log nothing.
 *
 * Ring: each member's region is its head block plus a ring of entries. An entry stays live
 * until its stripe write completed AND a member flush made that write durable; the retirement
 * point (every entry with seq < retired is void) is made durable in the head block before the
 * ring reuses any of the space, so every entry the replay could need is still intact. When an
 * entry does not fit, the writer waits for the oldest entry to complete, flushes the members
 * and writes the new head (reclaim); seq numbers are global, so a raid6 entry has the same seq
 * on P's and Q's member.
 *
 * Replay (dirty start, before serving): the valid live entries of every readable member, in
 * seq order; for each, with every data chunk of the stripe readable, the parity of the window
 * is recomputed from the data (consistent, whatever subset of the writes landed); otherwise,
 * with every modified chunk readable, P = PP ^ XOR of the modified data and Q = PQ ^ sum g^k
 * D_k, so the chunks on missing members reconstruct to their content as of the entry (never
 * garbage). Applied in seq order, the last entry covering a column wins, and its partial parity
 * is current there (a later write to that column would have logged a later entry).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "raid/raid5_int.h"
#include "raid/raid5_ppl.h"

struct ppl_ent {
    uint64_t seq, pos, size;
    bool done; /* the stripe write completed (durable after the next member flush) */
};

/* One member's ring: live entries [first, first + count) of q (circular, cap entries). */
struct ppl_ring {
    struct rk_dev *dev; /* member whose head this session wrote; other: adopt it first */
    uint64_t head;      /* next free position (ring bytes) */
    uint64_t retired;   /* the durable retirement point (head block) */
    uint32_t first, count;
    struct ppl_ent *q;
};

struct r5_ppl {
    pthread_mutex_t lock;         /* everything below; never held across I/O */
    pthread_cond_t cond;          /* an entry completed, or a reclaim ended */
    bool on;                      /* started (rk_raid_log_start); off: writes log nothing */
    bool busy;                    /* one thread reclaims or adopts (outside the lock) */
    int waiters;                  /* threads in ppl_wait */
    uint64_t id, off, size, ring; /* generation, member offset and bytes of the region, ring */
    uint32_t cap;
    uint64_t next_seq;
    char *hbuf; /* head block of the thread that is busy */
    struct ppl_ring m[RK_MAX_MEMBERS];
};

/* Wait for cond (lock held) / wake the waiters, if any (lock held). */
static void ppl_wait(struct r5_ppl *L)
{
    L->waiters++;
    pthread_cond_wait(&L->cond, &L->lock);
    L->waiters--;
}

static void ppl_wake(struct r5_ppl *L)
{
    if (L->waiters)
        pthread_cond_broadcast(&L->cond);
}

int r5_ppl_open(struct raid_priv *r, struct r5_priv *p)
{
    const struct rk_raid_geom *g = &r->l.g;
    p->wstep = p->win;
    if (!g->ppl_size)
        return 0;
    if (g->ppl_offset % RK_PPL_BLOCK || g->ppl_size % RK_PPL_BLOCK ||
        g->ppl_size < 16 * RK_PPL_BLOCK || g->ppl_offset < RK_PPL_BLOCK ||
        g->ppl_offset > g->data_offset || g->ppl_size > g->data_offset - g->ppl_offset ||
        !g->ppl_id) {
        rk_err("raid: partial parity log region [%" PRIu64 ", +%" PRIu64 ") invalid", g->ppl_offset,
               g->ppl_size);
        return -EINVAL;
    }
    struct r5_ppl *L = calloc(1, sizeof(*L));
    if (!L)
        return -ENOMEM;
    pthread_mutex_init(&L->lock, NULL);
    pthread_cond_init(&L->cond, NULL);
    L->id = g->ppl_id;
    L->off = g->ppl_offset;
    L->size = g->ppl_size;
    L->ring = g->ppl_size - RK_PPL_BLOCK;
    L->cap = (uint32_t)(L->ring / RK_PPL_BLOCK);
    L->next_seq = 1;
    p->ppl = L;
    L->hbuf = rk_buf_alloc(RK_PPL_BLOCK);
    if (!L->hbuf)
        return -ENOMEM;
    for (uint32_t s = 0; s < g->members; s++)
        if (!(L->m[s].q = calloc(L->cap, sizeof(struct ppl_ent))))
            return -ENOMEM;
    /* An entry (header + partial parities of one window) takes at most a quarter of the ring,
     * so the ring always holds several in flight. */
    uint64_t np = r5_nparity(&r->l), room = L->ring / 4 - RK_PPL_BLOCK;
    uint64_t step = room / np / RK_PPL_BLOCK * RK_PPL_BLOCK;
    step = step < RK_PPL_BLOCK ? RK_PPL_BLOCK : step;
    if (step < p->wstep)
        p->wstep = step;
    return 0;
}

void r5_ppl_close(struct r5_priv *p)
{
    struct r5_ppl *L = p->ppl;
    if (!L)
        return;
    for (int s = 0; s < RK_MAX_MEMBERS; s++)
        free(L->m[s].q);
    free(L->hbuf);
    pthread_cond_destroy(&L->cond);
    pthread_mutex_destroy(&L->lock);
    free(L);
    p->ppl = NULL;
}

/* Where an entry of size bytes fits in ring m (true and *pos), if it does. */
static bool ring_fit(const struct r5_ppl *L, const struct ppl_ring *m, uint64_t size, uint64_t *pos)
{
    if (m->count >= L->cap)
        return false;
    if (m->count == 0) {
        *pos = m->head + size <= L->ring ? m->head : 0;
        return true;
    }
    uint64_t tail = m->q[m->first].pos;
    if (m->head > tail) {
        if (m->head + size <= L->ring) {
            *pos = m->head;
            return true;
        }
        *pos = 0;
        return size <= tail;
    }
    *pos = m->head;
    return m->head + size <= tail;
}

/* Write slot's head block with retirement point retired (FUA). Caller is the busy thread and
 * holds no lock. Returns 0 or -errno (the slot is failed). */
static int ppl_write_head(struct raid_priv *r, struct r5_ppl *L, uint32_t slot, uint64_t retired)
{
    struct rk_ppl_head h = {.id = L->id, .retired = retired};
    rk_ppl_head_encode(&h, (uint8_t *)L->hbuf);
    int ret = rk_dev_write(r->members[slot], L->hbuf, RK_PPL_BLOCK, L->off, RK_WRITE_FUA);
    if (ret)
        raid_fail(r, slot, ret);
    return ret;
}

/* Seq of the oldest entry of m not yet complete (next_seq when all are). */
static uint64_t ring_first_open(const struct r5_ppl *L, const struct ppl_ring *m)
{
    for (uint32_t i = 0; i < m->count; i++) {
        const struct ppl_ent *e = &m->q[(m->first + i) % L->cap];
        if (!e->done)
            return e->seq;
    }
    return L->next_seq;
}

/* Flush every writable member (so every completed stripe write is durable), write the new
 * retirement points into the heads and drop the retired entries. Lock held, not busy; the lock
 * is dropped during the I/O (busy keeps other reclaims and adoptions out). */
static void ppl_reclaim_work(struct raid_priv *r, struct r5_ppl *L)
{
    uint64_t upto[RK_MAX_MEMBERS];
    uint32_t n = r->l.g.members;
    L->busy = true;
    for (uint32_t s = 0; s < n; s++)
        upto[s] = ring_first_open(L, &L->m[s]);
    pthread_mutex_unlock(&L->lock);
    uint32_t wr = raid_slot_mask(r, RAID_STATES_WRITE);
    for (uint32_t s = 0; s < n; s++) {
        int ret = (wr & (1u << s)) ? rk_dev_flush(r->members[s]) : 0;
        if (ret)
            raid_fail(r, s, ret);
    }
    wr = raid_slot_mask(r, RAID_STATES_WRITE);
    for (uint32_t s = 0; s < n; s++)
        if (!(wr & (1u << s)) || upto[s] <= L->m[s].retired || ppl_write_head(r, L, s, upto[s]))
            upto[s] = 0;
    pthread_mutex_lock(&L->lock);
    for (uint32_t s = 0; s < n; s++) {
        struct ppl_ring *m = &L->m[s];
        if (!upto[s])
            continue;
        m->retired = upto[s];
        while (m->count && m->q[m->first].seq < upto[s]) {
            m->first = (m->first + 1) % L->cap;
            m->count--;
        }
    }
    L->busy = false;
    ppl_wake(L);
}

/* Make room for a writer that does not fit in ring blocked (lock held; returns with it held,
 * after waiting or working): wait while another thread is busy or while the oldest entry of
 * blocked is still in flight, else reclaim. */
static void ppl_reclaim(struct raid_priv *r, struct r5_ppl *L, const struct ppl_ring *blocked)
{
    if (L->busy || (blocked->count && !blocked->q[blocked->first].done))
        ppl_wait(L);
    else
        ppl_reclaim_work(r, L);
}

/* Bytes of ring m in use (from its oldest live entry to its head). */
static uint64_t ring_used(const struct r5_ppl *L, const struct ppl_ring *m)
{
    if (!m->count)
        return 0;
    uint64_t tail = m->q[m->first].pos;
    return m->head > tail ? m->head - tail : L->ring - tail + m->head;
}

/* One valid live entry found by the scan; payload points into the scan buffer of its slot. */
struct ppl_found {
    struct rk_ppl_entry e;
    const char *payload;
};

struct ppl_scan {
    char *buf[RK_MAX_MEMBERS]; /* region image of each readable slot, NULL: none */
    struct ppl_found *f;
    size_t nf, cap;
    uint64_t next; /* > every seq seen, >= every retirement point */
};

static void ppl_scan_slot(struct raid_priv *r, struct r5_ppl *L, uint32_t slot,
                          struct ppl_scan *sc);

/* Ring slot belongs to another member than the one this session set up (a member added since,
 * maybe one that was in the array before): seq numbers continue above every entry its log
 * holds, its head voids them all, and its ring starts empty. Lock held, not busy; returns with
 * it held. */
static void ppl_adopt(struct raid_priv *r, struct r5_ppl *L, uint32_t slot)
{
    struct rk_dev *dev = r->members[slot];
    struct ppl_scan sc = {.next = 1};
    L->busy = true;
    pthread_mutex_unlock(&L->lock);
    ppl_scan_slot(r, L, slot, &sc);
    free(sc.buf[slot]);
    free(sc.f);
    pthread_mutex_lock(&L->lock);
    if (sc.next > L->next_seq)
        L->next_seq = sc.next;
    uint64_t retired = L->next_seq;
    pthread_mutex_unlock(&L->lock);
    int ret = ppl_write_head(r, L, slot, retired);
    pthread_mutex_lock(&L->lock);
    struct ppl_ring *m = &L->m[slot];
    m->dev = ret ? NULL : dev;
    m->retired = retired;
    m->head = m->first = m->count = 0;
    L->busy = false;
    ppl_wake(L);
}

/* Reserve an entry of size bytes on the rings of slots[0..n-1] (waiting for room); returns its
 * seq and the position on each. */
static void ppl_alloc(struct raid_priv *r, struct r5_ppl *L, const uint32_t *slots, int n,
                      uint64_t size, uint64_t *seq, uint64_t *pos)
{
    pthread_mutex_lock(&L->lock);
    for (int i = 0; i < n;) {
        struct ppl_ring *m = &L->m[slots[i]];
        if (m->dev != r->members[slots[i]]) {
            if (L->busy)
                ppl_wait(L);
            else
                ppl_adopt(r, L, slots[i]);
            i = 0;
        } else if (!ring_fit(L, m, size, &pos[i])) {
            ppl_reclaim(r, L, m);
            i = 0;
        } else {
            i++;
        }
    }
    *seq = L->next_seq++;
    for (int i = 0; i < n; i++) {
        struct ppl_ring *m = &L->m[slots[i]];
        m->q[(m->first + m->count++) % L->cap] =
            (struct ppl_ent){.seq = *seq, .pos = pos[i], .size = size};
        m->head = pos[i] + size;
    }
    pthread_mutex_unlock(&L->lock);
}

void r5_ppl_done(struct r5_req *q, const struct r5_ppl_tok *tok)
{
    struct r5_ppl *L = q->p->ppl;
    if (!L || !tok->n)
        return;
    pthread_mutex_lock(&L->lock);
    for (int i = 0; i < tok->n; i++) {
        struct ppl_ring *m = &L->m[tok->slot[i]];
        for (uint32_t k = 0; k < m->count; k++) {
            struct ppl_ent *e = &m->q[(m->first + k) % L->cap];
            if (e->seq == tok->seq) {
                e->done = true;
                break;
            }
        }
    }
    ppl_wake(L);
    /* Reclaim early, before writers have to wait: once a ring is half full and its oldest entry
     * is complete, this writer (its own stripe write is done) flushes and retires. */
    for (int i = 0; i < tok->n && !L->busy; i++) {
        const struct ppl_ring *m = &L->m[tok->slot[i]];
        if (m->count && m->q[m->first].done && ring_used(L, m) > L->ring / 2) {
            ppl_reclaim_work(q->r, L);
            break;
        }
    }
    pthread_mutex_unlock(&L->lock);
}

/* The partial parities of window w: the new parity (already in q's P and Q buffers) minus the
 * new data of every touched range, PP into pp and (np == 2) PQ into pq. */
static void ppl_partial(struct r5_req *q, const struct r5_geo *g, const struct r5_wwin *w,
                        uint32_t touched, char *pp, char *pq)
{
    uint32_t nd = g->nd;
    uint64_t len = w->hi - w->lo;
    memcpy(pp, r5_blk(q, nd), len);
    if (g->np == 2)
        memcpy(pq, r5_blk(q, nd + 1), len);
    for (uint32_t k = 0; k < nd; k++) {
        if (!(touched & (1u << k)))
            continue;
        uint64_t off = w->a[k] - w->lo, n = w->b[k] - w->a[k];
        if (g->np == 2)
            rk_parity_rmw(2, (int)k, n, pp + off, pq + off, w->src[k], q->p->zero);
        else
            rk_parity_xor_into(n, pp + off, w->src[k]);
    }
}

/*
 * Each parity member gets the entry of its own parity: P's member PP (RK_PPL_HAS_P), Q's member
 * PQ (RK_PPL_HAS_Q), with the same seq. The two entries sit in the spare blocks of the pool
 * buffer: [header P | PP] [header Q | PQ], each 4 KiB + len rounded up to 4 KiB.
 */
int r5_ppl_log(struct r5_req *q, const struct r5_geo *g, const struct r5_wwin *w, uint32_t touched,
               uint32_t pwrite, struct r5_ppl_tok *tok)
{
    struct r5_ppl *L = q->p->ppl;
    struct raid_priv *r = q->r;
    uint32_t nt = 0, blk[2];
    tok->n = 0;
    if (!L || !L->on || !touched)
        return 0;
    struct rk_ppl_entry e = {
        .id = L->id, .row = g->row, .lo = (uint32_t)w->lo, .len = (uint32_t)(w->hi - w->lo)};
    for (uint32_t b = g->nd; b < g->n; b++) {
        if (!(pwrite & (1u << b)))
            continue;
        blk[nt] = b;
        tok->slot[nt++] = g->slot[b];
    }
    if (!nt)
        return 0;
    for (uint32_t k = 0; k < g->nd; k++)
        if (touched & (1u << k))
            e.r[e.nranges++] = (struct rk_ppl_range){k, (uint32_t)w->a[k], (uint32_t)w->b[k]};
    e.flags = RK_PPL_HAS_P;
    uint64_t size = rk_ppl_entry_bytes(&e), pos[2];
    char *buf[2] = {r5_blk(q, g->n), r5_blk(q, g->n) + size};
    ppl_partial(q, g, w, touched, buf[0] + RK_PPL_BLOCK, buf[1] + RK_PPL_BLOCK);
    ppl_alloc(r, L, tok->slot, (int)nt, size, &e.seq, pos);
    tok->seq = e.seq;
    tok->n = (int)nt;
    struct rk_io io[2];
    for (uint32_t i = 0; i < nt; i++) {
        uint32_t which = blk[i] == g->nd ? 0 : 1;
        char *b = buf[which];
        e.flags = which ? RK_PPL_HAS_Q : RK_PPL_HAS_P;
        memset(b + RK_PPL_BLOCK + e.len, 0, size - RK_PPL_BLOCK - e.len);
        rk_ppl_entry_encode(&e, (uint8_t *)b, b + RK_PPL_BLOCK);
        rk_io_init(&io[i], r->members[tok->slot[i]], RK_OP_WRITE, b, size,
                   L->off + RK_PPL_BLOCK + pos[i], RK_WRITE_FUA);
    }
    if (!rk_io_run(&q->batch, io, (int)nt))
        return 0;
    /* A parity member that cannot take its log entry is failed: its parity is not written. */
    for (uint32_t i = 0; i < nt; i++)
        if (io[i].result)
            raid_fail(r, tok->slot[i], io[i].result);
    return r5_alive(r) ? 0 : -EIO;
}

/* ---- replay and start ---- */

/* Is the RK_PPL_BLOCK-byte block b all zeros (a region that was never written)? */
static bool ppl_block_zero(const char *b)
{
    for (size_t i = 0; i < RK_PPL_BLOCK; i++)
        if (b[i])
            return false;
    return true;
}

/* Read slot's region and collect its valid entries newer than its head's retirement point.
 * Untrusted blocks (bad checksum, bounds, generation) are logged and ignored. */
static void ppl_scan_slot(struct raid_priv *r, struct r5_ppl *L, uint32_t slot, struct ppl_scan *sc)
{
    const char *who = r->members[slot]->name;
    char err[200];
    char *buf = rk_buf_alloc(L->size);
    if (!buf || rk_dev_read(r->members[slot], buf, L->size, L->off)) {
        rk_warn("raid: slot %" PRIu32 " (%s): cannot read its partial parity log", slot, who);
        free(buf);
        return;
    }
    sc->buf[slot] = buf;
    struct rk_ppl_head h = {0};
    int ret = rk_ppl_head_decode((const uint8_t *)buf, L->id, &h, err, sizeof(err));
    if (ret && ret != RK_PPL_ENONE)
        rk_warn("raid: slot %" PRIu32 " (%s): %s; log head ignored", slot, who, err);
    else if (ret == RK_PPL_ENONE && !ppl_block_zero(buf))
        rk_warn("raid: slot %" PRIu32 " (%s): partial parity log head is not a log head (corrupt "
                "or foreign data); ignored, the slot's entries are still checked one by one",
                slot, who);
    sc->next = h.retired > sc->next ? h.retired : sc->next;
    struct rk_ppl_limits lim = {.id = L->id,
                                .chunk = r->l.g.chunk,
                                .nd = r->l.g.members - r5_nparity(&r->l),
                                .np = r5_nparity(&r->l),
                                .rows = r->l.min_data / r->l.g.chunk};
    for (uint64_t pos = 0; pos + RK_PPL_BLOCK <= L->ring;) {
        const char *hb = buf + RK_PPL_BLOCK + pos;
        struct ppl_found x;
        lim.room = L->ring - pos;
        ret = rk_ppl_entry_decode((const uint8_t *)hb, &lim, &x.e, err, sizeof(err));
        x.payload = hb + RK_PPL_BLOCK;
        if (!ret)
            ret = rk_ppl_payload_check(&x.e, x.payload, err, sizeof(err));
        if (ret) {
            if (ret != RK_PPL_ENONE && ret != RK_PPL_ESTALE)
                rk_warn("raid: slot %" PRIu32 " (%s): log offset %" PRIu64 ": %s; ignored", slot,
                        who, pos, err);
            pos += RK_PPL_BLOCK;
            continue;
        }
        pos += rk_ppl_entry_bytes(&x.e);
        sc->next = x.e.seq >= sc->next ? x.e.seq + 1 : sc->next;
        if (x.e.seq < h.retired)
            continue; /* retired: its write is durable */
        if (sc->nf == sc->cap) {
            size_t cap = sc->cap ? 2 * sc->cap : 64;
            struct ppl_found *f = realloc(sc->f, cap * sizeof(*f));
            if (!f)
                continue;
            sc->f = f;
            sc->cap = cap;
        }
        sc->f[sc->nf++] = x;
    }
}

static int ppl_found_cmp(const void *a, const void *b)
{
    uint64_t x = ((const struct ppl_found *)a)->e.seq, y = ((const struct ppl_found *)b)->e.seq;
    return x < y ? -1 : x > y;
}

/* Read the blocks in want of stripe g over [moff, moff+len) into q's buffers: 0 or -EIO. */
static int ppl_read(struct r5_req *q, const struct r5_geo *g, uint32_t want, uint64_t len,
                    uint64_t moff)
{
    struct r5_ios v = {.n = 0};
    for (uint32_t b = 0; b < g->n; b++)
        if (want & (1u << b))
            r5_io_add(&v, q->r, g->slot[b], RK_OP_READ, 0, r5_blk(q, b), len, moff);
    return r5_io_run(q, &v) ? -EIO : 0;
}

/* Compute the parity of entry x's window into q's P/Q buffers: from all data (every data chunk
 * readable) or from the partial parity and the modified chunks. Returns the parity blocks
 * computed, 0 when neither is possible. */
static uint32_t ppl_parity(struct r5_req *q, const struct r5_geo *g, const struct ppl_found *x,
                           uint32_t rd, uint64_t moff)
{
    const struct rk_ppl_entry *e = &x->e;
    uint32_t nd = g->nd, dmask = (1u << nd) - 1, mod = 0;
    uint64_t len = e->len;
    char *pb = r5_blk(q, nd), *qb = g->np == 2 ? r5_blk(q, nd + 1) : NULL;
    for (uint32_t i = 0; i < e->nranges; i++)
        mod |= 1u << e->r[i].k;
    if ((rd & dmask) == dmask) {
        void *data[RK_MAX_MEMBERS];
        if (ppl_read(q, g, dmask, len, moff))
            return 0;
        for (uint32_t k = 0; k < nd; k++)
            data[k] = r5_blk(q, k);
        r5_parity_gen(g->np, nd, len, data, pb, qb);
        return ((1u << g->n) - 1) & ~dmask;
    }
    if ((mod & ~rd) || ppl_read(q, g, mod, len, moff))
        return 0;
    const char *pay = x->payload;
    if (e->flags & RK_PPL_HAS_P) {
        memcpy(pb, pay, len);
        pay += len;
    }
    if (e->flags & RK_PPL_HAS_Q)
        memcpy(qb, pay, len);
    for (uint32_t i = 0; i < e->nranges; i++) {
        const struct rk_ppl_range *rg = &e->r[i];
        uint64_t off = rg->a - e->lo, n = rg->b - rg->a;
        const char *d = r5_blk(q, rg->k) + off;
        if (e->flags & RK_PPL_HAS_Q)
            rk_parity_rmw(2, (int)rg->k, n, pb + off, qb + off, q->p->zero, d);
        else
            rk_parity_xor_into(n, pb + off, d);
    }
    return ((e->flags & RK_PPL_HAS_P) ? 1u << nd : 0) | ((e->flags & RK_PPL_HAS_Q) ? 2u << nd : 0);
}

/* Replay one entry (stripe lock taken here). Returns 1 (parity rewritten), 0 (nothing to
 * rewrite: no parity member left) or -1 (cannot: a modified chunk is missing too). */
static int ppl_apply(struct r5_req *q, const struct ppl_found *x)
{
    struct raid_priv *r = q->r;
    struct r5_geo g;
    r5_geo(&r->l, x->e.row, &g);
    uint64_t moff = g.row * r->l.g.chunk + x->e.lo, len = x->e.len;
    uint32_t wr = raid_slot_mask(r, RAID_STATES_WRITE), targets = 0;
    for (uint32_t b = g.nd; b < g.n; b++)
        if (wr & (1u << g.slot[b]))
            targets |= 1u << b;
    if (!targets)
        return 0;
    stripe_lock_range(&q->p->locks, g.row, 1);
    r5c_drop(q->p, g.row, 1);
    uint32_t rd = r5_blk_readable(r, &g, moff, len);
    uint32_t got = ppl_parity(q, &g, x, rd, moff) & targets;
    struct r5_ios v = {.n = 0};
    for (uint32_t b = g.nd; b < g.n; b++)
        if (got & (1u << b))
            r5_io_add(&v, r, g.slot[b], RK_OP_WRITE, 0, r5_blk(q, b), len, moff);
    if (v.n)
        r5_io_write(q, &v, NULL);
    stripe_unlock_range(&q->p->locks, g.row, 1);
    return got ? 1 : -1;
}

/* Replay the entries sc found, in seq order (raid6: P's and Q's entry of one write each fix
 * their own parity; with all data readable both recompute both, which is idempotent). */
static void ppl_replay(struct raid_priv *r, struct ppl_scan *sc)
{
    struct r5_req q;
    int done = 0, skipped = 0;
    if (sc->nf)
        qsort(sc->f, sc->nf, sizeof(*sc->f), ppl_found_cmp);
    r5_req_init(&q, r, 0);
    r5_req_buf(&q);
    for (size_t i = 0; i < sc->nf; i++) {
        int ret = ppl_apply(&q, &sc->f[i]);
        done += ret > 0;
        if (ret < 0) {
            skipped++;
            rk_warn("raid: log entry %" PRIu64 " (stripe %" PRIu64 "): a modified chunk and a "
                    "data chunk are both missing; its parity is left as it is",
                    sc->f[i].e.seq, sc->f[i].e.row);
        }
    }
    r5_req_done(&q);
    for (uint32_t s = 0; s < r->l.g.members; s++)
        if ((raid_slot_mask(r, RAID_STATES_WRITE) & (1u << s)) && rk_dev_flush(r->members[s]))
            raid_fail(r, s, -EIO);
    rk_info("raid: partial parity log replayed: %d stripe window%s made consistent, %d left", done,
            done == 1 ? "" : "s", skipped);
}

int r5_ppl_start(struct raid_priv *r, bool replay)
{
    struct r5_priv *p = r->level_priv;
    struct r5_ppl *L = p ? p->ppl : NULL;
    if (!L)
        return 0;
    struct ppl_scan sc = {.next = 1};
    uint32_t rd = raid_slot_mask(r, RAID_STATES_READ);
    for (uint32_t s = 0; s < r->l.g.members; s++)
        if (rd & (1u << s))
            ppl_scan_slot(r, L, s, &sc);
    if (replay)
        ppl_replay(r, &sc);
    /* Start empty: every entry found so far is void from now on (durable in the heads before
     * the first new entry). */
    int ret = 0;
    uint32_t wr = raid_slot_mask(r, RAID_STATES_WRITE);
    L->next_seq = sc.next;
    L->busy = true;
    for (uint32_t s = 0; s < r->l.g.members; s++) {
        struct ppl_ring *m = &L->m[s];
        m->head = m->first = m->count = 0;
        m->retired = sc.next;
        if (!(wr & (1u << s)))
            continue;
        if (ppl_write_head(r, L, s, sc.next))
            ret = r5_alive(r) ? ret : -EIO;
        else
            m->dev = r->members[s];
    }
    L->busy = false;
    L->on = true;
    for (uint32_t s = 0; s < RK_MAX_MEMBERS; s++)
        free(sc.buf[s]);
    free(sc.f);
    return ret;
}
