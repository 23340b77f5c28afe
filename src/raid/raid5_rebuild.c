/* raid5 and raid6 rebuild and scrub hooks, in member data-area coordinates: reconstruct a
 * slot's chunks from the other slots, and check (optionally repair) the parity of stripes. The
 * job that calls them holds the range lock of the range (rebuild.c, scrub.c). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "core/util.h"
#include "raid/job.h"
#include "raid/raid5_int.h"

static int r5_check_range(struct raid_priv *r, uint64_t member_off, uint64_t len)
{
    uint64_t chunk = r->l.g.chunk;
    if (member_off % chunk || len % chunk || member_off > r->l.min_data ||
        len > r->l.min_data - member_off)
        return -EINVAL;
    return 0;
}

int r5_reconstruct(struct raid_priv *r, uint32_t slot, uint64_t member_off, uint64_t len, void *out)
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

/* Repair writes are sector-run aligned to this (every member block size divides it). */
#define R5_SCRUB_ALIGN 4096u

/* The span [*a, *b) of buf's n bytes that holds nonzero bytes, widened to R5_SCRUB_ALIGN
 * (n is a multiple of it); false when all n bytes are zero. */
static bool r5_nonzero_span(const char *buf, uint64_t n, uint64_t *a, uint64_t *b)
{
    uint64_t lo = 0, hi = n;
    while (lo < n && !buf[lo])
        lo++;
    if (lo == n)
        return false;
    while (!buf[hi - 1])
        hi--;
    *a = lo / R5_SCRUB_ALIGN * R5_SCRUB_ALIGN;
    *b = (hi + R5_SCRUB_ALIGN - 1) / R5_SCRUB_ALIGN * R5_SCRUB_ALIGN;
    if (*b > n)
        *b = n;
    return true;
}

/* One window's finding: block blk of stripe g over window bytes [a, b) from column lo. */
struct r5_find {
    const struct r5_geo *g;
    uint64_t lo, a, b;
    bool first; /* the stripe's first mismatch report: counts as its repair (one per stripe) */
};

/* Report a mismatch at f: the job's list (raid_job_mismatch) and the log. */
static void r5_report(struct raid_priv *r, struct r5_find *f, uint32_t blk, int kind, int fixed)
{
    const struct r5_geo *g = f->g;
    uint64_t chunk = r->l.g.chunk;
    struct rk_raid_mismatch m = {
        .slot = g->slot[blk],
        .member_off = g->row * chunk + f->lo + f->a,
        .len = f->b - f->a,
        .array_off =
            blk < g->nd ? (g->row * g->nd + blk) * chunk + f->lo + f->a : RK_RAID_NO_ARRAY_OFF,
        .kind = kind,
        .fixed = fixed,
        /* block nd is P, nd + 1 Q; an unlocated raid6 mismatch blames (and rewrites) both */
        .parity = blk < g->nd                             ? RK_MM_PAR_NONE
                  : blk == g->nd + 1                      ? RK_MM_PAR_Q
                  : kind == RK_MM_UNLOCATED && g->np == 2 ? RK_MM_PAR_PQ
                                                          : RK_MM_PAR_P,
        .q_slot = g->np == 2 ? g->slot[g->nd + 1] : 0,
    };
    if (m.parity != RK_MM_PAR_PQ)
        m.q_slot = 0;
    raid_job_mismatch(r, &m, f->first);
    f->first = false;
    char par[64] = "";
    if (m.parity == RK_MM_PAR_PQ)
        snprintf(par, sizeof(par), " (parity P) and slot %u (parity Q)", m.q_slot);
    else if (m.parity != RK_MM_PAR_NONE)
        snprintf(par, sizeof(par), " (parity %s)", rk_raid_mismatch_parity_name(m.parity));
    rk_warn("scrub: stripe %llu mismatch (%s) on slot %u%s, %s [%llu, %llu)%s%s",
            (unsigned long long)g->row, rk_raid_mismatch_kind_name(kind), m.slot, par,
            m.parity == RK_MM_PAR_NONE ? "data bytes" : "bytes", (unsigned long long)m.member_off,
            (unsigned long long)(m.member_off + m.len), fixed ? ": rewrote " : "",
            fixed ? rk_raid_fix_name(fixed) : "");
}

