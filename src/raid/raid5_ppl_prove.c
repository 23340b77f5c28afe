/*
 * The digests of the partial parity log: computed by the writer (r5_ppl_digests) and used as
 * proofs by the replay (docs/FORMAT.md "Replay", "Digests"): where the
 * partial parity alone cannot tell which version of a stripe the members hold (a dirty and
 * degraded start), the keyed digests of the new data that RK_PPL_HASHED entries carry can.
 *
 * Two proofs, both refusing whatever they cannot prove (the caller then leaves the parity and
 * the start is refused, as without digests):
 * - older: a readable chunk that x's partial parity assumes as x saw it, but that an older live
 *   entry modified, holds that entry's new data (its digest matches): the assumption holds.
 * - rebuild: the missing data chunks, rebuilt from the parity on the members, each hold a
 *   version the log proves (x's new data by x's digest, or the latest older live entry's new
 *   data by its digest). Parity and readable data then define a consistent stripe whose missing
 *   chunks read as a valid version; the other parity is recomputed from it.
 * "Latest older live entry" needs every live entry to be known: with any log block ignored as
 * corrupt (ctx.trust_absent false) only x's own digests are used.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "raid/raid5_int.h"
#include "raid/raid5_ppl.h"
#include "raid/raid5_ppl_int.h"

#define CELL RK_PPL_CELL

/* Digests of the new data of every whole cell e's ranges cover (window w, touched chunks),
 * into e->dig (a per-thread buffer); returns RK_PPL_HASHED, or 0 (e->dig NULL) when digests
 * are off or do not fit in the header. */
uint32_t r5_ppl_digests(const struct r5_ppl *L, const struct r5_wwin *w, uint32_t touched,
                        uint32_t nd, struct rk_ppl_entry *e)
{
    static _Thread_local uint8_t dig[RK_PPL_MAX_DIG * RK_PPL_DIG_BYTES];
    e->dig = NULL;
    if (!L->hash || rk_ppl_digest_count(e) > RK_PPL_MAX_DIG)
        return 0;
    uint32_t n = 0;
    for (uint32_t k = 0; k < nd; k++) {
        if (!(touched & (1u << k)))
            continue;
        uint64_t a = w->a[k], b = w->b[k];
        for (uint64_t c = (a + RK_PPL_CELL - 1) / RK_PPL_CELL * RK_PPL_CELL; c + RK_PPL_CELL <= b;
             c += RK_PPL_CELL)
            rk_ppl_hash(L->key, w->src[k] + (c - a), dig + (size_t)n++ * RK_PPL_DIG_BYTES);
    }
    e->dig = dig;
    return RK_PPL_HASHED;
}

/* Read the blocks in want of stripe g over member range [moff, moff + len) into bufs[b]:
 * 0 or -EIO. */
static int prove_read(struct r5_req *q, const struct r5_geo *g, uint32_t want, char **bufs,
                      uint64_t len, uint64_t moff)
{
    struct r5_ios v = {.n = 0};
    for (uint32_t b = 0; b < g->n; b++)
        if (want & (1u << b))
            r5_io_add(&v, q->r, g->slot[b], RK_OP_READ, 0, bufs[b], len, moff);
    return r5_io_run(q, &v) ? -EIO : 0;
}

/* Does cell hold the content of digest dig (made with key)? */
static bool prove_cell(const uint8_t *key, const uint8_t *dig, const char *cell)
{
    uint8_t got[RK_PPL_DIG_BYTES];
    rk_ppl_hash(key, cell, got);
    return memcmp(got, dig, sizeof(got)) == 0;
}

/* The latest live entry older than x (ls[xi]) on stripe row that modified chunk k anywhere in
 * cell [c, c + CELL): its digest of the whole cell (and *key), or NULL when it has none. *any
 * tells whether such an entry exists. */
static const uint8_t *prove_old(const struct ppl_ctx *cx, uint64_t row, uint32_t k, uint32_t c,
                                bool *any, const uint8_t **key)
{
    *any = false;
    for (size_t j = cx->xi; j-- > 0;) {
        const struct ppl_lent *y = &cx->ls[j];
        if (y->e.flags & RK_PPL_FULL) {
            if (row >= y->e.row && row - y->e.row < y->e.nrows) {
                *any = true;
                return NULL; /* a whole-stripe write carries no digests */
            }
            continue;
        }
        if (y->e.row != row)
            continue;
        bool hit = false;
        for (uint32_t i = 0; i < y->e.nranges && !hit; i++)
            hit = y->e.r[i].k == k && y->e.r[i].a < c + CELL && y->e.r[i].b > c;
        if (!hit)
            continue;
        *any = true;
        int idx = y->dig ? rk_ppl_digest_index(&y->e, k, c) : -1;
        if (idx < 0)
            return NULL;
        *key = y->key;
        return y->dig + (size_t)idx * RK_PPL_DIG_BYTES;
    }
    return NULL;
}

/* Cells [*cs, *ce) covering columns [s, t); false when they leave the chunk. */
static bool prove_span(const struct r5_req *q, uint32_t s, uint32_t t, uint32_t *cs, uint32_t *ce)
{
    *cs = s / CELL * CELL;
    *ce = (t + CELL - 1) / CELL * CELL;
    return *ce <= q->r->l.g.chunk && *cs < *ce;
}

