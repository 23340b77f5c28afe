/* raid5 and raid6 reads: healthy reads straight from the data chunks (no lock), degraded reads
 * by parity recovery under the stripe lock with a repair write over a failed read, and the
 * window recovery that the rebuild and scrub hooks reuse. */
#include <errno.h>
#include <string.h>

#include "core/util.h"
#include "raid/raid5_int.h"
#include "raid/badrange.h"
#include "raid/bitmap.h"

int r5_recover_window(struct r5_req *q, const struct r5_geo *g, uint64_t lo, uint64_t hi,
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
        if (r5_recover_blocks(q, g, len, missing))
            return -EIO;
        if (bad_out)
            *bad_out = bad;
        return 0;
    }
}

void r5_repair(struct r5_req *q, const struct r5_geo *g, uint64_t lo, uint64_t hi, uint32_t bad)
{
    struct r5_ios v = {.n = 0};
    uint64_t moff = g->row * q->r->l.g.chunk + lo;
    uint32_t rd = raid_slot_mask(q->r, RAID_STATES_READ);
    for (uint32_t b = 0; b < g->n; b++)
        if ((bad & (1u << b)) && (rd & (1u << g->slot[b])))
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

bool r5_row_suspect(const struct r5_priv *p, uint64_t row)
{
    if (p->suspect_all)
        return true;
    for (size_t i = 0; i < p->nsuspect; i++)
        if (row >= p->suspect[i].row && row - p->suspect[i].row < p->suspect[i].nrows)
            return true;
    return false;
}

/* Read array range [off, off+len) of one data chunk through parity recovery; with bad_slot set
 * (a read error there), the recovered data is written back over the bad slot. A stripe whose
 * parity a read-only start could not vouch for (r5_row_suspect; an unsynced region after
 * rk_raid_distrust_unsynced) is not recovered: -EIO. */
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

    if (r5_row_suspect(q->p, row) ||
        (q->r->distrust_unsynced && raid_bitmap_unsynced(q->r, row * chunk, chunk))) {
        if (!atomic_exchange(&q->p->suspect_said, true))
            rk_warn("raid: stripe %llu: a read needs its parity, which may be torn or stale "
                    "(the array was not shut down cleanly, and a read-only start neither "
                    "replays its partial parity log nor resyncs): I/O error, for this and "
                    "every such read; a writable start makes the parity consistent",
                    (unsigned long long)row);
        return -EIO;
    }
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

/* One data-chunk piece of a read round. */
struct r5_piece {
    char *buf;
    uint64_t off, len;
    uint32_t slot;
    int io; /* index in the round's ios, -1 = slot not readable */
};

int r5_read(struct r5_req *q, char *buf, uint64_t len, uint64_t off)
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
            *p = (struct r5_piece){.buf = buf, .off = off, .len = n, .slot = e.slot, .io = -1};
            uint32_t rd = raid_slot_mask(r, RAID_STATES_READ);
            if ((rd & (1u << e.slot)) && !raid_bad_hit(r, e.slot, e.member_off, n)) {
                rk_io_init(&io[nio], r->members[e.slot], RK_OP_READ, buf, n,
                           l->g.data_offset + e.member_off, 0);
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