/* Write the buffers of blocks blk and blk2 (UINT32_MAX: none; g->n and g->n + 1 are the
 * scratch P' and Q', written to the P and Q slots) over window bytes [a, b) at column lo back
 * to their slots (those that take writes). Returns 0 or -EIO (the slot is failed then). */
static int r5_scrub_write(struct r5_req *q, const struct r5_find *f, uint32_t blk, uint32_t blk2)
{
    struct raid_priv *r = q->r;
    uint32_t wr = raid_slot_mask(r, RAID_STATES_WRITE);
    uint64_t moff = f->g->row * r->l.g.chunk + f->lo + f->a, n = f->b - f->a;
    struct r5_ios v = {.n = 0};
    uint32_t src[2] = {blk, blk2};
    for (int i = 0; i < 2; i++) {
        uint32_t b = src[i];
        if (b == UINT32_MAX)
            continue;
        uint32_t s = f->g->slot[b < f->g->n ? b : f->g->nd + (b - f->g->n)];
        if (!(wr & (1u << s)))
            continue;
        r5_io_add(&v, r, s, RK_OP_WRITE, 0, r5_blk(q, b) + f->a, n, moff);
    }
    if (blk < f->g->nd)
        r5c_drop(q->p, f->g->row, 1); /* a cached copy of the stripe may hold the bad data */
    if (v.n && r5_io_run(q, &v)) {
        r5_fail_writes(q, &v);
        return -EIO;
    }
    return 0;
}

/* raid6: handle the run [a, b) of window f whose syndromes (in the scratch blocks) all blame
 * block z (rk_parity_locate): with repair, rewrite data block z as D_z ^ ps, or P / Q / both
 * (unlocated) from the data; report it. Returns 0 or -EIO. */
static int r6_fix_run(struct r5_req *q, struct r5_find *f, uint64_t a, uint64_t b, int z,
                      bool repair)
{
    const struct r5_geo *g = f->g;
    uint32_t nd = g->nd, pb = g->n, qb = g->n + 1;
    char *ps = r5_blk(q, pb), *qs = r5_blk(q, qb);
    uint32_t bad = z == RK_PARITY_LOC_UNKNOWN ? nd : (uint32_t)z;
    int kind = z == RK_PARITY_LOC_UNKNOWN ? RK_MM_UNLOCATED : RK_MM_LOCATED;
    int fixed = !repair ? RK_FIX_NONE : bad < nd ? RK_FIX_DATA : RK_FIX_PARITY;
    int ret = 0;
    f->a = a;
    f->b = b;
    if (kind == RK_MM_UNLOCATED)
        rk_warn("scrub: stripe %llu: cannot locate the bad chunk from P and Q (more than one "
                "differs)%s",
                (unsigned long long)g->row, repair ? ": rewriting parity from the data" : "");
    if (repair && bad < nd) {
        rk_parity_xor_into(b - a, r5_blk(q, bad) + a, ps + a); /* what D_z held */
        ret = r5_scrub_write(q, f, bad, UINT32_MAX);
    } else if (repair) {
        /* Back from syndromes to P', Q' (the parity of the data); rewrite what is blamed. */
        rk_parity_xor_into(b - a, ps + a, r5_blk(q, nd) + a);
        rk_parity_xor_into(b - a, qs + a, r5_blk(q, nd + 1) + a);
        ret = r5_scrub_write(q, f, z == (int)nd + 1 ? UINT32_MAX : pb,
                             z == (int)nd ? UINT32_MAX : qb);
    }
    r5_report(q->r, f, bad, kind, fixed);
    return ret;
}

/* raid6, every block read, np0 / np1 holding the recomputed P' / Q': turn them into the
 * syndromes and locate the bad block per R5_SCRUB_ALIGN block (as mdadm's raid6check does per
 * page, so two bad sectors in different chunks of one stripe are both found), then handle each
 * run of blocks blaming the same one (r6_fix_run). Returns 1 (mismatch), 0 or -EIO. */