bool ppl_prove_older(struct r5_req *q, const struct r5_geo *g, const struct ppl_ctx *c,
                     uint32_t chunks, uint32_t s, uint32_t t)
{
    uint32_t cs, ce;
    if (!c->trust_absent || !prove_span(q, s, t, &cs, &ce))
        return false;
    char *bufs[RK_MAX_MEMBERS] = {0};
    char *cell = rk_buf_alloc(CELL);
    bool ok = cell != NULL;
    uint64_t base = g->row * q->r->l.g.chunk;
    for (uint32_t k = 0; ok && k < g->nd; k++) {
        if (!(chunks & (1u << k)))
            continue;
        bufs[k] = cell;
        for (uint32_t col = cs; ok && col < ce; col += CELL) {
            bool any;
            const uint8_t *key = NULL, *d = prove_old(c, g->row, k, col, &any, &key);
            if (!any)
                continue; /* no live write touched it: as x saw it */
            ok =
                d && !prove_read(q, g, 1u << k, bufs, CELL, base + col) && prove_cell(key, d, cell);
        }
        bufs[k] = NULL;
    }
    free(cell);
    return ok;
}

/* Is chunk k's cell col (content at cell) a version the log proves for x? */
static bool prove_version(const struct ppl_ctx *c, uint64_t row, uint32_t k, uint32_t col,
                          const char *cell)
{
    const struct ppl_lent *x = &c->ls[c->xi];
    int idx = x->dig ? rk_ppl_digest_index(&x->e, k, col) : -1;
    if (idx >= 0 && prove_cell(x->key, x->dig + (size_t)idx * RK_PPL_DIG_BYTES, cell))
        return true;
    if (!c->trust_absent)
        return false;
    bool any;
    const uint8_t *key = NULL, *d = prove_old(c, row, k, col, &any, &key);
    return d && prove_cell(key, d, cell);
}

bool ppl_prove_rebuild(struct r5_req *q, const struct r5_geo *g, const struct ppl_ctx *c,
                       uint32_t rd, uint32_t s, uint32_t t)
{
    const struct ppl_lent *x = &c->ls[c->xi];
    uint32_t nd = g->nd, np = g->np, n = g->n, dmask = (1u << nd) - 1, gone = dmask & ~rd;
    uint32_t pbit = 1u << nd, qbit = np == 2 ? 2u << nd : 0, cs, ce;
    int ng = __builtin_popcount(gone);
    if (!gone || ng > (int)np || !prove_span(q, s, t, &cs, &ce))
        return false;
    uint64_t span = ce - cs, moff = g->row * q->r->l.g.chunk + cs;
    uint32_t rd2 = r5_blk_readable(q->r, g, moff, span);
    if ((rd2 & dmask) != (rd & dmask))
        return false;
    /* The parity sets to try: each names the blocks rebuilt (the rest are read). */
    int miss[3][2], nm[3] = {0}, ntry = 0, m0 = __builtin_ctz(gone);
    if (ng == 1 && (rd2 & pbit)) { /* from P (Q, if any, is rebuilt too) */
        miss[ntry][nm[ntry]++] = m0;
        if (np == 2)
            miss[ntry][nm[ntry]++] = (int)nd + 1;
        ntry++;
    }
    if (ng == 1 && qbit && (rd2 & qbit)) { /* from Q */
        miss[ntry][0] = m0;
        miss[ntry][1] = (int)nd;
        nm[ntry++] = 2;
    }
    if (ng == 2 && (rd2 & pbit) && (rd2 & qbit)) {
        miss[ntry][0] = m0;
        miss[ntry][1] = __builtin_ctz(gone & (gone - 1));
        nm[ntry++] = 2;
    }
    char *buf = ntry ? rk_buf_alloc((size_t)n * span) : NULL, *bufs[RK_MAX_MEMBERS];
    void *blocks[RK_MAX_MEMBERS];
    if (!buf)
        return false;
    for (uint32_t b = 0; b < n; b++)
        blocks[b] = bufs[b] = buf + (size_t)b * span;
    bool ok = false;
    for (int i = 0; i < ntry && !ok; i++) {
        if (prove_read(q, g, rd2, bufs, span, moff) ||
            rk_parity_recover(q->p->pctx, (int)nd, (int)np, span, blocks, miss[i], nm[i]))
            break;
        ok = true;
        for (uint32_t k = 0; ok && k < nd; k++)
            for (uint32_t col = cs; ok && (gone & (1u << k)) && col < ce; col += CELL)
                ok = prove_version(c, g->row, k, col, bufs[k] + (col - cs));
    }
    if (ok) { /* q's buffers over [s, t): that version and its parity */
        void *data[RK_MAX_MEMBERS];
        uint64_t off = s - x->e.lo, len = t - s;
        for (uint32_t k = 0; k < nd; k++) {
            data[k] = r5_blk(q, k) + off;
            memcpy(data[k], bufs[k] + (s - cs), len);
        }
        r5_parity_gen(np, nd, len, data, r5_blk(q, nd) + off,
                      np == 2 ? r5_blk(q, nd + 1) + off : NULL);
    }
    free(buf);
    return ok;
}
