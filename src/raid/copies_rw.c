/* The request path of the copy levels (linear, raid0, raid1, raid10): split each request at
 * the level's map() runs, issue the member I/O of a round in parallel, repair read errors from
 * another copy and fail the slots whose writes fail. */
#include <errno.h>
#include <string.h>

#include "core/util.h"
#include "raid/badrange.h"
#include "raid/bitmap.h"
#include "raid/copies.h"
#include "raid/rangelock.h"

/*
 * Request flow:
 *
 *   rk_dev_read/write(raid) -> raid_dev_ops -> lvl->rw = raid_copies_rw
 *     -> walk the request with the level's map(), one piece per chunk/zone run
 *        -> reads: one live copy per piece (least busy); writes: every live copy
 *        -> member rk_io on the stack, adjacent pieces on one slot merged, <= RAID_ROUND_IOS
 *           per round, submitted together and waited for with one rk_io_batch
 *     -> after each round: read errors are repaired from another copy, write errors fail the
 *        slot (member_failed callback) and the request fails only if a piece reached no copy.
 *
 * Slot states are atomics and the data path takes no engine lock; while a background job runs,
 * writes hold the range lock of the member range they touch (raid_write_begin).
 */

/* Member rk_io per round: bounded stack use and no allocation on the data path. */
#define RAID_ROUND_IOS 64

/* One round of member I/O built on the caller's stack (the read-balancing fields live for the
 * whole request). */
struct raid_round {
    int nio;
    struct rk_io io[RAID_ROUND_IOS];
    uint64_t aoff[RAID_ROUND_IOS];         /* array offset of each io's first byte (reads) */
    uint32_t slot[RAID_ROUND_IOS];         /* slot of each io */
    int last[RK_MAX_MEMBERS];              /* index of the slot's latest io, -1 = none */
    uint32_t picked[RK_MAX_MEMBERS];       /* read pieces given to each slot */
    uint64_t picked_bytes[RK_MAX_MEMBERS]; /* read bytes given to each slot */
    int prev_slot;                         /* slot of the previous read piece, -1 = none */
    uint64_t share;                        /* read bytes one copy should take (0 = no limit) */
};

/* Does a copy of the piece lie in a region the resync has not reached? */
static bool raid_copies_unsynced(struct raid_priv *r, const struct rk_raid_extent *c, int n,
                                 uint64_t len)
{
    for (int i = 0; i < n; i++)
        if (raid_bitmap_unsynced(r, c[i].member_off, len))
            return true;
    return false;
}

/*
 * Choose a copy of a piece of len bytes to read among the usable slots. A large read is cut
 * into one contiguous share per copy (sequential on each member, all members busy), so the
 * previous piece's slot is kept until it has its share; otherwise the least busy copy wins
 * (member inflight plus pieces this request already gave it), ties round robin.
 * Returns the index in c or -1.
 */
static int raid_pick(struct raid_priv *r, const struct raid_round *rd,
                     const struct rk_raid_extent *c, int n, uint32_t usable, uint64_t len)
{
    int best = -1;
    int64_t best_load = 0;
    /* Not resynced yet: every read takes the copy the resync copies from (the first live copy
     * in slot order), so two reads never disagree. */
    if (raid_bitmap_resyncing(r) && raid_copies_unsynced(r, c, n, len)) {
        for (int i = 0; i < n; i++)
            if ((usable & (1u << c[i].slot)) && !raid_bad_hit(r, c[i].slot, c[i].member_off, len) &&
                (best < 0 || c[i].slot < c[best].slot))
                best = i;
        return best;
    }
    if (rd && rd->prev_slot >= 0 && (usable & (1u << rd->prev_slot)) &&
        rd->picked_bytes[rd->prev_slot] + len <= rd->share) {
        for (int i = 0; i < n; i++)
            if (c[i].slot == (uint32_t)rd->prev_slot &&
                !raid_bad_hit(r, c[i].slot, c[i].member_off, len))
                return i;
    }
    uint32_t start = n > 1 ? atomic_fetch_add_explicit(&r->rr, 1, memory_order_relaxed) : 0;
    for (int k = 0; k < n; k++) {
        int i = (int)((start + (uint32_t)k) % (uint32_t)n);
        uint32_t s = c[i].slot;
        if (!(usable & (1u << s)))
            continue;
        /* Ranges a rebuild could not reconstruct hold no data on that slot. */
        if (raid_bad_hit(r, s, c[i].member_off, len))
            continue;
        int64_t load = atomic_load_explicit(&r->members[s]->inflight, memory_order_relaxed);
        if (rd)
            load += rd->picked[s];
        if (best < 0 || load < best_load) {
            best = i;
            best_load = load;
        }
    }
    return best;
}