static int r6_scrub_locate(struct r5_req *q, struct r5_find *f, uint64_t n, bool repair)
{
    const struct r5_geo *g = f->g;
    char *ps = r5_blk(q, g->n), *qs = r5_blk(q, g->n + 1);
    rk_parity_xor_into(n, ps, r5_blk(q, g->nd));
    rk_parity_xor_into(n, qs, r5_blk(q, g->nd + 1));
    int run = RK_PARITY_LOC_CLEAN, ret = 0, found = 0;
    uint64_t start = 0;
    for (uint64_t o = 0; o <= n; o += R5_SCRUB_ALIGN) {
        int z = RK_PARITY_LOC_CLEAN;
        if (o < n)
            rk_parity_locate((int)g->nd, R5_SCRUB_ALIGN, ps + o, qs + o, &z);
        if (z == run)
            continue;
        if (run != RK_PARITY_LOC_CLEAN) {
            found = 1;
            if (r6_fix_run(q, f, start, o, run, repair))
                ret = -EIO;
        }
        run = z;
        start = o;
    }
    return ret ? ret : found;
}

/* Check window [lo, hi) of stripe g, every block read into q's buffers (stripe lock held):
 * recompute the parity into the two scratch blocks and compare. raid5 rewrites P (the data is
 * assumed right); raid6 locates the bad block. Returns 1 (mismatch), 0 or -EIO. */
static int r5_scrub_window(struct r5_req *q, struct r5_find *f, uint64_t hi, bool repair)
{
    const struct r5_geo *g = f->g;
    uint64_t n = hi - f->lo;
    uint32_t nd = g->nd;
    void *data[RK_MAX_MEMBERS];
    for (uint32_t k = 0; k < nd; k++)
        data[k] = r5_blk(q, k);
    char *np0 = r5_blk(q, g->n), *np1 = r5_blk(q, g->n + 1);
    r5_parity_gen(g->np, nd, n, data, np0, np1);
    bool bp = memcmp(np0, r5_blk(q, nd), n) != 0;
    bool bq = g->np == 2 && memcmp(np1, r5_blk(q, nd + 1), n) != 0;
    if (!bp && !bq)
        return 0;
    if (g->np == 2)
        return r6_scrub_locate(q, f, n, repair);
    f->a = 0;
    f->b = n;
    int ret = repair ? r5_scrub_write(q, f, g->n, UINT32_MAX) : 0;
    rk_parity_xor_into(n, np0, r5_blk(q, nd));
    r5_nonzero_span(np0, n, &f->a, &f->b);
    r5_report(q->r, f, nd, RK_MM_PARITY, repair ? RK_FIX_PARITY : RK_FIX_NONE);
    return ret ? ret : 1;
}

/* raid6 window [lo, hi) of stripe g with exactly block miss unreadable: the other blocks are
 * read, a missing data block is rebuilt from P, and the parity that was not used is compared
 * (Q when data or P is missing, P when Q is). A mismatch cannot be located; with repair (a
 * resync only, RAID_SCRUB_RESYNC: its mismatches are writes a crash interrupted) the compared
 * parity is rewritten from the data, as md's raid6 sync does, so the stripe is consistent
 * again (the missing block keeps what P says). A user's scrub --repair leaves it: rewriting the
 * parity from a corrupted data chunk would make the corruption consistent, so that P and Q
 * could no longer locate it once the member is back (nor could the rebuild avoid copying it).
 * Returns 1 (mismatch), 0, 2 when a read failed (the caller recovers instead), or -errno when
 * the repair write failed. */
