/* raid5 and raid6 rebuild and scrub hooks, in member data-area coordinates: reconstruct a
 * slot's chunks from the other slots, and check (optionally repair) the parity of stripes. The
 * job that calls them holds the range lock of the range (rebuild.c, scrub.c). */
#include <errno.h>
#include <string.h>

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

/* Check window [lo, hi) of stripe g (read into q's buffers, stripe lock held): recompute the
 * parity into the two scratch blocks, compare, and with repair rewrite the parity that differs.
 * Returns 1 (mismatch), 0 (consistent) or -EIO (a repair write failed). */
static int r5_scrub_window(struct r5_req *q, const struct r5_geo *g, uint64_t lo, uint64_t hi,
                           bool repair)
{
    struct raid_priv *r = q->r;
    uint64_t n = hi - lo, moff = g->row * r->l.g.chunk + lo;
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
    if (!repair)
        return 1;
    uint32_t wr = raid_slot_mask(r, RAID_STATES_WRITE);
    struct r5_ios v = {.n = 0};
    if (bp && (wr & (1u << g->slot[nd])))
        r5_io_add(&v, r, g->slot[nd], RK_OP_WRITE, 0, np0, n, moff);
    if (bq && (wr & (1u << g->slot[nd + 1])))
        r5_io_add(&v, r, g->slot[nd + 1], RK_OP_WRITE, 0, np1, n, moff);
    if (r5_io_run(q, &v)) {
        r5_fail_writes(q, &v);
        return -EIO;
    }
    return 1;
}

int r5_scrub(struct raid_priv *r, uint64_t member_off, uint64_t len, bool repair,
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
        uint32_t all = (1u << g.n) - 1;
        stripe_lock_range(&q.p->locks, row, 1);
        for (uint64_t lo = 0; lo < chunk && !ret; lo += q.p->win) {
            uint64_t hi = lo + q.p->win < chunk ? lo + q.p->win : chunk;
            /* A degraded stripe has no redundancy left to compare (raid6 with one slot gone
             * could still check, but a rebuild is what that stripe needs). */
            if (r5_blk_readable(r, &g, moff + lo, hi - lo) != all)
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
            int m = r5_scrub_window(&q, &g, lo, hi, repair);
            if (m)
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
