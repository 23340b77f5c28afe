/*
 * Replay and start of the partial parity log (docs/FORMAT.md "Partial parity log", "Replay"):
 * scan every readable member's ring, apply the live entries in seq order, then start every ring
 * empty behind a durable retirement point. The write step is raid5_ppl.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "raid/raid5_int.h"
#include "raid/raid5_ppl.h"
#include "raid/raid5_ppl_int.h"

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
void r5_ppl_scan_slot(struct raid_priv *r, struct r5_ppl *L, uint32_t slot, struct ppl_scan *sc)
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

/* Sorted, distinct column breakpoints of entry e (window ends and every range's ends) into pt;
 * returns their count. */
static uint32_t ppl_points(const struct rk_ppl_entry *e, uint32_t *pt)
{
    uint32_t n = 0;
    pt[n++] = e->lo;
    pt[n++] = e->lo + e->len;
    for (uint32_t i = 0; i < e->nranges; i++) {
        pt[n++] = e->r[i].a;
        pt[n++] = e->r[i].b;
    }
    for (uint32_t i = 1; i < n; i++) /* insertion sort: n <= 2 * nd + 2 */
        for (uint32_t j = i; j > 0 && pt[j - 1] > pt[j]; j--) {
            uint32_t t = pt[j];
            pt[j] = pt[j - 1];
            pt[j - 1] = t;
        }
    uint32_t m = 0;
    for (uint32_t i = 0; i < n; i++)
        if (!m || pt[m - 1] != pt[i])
            pt[m++] = pt[i];
    return m;
}

/* raid6, data chunk set gone (one chunk) missing: over [off, off+n) of q's blocks (P and the
 * other data chunks read), rebuild the missing chunk from P and recompute Q from the data, so
 * both parities give the same version of it. */
static void ppl_q_from_p(struct r5_req *q, const struct r5_geo *g, uint32_t gone, uint64_t off,
                         uint64_t n)
{
    void *data[RK_MAX_MEMBERS];
    char *pb = r5_blk(q, g->nd) + off, *dk = NULL;
    for (uint32_t k = 0; k < g->nd; k++) {
        data[k] = r5_blk(q, k) + off;
        if (gone & (1u << k))
            dk = data[k];
    }
    memcpy(dk, pb, n);
    for (uint32_t k = 0; k < g->nd; k++)
        if (!(gone & (1u << k)))
            rk_parity_xor_into(n, dk, data[k]);
    r5_parity_gen(2, g->nd, n, data, pb, r5_blk(q, g->nd + 1) + off);
}

/* From entry x's partial parity: over every column run [s, t) of its window where no chunk
 * modified there is missing (a column's partial parity is the XOR of the chunks not modified
 * at that column, docs/FORMAT.md "Partial parity log"), P = PP ^ the chunks modified there (Q
 * likewise); runs where a modified chunk is missing keep the parity read from the members.
 * *partial is set when such a run may leave a missing chunk reading neither of its versions.
 * Returns the parity blocks computed, 0 on error. */
static uint32_t ppl_parity_pp(struct r5_req *q, const struct r5_geo *g, const struct ppl_found *x,
                              uint32_t rd, uint64_t moff, bool *partial)
{
    const struct rk_ppl_entry *e = &x->e;
    uint32_t nd = g->nd, dmask = (1u << nd) - 1, mod = 0, par = 0, pt[2 * RK_MAX_MEMBERS + 2];
    uint64_t len = e->len;
    char *pb = r5_blk(q, nd), *qb = g->np == 2 ? r5_blk(q, nd + 1) : NULL;
    bool hp = e->flags & RK_PPL_HAS_P, hq = (e->flags & RK_PPL_HAS_Q) && qb;
    for (uint32_t i = 0; i < e->nranges; i++)
        mod |= 1u << e->r[i].k;
    par = (hp ? 1u << nd : 0) | (hq ? 2u << nd : 0);
    uint32_t np = ppl_points(e, pt), pq2 = g->np == 2 ? 3u << nd : 0, gone = dmask & ~rd;
    bool both = pq2 && (rd & pq2) == pq2, single = gone && !(gone & (gone - 1));
    /* raid6 with one data chunk gone and both parities: Q follows P where only it changed. */
    uint32_t want = (mod & rd) | par | (hq && both && single ? (dmask & rd) | (1u << nd) : 0);
    if ((par & ~rd) || ppl_read(q, g, want, len, moff))
        return 0;
    const char *ppp = hp ? x->payload : NULL, *ppq = hq ? x->payload + (hp ? len : 0) : NULL;
    for (uint32_t j = 0; j + 1 < np; j++) {
        uint32_t s = pt[j], t = pt[j + 1], at = 0;
        for (uint32_t i = 0; i < e->nranges; i++)
            if (e->r[i].a <= s && t <= e->r[i].b)
                at |= 1u << e->r[i].k;
        uint64_t off = s - e->lo, n = t - s;
        if (at & ~rd) {
            /* A chunk modified here is missing: the parity stays as it is. The missing chunk
             * then reads as that parity gives it, one of its versions, unless another chunk
             * modified here (whose version the parity may not match) is present, or raid6
             * keeps two parities that may hold different versions of it: with one data chunk
             * gone, Q is recomputed from the data P gives (the P entry leaves P). */
            *partial |= (at & rd) || (both && !single);
            if (!(at & rd) && hq && both && single)
                ppl_q_from_p(q, g, gone, off, n);
            continue;
        }
        if (ppp)
            memcpy(pb + off, ppp + off, n);
        if (ppq)
            memcpy(qb + off, ppq + off, n);
        for (uint32_t k = 0; k < nd; k++) {
            if (!(at & (1u << k)))
                continue;
            const char *d = r5_blk(q, k) + off;
            if (hq)
                rk_parity_rmw(2, (int)k, n, pb + off, qb + off, q->p->zero, d);
            else
                rk_parity_xor_into(n, pb + off, d);
        }
    }
    return par;
}