/* Start a round; with request set, also reset the per-request read balancing. */
static void raid_round_init(struct raid_round *rd, bool request)
{
    rd->nio = 0;
    for (int i = 0; i < RK_MAX_MEMBERS; i++)
        rd->last[i] = -1;
    if (!request)
        return;
    memset(rd->picked, 0, sizeof(rd->picked));
    memset(rd->picked_bytes, 0, sizeof(rd->picked_bytes));
    rd->prev_slot = -1;
    rd->share = 0;
}

/* Add one piece for slot to the round, merged into the slot's previous io when it continues it
 * on the member and (for data ops) in the buffer. The caller checked there is room. */
static void raid_round_add(struct raid_priv *r, struct raid_round *rd, enum rk_op op,
                           uint32_t flags, uint32_t slot, uint64_t moff, char *buf, uint64_t len,
                           uint64_t aoff)
{
    uint64_t doff = r->l.g.data_offset + moff;
    int i = rd->last[slot];
    if (i >= 0) {
        struct rk_io *prev = &rd->io[i];
        if (prev->off + prev->len == doff && (!buf || (char *)prev->buf + prev->len == buf)) {
            prev->len += len;
            return;
        }
    }
    i = rd->nio++;
    rk_io_init(&rd->io[i], r->members[slot], op, buf, len, doff, flags);
    rd->aoff[i] = aoff;
    rd->slot[i] = slot;
    rd->last[slot] = i;
}

/*
 * A member read failed for array range [aoff, aoff+len) (buffer buf) on bad_slot: read each
 * piece from another copy, then write the good data back over every copy that failed to read.
 * A failed rewrite fails that slot. Returns 0 when all data was recovered, else -EIO.
 */
static int raid_read_repair(struct raid_priv *r, uint32_t bad_slot, char *buf, uint64_t len,
                            uint64_t aoff)
{
    const struct raid_layout *l = &r->l;
    struct rk_raid_extent c[RK_MAX_MEMBERS];
    int ret = 0;
    while (len) {
        uint64_t run;
        int n = l->lvl->map(l, aoff, c, RK_MAX_MEMBERS, &run);
        uint64_t piece = run < len ? run : len;
        uint32_t tried = 1u << bad_slot, bad = 1u << bad_slot;
        bool good = false;
        for (;;) {
            int i = raid_pick(r, NULL, c, n, raid_slot_mask(r, RAID_STATES_READ) & ~tried, piece);
            if (i < 0)
                break;
            uint32_t s = c[i].slot;
            tried |= 1u << s;
            if (!rk_dev_read(r->members[s], buf, piece, l->g.data_offset + c[i].member_off)) {
                good = true;
                break;
            }
            bad |= 1u << s;
        }
        if (!good) {
            /* No copy left to repair from: the data is lost for this range, not the slot. */
            ret = -EIO;
        } else {
            for (int i = 0; i < n; i++) {
                uint32_t s = c[i].slot;
                if (!(bad & (1u << s)) || atomic_load(&r->state[s]) != RK_SLOT_ACTIVE)
                    continue;
                int w =
                    rk_dev_write(r->members[s], buf, piece, l->g.data_offset + c[i].member_off, 0);
                if (w) {
                    raid_fail(r, s, w);
                } else {
                    rk_info("raid: repaired %llu bytes at array offset %llu on slot %u",
                            (unsigned long long)piece, (unsigned long long)aoff, s);
                }
            }
        }
        buf += piece;
        aoff += piece;
        len -= piece;
    }
    return ret;
}

/* After a write round over array range [start, end): does every piece have a copy on a slot in
 * ok (written successfully)? */
static bool raid_range_written(struct raid_priv *r, uint64_t start, uint64_t end, uint32_t ok)
{
    const struct raid_layout *l = &r->l;
    struct rk_raid_extent c[RK_MAX_MEMBERS];
    /* A copy on a slot still being rebuilt cannot be read back: it does not count. */
    ok &= raid_slot_mask(r, RAID_STATES_READ);
    while (start < end) {
        uint64_t run;
        int n = l->lvl->map(l, start, c, RK_MAX_MEMBERS, &run);
        bool any = false;
        for (int i = 0; i < n; i++)
            any |= (ok & (1u << c[i].slot)) != 0;
        if (!any)
            return false;
        start += run < end - start ? run : end - start;
    }
    return true;
}

/* Each copy's share of a large read at array range [off, off+len): the request split evenly
 * over the usable copies of its first chunk, in whole chunks (0 = no limit). */
static uint64_t copies_read_share(struct raid_priv *r, uint64_t len, uint64_t off)
{
    const struct raid_layout *l = &r->l;
    struct rk_raid_extent c[RK_MAX_MEMBERS];
    uint64_t run;
    uint32_t usable = raid_slot_mask(r, RAID_STATES_READ), copies = 0;
    int n = l->lvl->map(l, off, c, RK_MAX_MEMBERS, &run);
    for (int i = 0; i < n; i++)
        copies += (usable >> c[i].slot) & 1;
    if (copies <= 1)
        return 0;
    uint64_t per = (len + copies - 1) / copies;
    return (per + l->g.chunk - 1) / l->g.chunk * l->g.chunk;
}