static int r6_scrub_degraded(struct r5_req *q, struct r5_find *f, uint64_t hi, uint32_t miss,
                             bool repair)
{
    struct raid_priv *r = q->r;
    const struct r5_geo *g = f->g;
    uint64_t n = hi - f->lo, moff = g->row * r->l.g.chunk + f->lo;
    uint32_t nd = g->nd;
    struct r5_ios v = {.n = 0};
    for (uint32_t b = 0; b < g->n; b++)
        if (b != miss)
            r5_io_add(&v, r, g->slot[b], RK_OP_READ, 0, r5_blk(q, b), n, moff);
    if (r5_io_run(q, &v))
        return 2;
    if (miss < nd && r5_recover_blocks(q, g, n, 1u << miss))
        return 2;
    void *data[RK_MAX_MEMBERS];
    for (uint32_t k = 0; k < nd; k++)
        data[k] = r5_blk(q, k);
    r5_parity_gen(2, nd, n, data, r5_blk(q, g->n), r5_blk(q, g->n + 1));
    uint32_t chk = miss == nd + 1 ? nd : nd + 1; /* the parity block compared */
    char *calc = r5_blk(q, g->n + (chk - nd));
    rk_parity_xor_into(n, calc, r5_blk(q, chk));
    if (!r5_nonzero_span(calc, n, &f->a, &f->b))
        return 0;
    int ret = 0;
    if (repair && (raid_slot_mask(r, RAID_STATES_WRITE) & (1u << g->slot[chk]))) {
        rk_parity_xor_into(n, calc, r5_blk(q, chk)); /* back to the parity of the data */
        struct r5_ios w = {.n = 0};
        r5_io_add(&w, r, g->slot[chk], RK_OP_WRITE, 0, calc + f->a, f->b - f->a, moff + f->a);
        if (r5_io_run(q, &w)) {
            r5_fail_writes(q, &w);
            ret = -EIO;
        }
    } else {
        repair = false;
    }
    r5_report(r, f, chk, RK_MM_DEGRADED, repair && !ret ? RK_FIX_PARITY : RK_FIX_NONE);
    return ret ? ret : 1;
}

/* One window [lo, hi) of stripe g for r5_scrub: check it as far as the readable blocks allow;
 * first: no mismatch was reported in the stripe yet. Returns 1 (mismatch), 0, or -errno. */
static int r5_scrub_one(struct r5_req *q, const struct r5_geo *g, uint64_t lo, uint64_t hi,
                        unsigned mode, bool first)
{
    bool repair = mode & RAID_SCRUB_REPAIR;
    struct raid_priv *r = q->r;
    struct r5_find f = {.g = g, .lo = lo, .first = first};
    uint64_t moff = g->row * r->l.g.chunk + lo;
    uint32_t all = (1u << g->n) - 1, rd = r5_blk_readable(r, g, moff, hi - lo);
    uint32_t gone = all & ~rd;
    /* raid5 with a block gone, raid6 with two: no redundancy left to compare. */
    if ((uint32_t)__builtin_popcount(gone) >= g->np)
        return 0;
    if (gone) {
        int m = r6_scrub_degraded(q, &f, hi, (uint32_t)__builtin_ctz(gone),
                                  (mode & RAID_SCRUB_RESYNC) != 0);
        if (m != 2)
            return m;
    }
    uint32_t bad = 0;
    int ret = r5_recover_window(q, g, lo, hi, 0, 0, &bad);
    if (ret)
        return ret;
    if (bad || gone) {
        /* Unreadable sectors were rebuilt from parity: write them back. */
        r5_repair(q, g, lo, hi, bad);
        return 0;
    }
    return r5_scrub_window(q, &f, hi, repair);
}

int r5_scrub(struct raid_priv *r, uint64_t member_off, uint64_t len, unsigned mode,
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
        uint64_t row = (member_off + done) / chunk;
        bool mism = false;
        r5_geo(&r->l, row, &g);
        stripe_lock_range(&q.p->locks, row, 1);
        for (uint64_t lo = 0; lo < chunk && !ret; lo += q.p->win) {
            uint64_t hi = lo + q.p->win < chunk ? lo + q.p->win : chunk;
            int m = r5_scrub_one(&q, &g, lo, hi, mode, !mism);
            if (m > 0)
                mism = true;
            if (m < 0)
                ret = m;
        }
        stripe_unlock_range(&q.p->locks, row, 1);
        if (mism && mismatches)
            (*mismatches)++;
    }
    r5_req_done(&q);
    return ret;
}