/* Compute the parity of entry x's window into q's P/Q buffers: from all data (every data chunk
 * readable) or from the partial parity and the modified chunks (ppl_parity_pp). Returns the
 * parity blocks computed, 0 when neither is possible. */
static uint32_t ppl_parity(struct r5_req *q, const struct r5_geo *g, const struct ppl_found *x,
                           uint32_t rd, uint64_t moff, bool *partial)
{
    uint32_t nd = g->nd, dmask = (1u << nd) - 1;
    if ((rd & dmask) == dmask) {
        void *data[RK_MAX_MEMBERS];
        if (ppl_read(q, g, dmask, x->e.len, moff))
            return 0;
        for (uint32_t k = 0; k < nd; k++)
            data[k] = r5_blk(q, k);
        r5_parity_gen(g->np, nd, x->e.len, data, r5_blk(q, nd),
                      g->np == 2 ? r5_blk(q, nd + 1) : NULL);
        return ((1u << g->n) - 1) & ~dmask;
    }
    return ppl_parity_pp(q, g, x, rd, moff, partial);
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
    bool partial = false;
    uint32_t got = ppl_parity(q, &g, x, rd, moff, &partial) & targets;
    struct r5_ios v = {.n = 0};
    for (uint32_t b = g.nd; b < g.n; b++)
        if (got & (1u << b))
            r5_io_add(&v, r, g.slot[b], RK_OP_WRITE, 0, r5_blk(q, b), len, moff);
    if (v.n)
        r5_io_write(q, &v, NULL);
    stripe_unlock_range(&q->p->locks, g.row, 1);
    return got && !partial ? 1 : -1;
}

/* Replay the entries sc found, in seq order (raid6: P's and Q's entry of one write each fix
 * their own parity; with all data readable both recompute both, which is idempotent). */
static int ppl_replay(struct raid_priv *r, struct ppl_scan *sc)
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
            rk_warn("raid: log entry %" PRIu64 " (stripe %" PRIu64 "): a chunk it modified is "
                    "missing and the log cannot tell which version its parity holds; that "
                    "parity is left as it is",
                    sc->f[i].e.seq, sc->f[i].e.row);
        }
    }
    r5_req_done(&q);
    for (uint32_t s = 0; s < r->l.g.members; s++)
        if ((raid_slot_mask(r, RAID_STATES_WRITE) & (1u << s)) && rk_dev_flush(r->members[s]))
            raid_fail(r, s, -EIO);
    rk_info("raid: partial parity log replayed: %d stripe window%s made consistent, %d left", done,
            done == 1 ? "" : "s", skipped);
    return skipped;
}

int r5_ppl_start(struct raid_priv *r, int mode)
{
    struct r5_priv *p = r->level_priv;
    struct r5_ppl *L = p ? p->ppl : NULL;
    if (!L)
        return 0;
    struct ppl_scan sc = {.next = 1};
    uint32_t rd = raid_slot_mask(r, RAID_STATES_READ);
    for (uint32_t s = 0; s < r->l.g.members; s++)
        if (rd & (1u << s))
            r5_ppl_scan_slot(r, L, s, &sc);
    int left = (mode & RK_LOG_REPLAY) ? ppl_replay(r, &sc) : 0;
    if (left && !(mode & RK_LOG_FORCE)) {
        /* Keep the log: a start with force (or with the member back) replays it again. */
        for (uint32_t s = 0; s < RK_MAX_MEMBERS; s++)
            free(sc.buf[s]);
        free(sc.f);
        return -EUCLEAN;
    }
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
        if (r5_ppl_write_head(r, L, s, sc.next))
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
