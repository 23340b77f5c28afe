/*
 * Replay and start of the partial parity log (docs/FORMAT.md "Partial parity log", "Replay"):
 * scan every readable member's ring, apply the live entries in seq order, then start every ring
 * empty behind a durable retirement point. The write step is raid5_ppl.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "core/util.h"
#include "raid/raid5_int.h"
#include "raid/raid5_ppl.h"
#include "raid/raid5_ppl_int.h"

/* ---- replay and start ---- */

static rk_ppl_report_fn ppl_report_fn; /* rk_ppl_set_report: the torture's view of the replay */
static void *ppl_report_ctx;

void rk_ppl_set_report(rk_ppl_report_fn fn, void *ctx)
{
    ppl_report_fn = fn;
    ppl_report_ctx = ctx;
}

/* The replay decided columns [lo, hi) of stripe row: consistent (ok) or left as they are. */
static void ppl_report(uint64_t row, uint64_t lo, uint64_t hi, bool ok)
{
    if (ppl_report_fn)
        ppl_report_fn(ppl_report_ctx, row, (uint32_t)lo, (uint32_t)hi, ok);
}

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
    sc->haskey[slot] = !ret && h.haskey;
    memcpy(sc->key[slot], h.key, RK_PPL_KEY_BYTES);
    bool bad = (ret && ret != RK_PPL_ENONE) || (ret == RK_PPL_ENONE && !ppl_block_zero(buf));
    sc->untrusted += bad;
    sc->badhead |= bad ? 1u << slot : 0;
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
        x.slot = slot;
        if (!ret)
            ret = rk_ppl_payload_check(&x.e, x.payload, err, sizeof(err));
        if (ret) {
            sc->untrusted += ret != RK_PPL_ENONE && ret != RK_PPL_ESTALE;
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

/* Does logical entry y concern stripe row? */
static bool lent_on_row(const struct ppl_lent *y, uint64_t row)
{
    if (y->e.flags & RK_PPL_FULL)
        return row >= y->e.row && row - y->e.row < y->e.nrows;
    return y->e.row == row;
}

/* Data chunks entry y modified over all of the columns [s, t) (a whole-stripe entry: all). */
static uint32_t lent_mod(const struct ppl_lent *y, uint32_t nd, uint32_t s, uint32_t t)
{
    if (y->e.flags & RK_PPL_FULL)
        return (1u << nd) - 1;
    uint32_t at = 0;
    for (uint32_t i = 0; i < y->e.nranges; i++)
        if (y->e.r[i].a <= s && t <= y->e.r[i].b)
            at |= 1u << y->e.r[i].k;
    return at;
}

static int u32_cmp(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* Column breakpoints inside x's window [lo, hi): its ends and every window and range end of the
 * partial entries of its row, sorted and distinct, into pt (malloc'ed, caller frees); returns
 * their count, 0 on allocation failure. Between two neighbours, every entry of the row covers a
 * column run wholly or not at all. */
static uint32_t lent_points(const struct ppl_lent *ls, size_t nl, const struct ppl_lent *x,
                            uint32_t **ptp)
{
    uint32_t lo = x->e.lo, hi = x->e.lo + x->e.len, n = 0;
    size_t cap = 2;
    for (size_t j = 0; j < nl; j++)
        if (!(ls[j].e.flags & RK_PPL_FULL) && ls[j].e.row == x->e.row)
            cap += 2 + 2 * (size_t)ls[j].e.nranges;
    uint32_t *pt = malloc(cap * sizeof(*pt));
    if (!pt)
        return 0;
#define PPL_PT(v)                                                                                  \
    do {                                                                                           \
        uint32_t v_ = (v);                                                                         \
        if (v_ >= lo && v_ <= hi)                                                                  \
            pt[n++] = v_;                                                                          \
    } while (0)
    PPL_PT(lo);
    PPL_PT(hi);
    for (size_t j = 0; j < nl; j++) {
        const struct rk_ppl_entry *y = &ls[j].e;
        if ((y->flags & RK_PPL_FULL) || y->row != x->e.row)
            continue;
        PPL_PT(y->lo);
        PPL_PT(y->lo + y->len);
        for (uint32_t i = 0; i < y->nranges; i++) {
            PPL_PT(y->r[i].a);
            PPL_PT(y->r[i].b);
        }
    }
#undef PPL_PT
    qsort(pt, n, sizeof(*pt), u32_cmp);
    uint32_t m = 0;
    for (uint32_t i = 0; i < n; i++)
        if (!m || pt[m - 1] != pt[i])
            pt[m++] = pt[i];
    *ptp = pt;
    return m;
}

/* What the other live entries of x's row say about its column run [s, t): *newer when a later
 * entry's window covers it (that entry decides there), *older the data chunks that earlier
 * entries (still live: maybe not durable) modified there. */
static void lent_context(const struct ppl_lent *ls, size_t nl, size_t xi, uint32_t nd, uint32_t s,
                         uint32_t t, bool *newer, uint32_t *older)
{
    const struct ppl_lent *x = &ls[xi];
    *newer = false;
    *older = 0;
    for (size_t j = 0; j < nl; j++) {
        const struct ppl_lent *y = &ls[j];
        if (j == xi || !lent_on_row(y, x->e.row))
            continue;
        bool full = y->e.flags & RK_PPL_FULL;
        if (y->e.seq > x->e.seq)
            *newer |= full || (y->e.lo <= s && t <= y->e.lo + y->e.len);
        else
            *older |= lent_mod(y, nd, s, t);
    }
}

/* Apply the partial parities of x over [off, off+n) of its window (q's blocks hold everything
 * readable): P = PP ^ the chunks modified there (at), Q = PQ ^ sum g^k D_k likewise. Returns
 * the parity blocks so computed. */
static uint32_t lent_pp(struct r5_req *q, const struct r5_geo *g, const struct ppl_lent *x,
                        uint32_t at, uint64_t off, uint64_t n)
{
    uint32_t nd = g->nd;
    char *pb = r5_blk(q, nd), *qb = g->np == 2 ? r5_blk(q, nd + 1) : NULL;
    bool hq = x->pq && qb;
    if (!x->pp && !hq)
        return 0;
    if (x->pp)
        memcpy(pb + off, x->pp + off, n);
    if (hq)
        memcpy(qb + off, x->pq + off, n);
    for (uint32_t k = 0; k < nd; k++) { /* plus the data: P's term is D, Q's g^k·D */
        if (!(at & (1u << k)))
            continue;
        const char *d = r5_blk(q, k) + off;
        if (x->pp)
            rk_parity_xor_into(n, pb + off, d);
        if (hq)
            rk_parity_mul_into((int)k, n, qb + off, d);
    }
    return (x->pp ? 1u << nd : 0) | (hq ? 2u << nd : 0);
}

/*
 * One column run [s, t) of partial entry x with data chunks gone (docs/FORMAT.md "Replay"): q's
 * blocks hold every readable block (rd) of the window. Proven when the chunks it assumes
 * unchanged are (no older live entry modified a readable one there) and either no missing chunk
 * was modified there (parity from the partial parity: the missing chunks read their content as
 * of x) or only missing chunks were (the parity on the member is kept: any version of it gives
 * a version of those chunks). raid6 with both parities on members makes Q follow P (one chunk
 * gone). Returns false when the run cannot be proven consistent (its parity is left).
 */
static bool lent_run(struct r5_req *q, const struct r5_geo *g, const struct ppl_ctx *c, uint32_t rd,
                     uint32_t targets, uint32_t at, uint32_t older, uint64_t off, uint64_t n)
{
    const struct ppl_lent *x = &c->ls[c->xi];
    uint32_t nd = g->nd, dmask = (1u << nd) - 1, gone = dmask & ~rd, pbit = 1u << nd;
    uint32_t qbit = g->np == 2 ? 2u << nd : 0, s = x->e.lo + (uint32_t)off, t = s + (uint32_t)n;
    bool one = gone && !(gone & (gone - 1));
    uint32_t assumed = older & ~at & rd & dmask;
    /* x's partial parity assumes chunks a live write may not have reached, unless their
     * digests prove they hold what x saw (that licenses the partial parity only: the parity on
     * the members may predate that write); else the digests may still prove a rebuild. */
    if (assumed && ((at & gone) || !ppl_prove_older(q, g, c, assumed, s, t)))
        return ppl_prove_rebuild(q, g, c, rd, s, t);
    uint32_t have = 0; /* parity blocks in q's buffers that are consistent with the data */
    if (!(at & gone)) {
        have = lent_pp(q, g, x, at, off, n);
        if ((targets & pbit) && !(have & pbit)) /* P's entry not found */
            return ppl_prove_rebuild(q, g, c, rd, s, t);
    } else {
        if (at & rd & dmask) /* a readable and a missing chunk modified: versions may differ */
            return ppl_prove_rebuild(q, g, c, rd, s, t);
        have = rd & (pbit | qbit);
        if (qbit && (have & pbit) && (have & qbit))
            have &= ~qbit; /* two parities on the members may hold different versions */
    }
    /* Q a target without a consistent value (its entry was not found, or it may disagree with
     * P): recomputed from the data, with the one missing chunk as P gives it. */
    if ((targets & qbit) && !(have & qbit)) {
        if (!(have & pbit) || !one)
            return ppl_prove_rebuild(q, g, c, rd, s, t);
        ppl_q_from_p(q, g, gone, off, n);
    }
    return true;
}

/* Write q's parity buffers in blocks (targets) over [moff, moff+len) of stripe g. */
static void lent_write(struct r5_req *q, const struct r5_geo *g, uint32_t blocks, uint64_t len,
                       uint64_t moff)
{
    struct r5_ios v = {.n = 0};
    for (uint32_t b = g->nd; b < g->n; b++)
        if (blocks & (1u << b))
            r5_io_add(&v, q->r, g->slot[b], RK_OP_WRITE, 0, r5_blk(q, b), len, moff);
    if (v.n)
        r5_io_write(q, &v, NULL);
}

/* Parity from the data over [moff, moff+len) of stripe g (every data chunk readable) into the
 * parity blocks targets. Returns 0 or -EIO. */
static int lent_from_data(struct r5_req *q, const struct r5_geo *g, uint32_t targets, uint64_t len,
                          uint64_t moff)
{
    void *data[RK_MAX_MEMBERS];
    uint32_t nd = g->nd;
    if (ppl_read(q, g, (1u << nd) - 1, len, moff))
        return -EIO;
    for (uint32_t k = 0; k < nd; k++)
        data[k] = r5_blk(q, k);
    r5_parity_gen(g->np, nd, len, data, r5_blk(q, nd), g->np == 2 ? r5_blk(q, nd + 1) : NULL);
    lent_write(q, g, targets, len, moff);
    return 0;
}

/* Writable parity blocks of stripe g. */
static uint32_t lent_targets(struct raid_priv *r, const struct r5_geo *g)
{
    uint32_t wr = raid_slot_mask(r, RAID_STATES_WRITE), t = 0;
    for (uint32_t b = g->nd; b < g->n; b++)
        if (wr & (1u << g->slot[b]))
            t |= 1u << b;
    return t;
}

/* Replay whole-stripe entry x: each of its rows that no later whole-stripe entry covers gets
 * its parity from the data; a row with a data chunk gone cannot be proven (the write may have
 * reached only some members). Returns the rows left unproven. */
static uint64_t lent_apply_full(struct r5_req *q, const struct ppl_lent *ls, size_t nl, size_t xi)
{
    struct raid_priv *r = q->r;
    const struct ppl_lent *x = &ls[xi];
    uint64_t chunk = r->l.g.chunk, win = q->p->win, left = 0;
    for (uint64_t row = x->e.row; row < x->e.row + x->e.nrows; row++) {
        bool later = false;
        for (size_t j = xi + 1; j < nl && !later; j++)
            later = (ls[j].e.flags & RK_PPL_FULL) && lent_on_row(&ls[j], row);
        struct r5_geo g;
        r5_geo(&r->l, row, &g);
        uint32_t targets = lent_targets(r, &g), dmask = (1u << g.nd) - 1;
        if (later || !targets)
            continue;
        stripe_lock_range(&q->p->locks, row, 1);
        r5c_drop(q->p, row, 1);
        bool ok = (r5_blk_readable(r, &g, row * chunk, chunk) & dmask) == dmask;
        for (uint64_t lo = 0; ok && lo < chunk; lo += win)
            ok = !lent_from_data(q, &g, targets, chunk - lo < win ? chunk - lo : win,
                                 row * chunk + lo);
        stripe_unlock_range(&q->p->locks, row, 1);
        ppl_report(row, 0, chunk, ok);
        left += !ok;
    }
    return left;
}

/* Replay partial entry x (ls sorted by seq, x = ls[xi]). Returns true when every column run of
 * its window is proven consistent (or decided by a later entry). */
static bool lent_apply(struct r5_req *q, const struct ppl_lent *ls, size_t nl, size_t xi,
                       bool trust_absent)
{
    const struct ppl_ctx c = {.ls = ls, .nl = nl, .xi = xi, .trust_absent = trust_absent};
    struct raid_priv *r = q->r;
    const struct ppl_lent *x = &ls[xi];
    struct r5_geo g;
    r5_geo(&r->l, x->e.row, &g);
    uint64_t moff = g.row * r->l.g.chunk + x->e.lo, len = x->e.len;
    uint32_t targets = lent_targets(r, &g), dmask = (1u << g.nd) - 1, *pt = NULL;
    for (size_t j = xi + 1; j < nl; j++)
        if ((ls[j].e.flags & RK_PPL_FULL) && lent_on_row(&ls[j], x->e.row))
            return true; /* a later whole-stripe write decides the whole stripe */
    if (!targets)
        return true;
    stripe_lock_range(&q->p->locks, g.row, 1);
    r5c_drop(q->p, g.row, 1);
    uint32_t rd = r5_blk_readable(r, &g, moff, len);
    bool ok = true;
    if ((rd & dmask) == dmask) {
        ok = !lent_from_data(q, &g, targets, len, moff);
        ppl_report(g.row, x->e.lo, x->e.lo + len, ok);
    } else if (ppl_read(q, &g, rd, len, moff)) {
        ok = false;
        ppl_report(g.row, x->e.lo, x->e.lo + len, ok);
    } else {
        uint32_t np = lent_points(ls, nl, x, &pt);
        ok = np >= 2;
        if (!ok)
            ppl_report(g.row, x->e.lo, x->e.lo + len, ok);
        for (uint32_t j = 0; j + 1 < np; j++) {
            uint32_t s = pt[j], t = pt[j + 1], older;
            bool newer, run;
            lent_context(ls, nl, xi, g.nd, s, t, &newer, &older);
            if (newer)
                continue; /* a later entry decides these columns */
            run = lent_run(q, &g, &c, rd, targets, lent_mod(x, g.nd, s, t), older, s - x->e.lo,
                           t - s);
            ppl_report(g.row, s, t, run);
            ok &= run;
        }
        lent_write(q, &g, targets, len, moff);
    }
    free(pt);
    stripe_unlock_range(&q->p->locks, g.row, 1);
    return ok;
}

/* The entries sc found, sorted by seq, the copies of one seq merged (raid6: P's and Q's entry),
 * into *out (malloc'ed); returns their count. */
static size_t lent_collect(struct ppl_scan *sc, struct ppl_lent **out)
{
    size_t n = 0;
    *out = NULL;
    if (!sc->nf)
        return 0;
    qsort(sc->f, sc->nf, sizeof(*sc->f), ppl_found_cmp);
    struct ppl_lent *ls = calloc(sc->nf, sizeof(*ls));
    if (!ls)
        return 0;
    for (size_t i = 0; i < sc->nf; i++) {
        const struct ppl_found *f = &sc->f[i];
        if (!n || ls[n - 1].e.seq != f->e.seq || ls[n - 1].e.row != f->e.row)
            ls[n++] = (struct ppl_lent){.e = f->e};
        struct ppl_lent *x = &ls[n - 1];
        if ((f->e.flags & RK_PPL_HASHED) && f->e.dig && sc->haskey[f->slot] && !x->dig) {
            x->dig = f->e.dig; /* digests and the key of the member they were found on */
            x->key = sc->key[f->slot];
            x->e.dig = f->e.dig;
        }
        if ((f->e.flags & RK_PPL_FULL) != (x->e.flags & RK_PPL_FULL))
            continue; /* cannot happen with one writer of seqs; keep the first */
        if (f->e.flags & RK_PPL_HAS_P)
            x->pp = f->payload;
        if (f->e.flags & RK_PPL_HAS_Q)
            x->pq = f->payload + ((f->e.flags & RK_PPL_HAS_P) ? f->e.len : 0);
        x->e.flags |= f->e.flags;
    }
    *out = ls;
    return n;
}

/* With a member missing, the slots in bad make the replay unprovable: each is warned (why: what
 * cannot be told of its log), and bad is returned; with every member readable, 0. */
static uint32_t ppl_unprovable(struct raid_priv *r, uint32_t bad, const char *why)
{
    uint32_t all = (1u << r->l.g.members) - 1;
    if (raid_slot_mask(r, RAID_STATES_READ) == all)
        return 0;
    for (uint32_t s = 0; s < r->l.g.members; s++)
        if (bad & (1u << s))
            rk_warn("raid: slot %" PRIu32 " (%s): %s", s, r->members[s]->name, why);
    return bad;
}

/* A slot whose head is not valid (corrupt: the head is one FUA block, a crash never tears it)
 * gives no retirement point, so any of its entries may be long retired, its partial parity
 * stale. With every member readable the replay recomputes their stripes from the data
 * (harmless); with one missing, such an entry could rebuild the missing chunk as it was long
 * ago. Returns the slots that make a degraded replay unprovable (warned), 0 when none do: then
 * the start is refused before anything is written (--force replays them as they are). */
static uint32_t ppl_badhead(struct raid_priv *r, const struct ppl_scan *sc)
{
    uint32_t bad = 0;
    for (size_t i = 0; i < sc->nf; i++)
        bad |= sc->badhead & (1u << sc->f[i].slot);
    return ppl_unprovable(r, bad,
                          "its partial parity log head is not valid, so which of its log entries "
                          "are still live cannot be told; with a member missing they cannot be "
                          "replayed");
}

/* Readable slots (rd) whose log region could not be read (r5_ppl_scan_slot warned): which of
 * their entries are live, a write in flight at the crash among them, cannot be told. */
static uint32_t ppl_unread(const struct raid_priv *r, const struct ppl_scan *sc, uint32_t rd)
{
    uint32_t u = 0;
    for (uint32_t s = 0; s < r->l.g.members; s++)
        if ((rd & (1u << s)) && !sc->buf[s])
            u |= 1u << s;
    return u;
}

/* A replay without the entries of a log it cannot read: with every member readable the resync
 * of the marked regions recomputes their stripes from the data (harmless); with one missing, a
 * stripe whose parity member's log was not read keeps the parity a crash may have torn, and the
 * missing chunk is rebuilt from it. Returns those slots (warned) when a member is missing, else
 * 0: then the start is refused before anything is written (--force starts without them). */
static uint32_t ppl_unread_degraded(struct raid_priv *r, const struct ppl_scan *sc, uint32_t rd)
{
    return ppl_unprovable(r, ppl_unread(r, sc, rd),
                          "its partial parity log cannot be read, so the writes in flight it "
                          "logged cannot be replayed; with a member missing the stripes they tore "
                          "would read garbage");
}

/* Replay the entries sc found (docs/FORMAT.md "Replay"): per column, the latest live entry that
 * covers it decides. Returns the stripe windows left unproven. */
static int ppl_replay(struct raid_priv *r, struct ppl_scan *sc)
{
    struct r5_req q;
    struct ppl_lent *ls;
    size_t nl = lent_collect(sc, &ls);
    int done = 0, skipped = 0;
    if (sc->nf && !ls)
        return 1; /* out of memory: nothing proven */
    r5_req_init(&q, r, 0);
    r5_req_buf(&q);
    for (size_t i = 0; i < nl; i++) {
        const struct rk_ppl_entry *e = &ls[i].e;
        uint64_t left = (e->flags & RK_PPL_FULL) ? lent_apply_full(&q, ls, nl, i)
                                                 : !lent_apply(&q, ls, nl, i, sc->untrusted == 0);
        done += !left;
        if (!left)
            continue;
        skipped++;
        if (e->flags & RK_PPL_FULL)
            rk_warn("raid: log entry %" PRIu64 " (whole stripes %" PRIu64 "..+%" PRIu32
                    "): %" PRIu64
                    " of them miss a data chunk and may have been written in part; their parity "
                    "is left as it is",
                    e->seq, e->row, e->nrows, left);
        else
            rk_warn("raid: log entry %" PRIu64 " (stripe %" PRIu64 "): a chunk it modified, or "
                    "one a live earlier write modified, is missing or its parity's log entry is "
                    "gone, and the log cannot tell which version the parity holds; that parity "
                    "is left as it is",
                    e->seq, e->row);
    }
    r5_req_done(&q);
    free(ls);
    for (uint32_t s = 0; s < r->l.g.members; s++)
        if ((raid_slot_mask(r, RAID_STATES_WRITE) & (1u << s)) && rk_dev_flush(r->members[s]))
            raid_fail(r, s, -EIO);
    rk_info("raid: partial parity log replayed: %d stripe window%s made consistent, %d left", done,
            done == 1 ? "" : "s", skipped);
    return skipped;
}

/* The read-only check's verdict kept for the reads (r5_priv.suspect, r5_row_suspect): the rows
 * of the live entries (-EUCLEAN), or every row (-EBADMSG, or no memory for the list). */
static void ppl_suspect(struct r5_priv *p, const struct ppl_scan *sc, int ret)
{
    free(p->suspect);
    p->suspect = NULL;
    p->nsuspect = 0;
    p->suspect_all = ret == -EBADMSG;
    if (ret != -EUCLEAN)
        return;
    p->suspect = calloc(sc->nf, sizeof(*p->suspect));
    if (!p->suspect) {
        p->suspect_all = true;
        return;
    }
    for (size_t i = 0; i < sc->nf; i++) {
        const struct rk_ppl_entry *e = &sc->f[i].e;
        p->suspect[p->nsuspect++] =
            (struct r5_suspect){.row = e->row, .nrows = e->nrows ? e->nrows : 1};
    }
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
    if (mode & RK_LOG_CHECK) {
        /* Read-only: nothing written, nothing kept. Every write in flight at the crash has a
         * live entry on each readable parity member of its stripe (a stripe whose parity
         * members are all gone needs no reconstruction), so none found, every log block read
         * and trusted, means no stripe needs the replay. A live entry is -EUCLEAN; a corrupt
         * head (no entry of its slot can be told retired, so they all look live), or without a
         * live entry a log block that cannot be read or trusted (it could have been one),
         * -EBADMSG. */
        int ret = sc.badhead                               ? -EBADMSG
                  : sc.nf                                  ? -EUCLEAN
                  : sc.untrusted || ppl_unread(r, &sc, rd) ? -EBADMSG
                                                           : 0;
        ppl_suspect(p, &sc, ret);
        for (uint32_t s = 0; s < RK_MAX_MEMBERS; s++)
            free(sc.buf[s]);
        free(sc.f);
        return ret;
    }
    /* The log key: the one the heads hold (the array's, kept across starts), else a new one. */
    bool key = false;
    for (uint32_t s = 0; s < r->l.g.members && !key; s++)
        if (sc.haskey[s]) {
            memcpy(L->key, sc.key[s], RK_PPL_KEY_BYTES);
            key = true;
        }
    if (!key)
        randombytes_buf(L->key, RK_PPL_KEY_BYTES);
    /* Entries that may be long retired, or a log that cannot be read, are not replayed into a
     * degraded array unless forced. */
    int left = 0;
    if (mode & RK_LOG_REPLAY) {
        uint32_t unprovable = ppl_badhead(r, &sc) | ppl_unread_degraded(r, &sc, rd);
        left = unprovable && !(mode & RK_LOG_FORCE) ? 1 : ppl_replay(r, &sc);
    }
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
    uint64_t upto[RK_MAX_MEMBERS] = {0};
    L->next_seq = sc.next;
    L->busy = true;
    for (uint32_t s = 0; s < r->l.g.members; s++) {
        struct ppl_ring *m = &L->m[s];
        m->head = m->first = m->count = 0;
        m->retired = sc.next;
        upto[s] = (wr & (1u << s)) ? sc.next : 0;
    }
    if (r5_ppl_write_heads(r, L, upto) && !r5_alive(r))
        ret = -EIO;
    for (uint32_t s = 0; s < r->l.g.members; s++)
        if (upto[s]) {
            L->m[s].dev = r->members[s];
            L->m[s].joins = atomic_load(&r->joins[s]);
        }
    L->busy = false;
    L->on = true;
    for (uint32_t s = 0; s < RK_MAX_MEMBERS; s++)
        free(sc.buf[s]);
    free(sc.f);
    return ret;
}