/* Fill round rd from the request at *off (*len bytes left, *buf NULL for ops without data),
 * reads from one copy in usable, writes to every copy in usable, until the request or the
 * round's room ends; advances *off, *len, *buf. Returns -EIO when a read piece had no usable
 * copy (the rest is still read), else 0. */
static int copies_round_fill(struct raid_priv *r, struct raid_round *rd, enum rk_op op,
                             uint32_t flags, uint32_t usable, char **buf, uint64_t *len,
                             uint64_t *off)
{
    const struct raid_layout *l = &r->l;
    struct rk_raid_extent c[RK_MAX_MEMBERS];
    bool is_read = op == RK_OP_READ;
    int ret = 0;
    while (*len) {
        uint64_t run;
        int n = l->lvl->map(l, *off, c, RK_MAX_MEMBERS, &run);
        uint64_t piece = run < *len ? run : *len;
        if (rd->nio + (is_read ? 1 : n) > RAID_ROUND_IOS)
            break;
        if (is_read) {
            int i = raid_pick(r, rd, c, n, usable, piece);
            if (i < 0) {
                ret = -EIO;
            } else {
                rd->picked[c[i].slot]++;
                rd->picked_bytes[c[i].slot] += piece;
                rd->prev_slot = (int)c[i].slot;
                raid_round_add(r, rd, op, flags, c[i].slot, c[i].member_off, *buf, piece, *off);
            }
        } else {
            for (int i = 0; i < n; i++)
                if (usable & (1u << c[i].slot))
                    raid_round_add(r, rd, op, flags, c[i].slot, c[i].member_off, *buf, piece, *off);
        }
        *off += piece;
        *len -= piece;
        if (*buf)
            *buf += piece;
    }
    return ret;
}

/* After round rd over array range [start, end) ran with errs member errors: repair the failed
 * reads, fail the slots whose write failed. Returns -EIO when data was lost (a read that no copy
 * could serve, a piece that reached no live copy), else 0. */
static int copies_round_check(struct raid_priv *r, struct raid_round *rd, enum rk_op op,
                              uint32_t usable, int errs, uint64_t start, uint64_t end)
{
    bool is_read = op == RK_OP_READ;
    int ret = 0;
    /* Discard is advisory (old data or zeros may be read back either way): a member that
     * cannot discard keeps its data, which fails neither the request nor the slot. */
    if (errs == 0 || op == RK_OP_DISCARD) {
        if (!is_read && usable != raid_all_mask(r->l.g.members) &&
            !raid_range_written(r, start, end, usable))
            ret = -EIO; /* some piece had no live copy at all */
        return ret;
    }
    uint32_t failed = 0;
    for (int i = 0; i < rd->nio; i++) {
        struct rk_io *io = &rd->io[i];
        if (!io->result)
            continue;
        if (is_read) {
            if (raid_read_repair(r, rd->slot[i], io->buf, io->len, rd->aoff[i]))
                ret = -EIO;
        } else {
            failed |= 1u << rd->slot[i];
            raid_fail(r, rd->slot[i], io->result);
        }
    }
    if (!is_read && !raid_range_written(r, start, end, usable & ~failed))
        ret = -EIO;
    return ret;
}

int raid_copies_rw(struct raid_priv *r, enum rk_op op, char *buf, uint64_t len, uint64_t off,
                   uint32_t flags)
{
    struct raid_round rd;
    struct rk_io_batch batch;
    bool is_read = op == RK_OP_READ;
    int ret = 0;
    /* Writes exclude rebuild/scrub steps over the same member range (rangelock.h). */
    struct raid_range lk;
    bool locked = !is_read && raid_write_begin(r, &lk, off, len);

    rk_io_batch_init(&batch);
    raid_round_init(&rd, true);
    if (is_read)
        rd.share = copies_read_share(r, len, off);
    while (len) {
        raid_round_init(&rd, false);
        uint32_t usable = raid_slot_mask(r, is_read ? RAID_STATES_READ : RAID_STATES_WRITE);
        uint64_t round_start = off;
        if (copies_round_fill(r, &rd, op, flags, usable, &buf, &len, &off))
            ret = -EIO;
        int errs = rk_io_run(&batch, rd.io, rd.nio);
        if (copies_round_check(r, &rd, op, usable, errs, round_start, off))
            ret = -EIO;
    }
    rk_io_batch_destroy(&batch);
    if (!is_read)
        raid_write_end(r, &lk, locked);
    return ret;
}
