/* The generic RAID engine: an rk_dev over member devices that splits each request at chunk and
 * zone boundaries, issues the member I/O in parallel and handles member failures and repairs. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "raid/raid_int.h"
#include "raid/rangelock.h"

/*
 * Request flow (linear, raid0, raid1, raid10 — every level whose data has 1..n plain copies):
 *
 *   rk_dev_read/write(raid)
 *     -> raid_rw: walk the request with the level's map(), one piece per chunk/zone run
 *        -> reads: one live copy per piece (least busy); writes: every live copy
 *        -> member rk_io on the stack, adjacent pieces on one slot merged, <= RAID_ROUND_IOS
 *           per round, submitted together and waited for with one rk_io_batch
 *     -> after each round: read errors are repaired from another copy, write errors fail the
 *        slot (member_failed callback) and the request fails only if a piece reached no copy.
 *
 * Locking: slot states are atomics and the data path takes no engine lock. fail_lock only
 * serialises rk_raid_fail_slot's "would this lose data" check against itself.
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

static const struct rk_dev_ops raid_ops;

static struct raid_priv *raid_priv_of(struct rk_dev *dev)
{
    return dev && dev->ops == &raid_ops ? dev->priv : NULL;
}

/* Slots that serve reads (ACTIVE). */
static uint32_t raid_read_mask(struct raid_priv *r)
{
    uint32_t m = 0;
    for (uint32_t i = 0; i < r->l.g.members; i++)
        if (atomic_load(&r->state[i]) == RK_SLOT_ACTIVE)
            m |= 1u << i;
    return m;
}

/* Slots that take writes: ACTIVE, and REBUILDING once rebuild exists (it must see new data). */
static uint32_t raid_write_mask(struct raid_priv *r)
{
    uint32_t m = 0;
    for (uint32_t i = 0; i < r->l.g.members; i++) {
        int s = atomic_load(&r->state[i]);
        if (s == RK_SLOT_ACTIVE || s == RK_SLOT_REBUILDING)
            m |= 1u << i;
    }
    return m;
}

/* Move slot to FAILED; the thread that makes the transition runs the callback (so it runs
 * once per slot). error 0 means an administrator asked (rk_raid_fail_slot). Caller holds no
 * engine lock. */
void raid_fail(struct raid_priv *r, uint32_t slot, int error)
{
    int s = atomic_load(&r->state[slot]);
    do {
        if (s == RK_SLOT_FAILED || s == RK_SLOT_MISSING)
            return;
    } while (!atomic_compare_exchange_weak(&r->state[slot], &s, RK_SLOT_FAILED));
    if (error)
        rk_warn("raid: slot %u (%s) failed: %s", slot, r->members[slot]->name, strerror(-error));
    else
        rk_warn("raid: slot %u (%s) marked failed on request", slot, r->members[slot]->name);
    if (r->ev.member_failed)
        r->ev.member_failed(r->ev.ctx, slot, error);
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
    struct rk_io *io = &rd->io[i];
    memset(io, 0, sizeof(*io));
    io->dev = r->members[slot];
    io->op = op;
    io->flags = flags;
    io->buf = buf;
    io->len = len;
    io->off = doff;
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
            int i = raid_pick(r, NULL, c, n, raid_read_mask(r) & ~tried, piece);
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
    ok &= raid_read_mask(r);
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

/* Read, write, discard or write-zeroes of array range [off, off+len) (validated). */
static int raid_rw(struct raid_priv *r, enum rk_op op, char *buf, uint64_t len, uint64_t off,
                   uint32_t flags)
{
    const struct raid_layout *l = &r->l;
    struct raid_round rd;
    struct rk_io_batch batch;
    struct rk_raid_extent c[RK_MAX_MEMBERS];
    bool is_read = op == RK_OP_READ;
    int ret = 0;
    /* Writes exclude rebuild/scrub steps over the same member range (rangelock.h). */
    struct raid_range lk;
    bool locked = !is_read && raid_write_begin(r, &lk, off, len);

    rk_io_batch_init(&batch);
    raid_round_init(&rd, true);
    if (is_read) {
        /* Each copy's share of a large read: the request split evenly over the usable copies
         * of its first chunk, in whole chunks. */
        uint64_t run;
        uint32_t usable = raid_read_mask(r), copies = 0;
        int n = l->lvl->map(l, off, c, RK_MAX_MEMBERS, &run);
        for (int i = 0; i < n; i++)
            copies += (usable >> c[i].slot) & 1;
        if (copies > 1) {
            uint64_t per = (len + copies - 1) / copies;
            rd.share = (per + l->g.chunk - 1) / l->g.chunk * l->g.chunk;
        }
    }
    while (len) {
        raid_round_init(&rd, false);
        uint32_t usable = is_read ? raid_read_mask(r) : raid_write_mask(r);
        uint64_t round_start = off;
        while (len) {
            uint64_t run;
            int n = l->lvl->map(l, off, c, RK_MAX_MEMBERS, &run);
            uint64_t piece = run < len ? run : len;
            if (rd.nio + (is_read ? 1 : n) > RAID_ROUND_IOS)
                break;
            if (is_read) {
                int i = raid_pick(r, &rd, c, n, usable, piece);
                if (i < 0) {
                    ret = -EIO;
                } else {
                    rd.picked[c[i].slot]++;
                    rd.picked_bytes[c[i].slot] += piece;
                    rd.prev_slot = (int)c[i].slot;
                    raid_round_add(r, &rd, op, flags, c[i].slot, c[i].member_off, buf, piece, off);
                }
            } else {
                for (int i = 0; i < n; i++)
                    if (usable & (1u << c[i].slot))
                        raid_round_add(r, &rd, op, flags, c[i].slot, c[i].member_off, buf, piece,
                                       off);
            }
            off += piece;
            len -= piece;
            if (buf)
                buf += piece;
        }

        int errs = rk_io_run(&batch, rd.io, rd.nio);
        /* Discard is advisory (old data or zeros may be read back either way): a member that
         * cannot discard keeps its data, which fails neither the request nor the slot. */
        if (errs == 0 || op == RK_OP_DISCARD) {
            if (!is_read && usable != raid_all_mask(l->g.members) &&
                !raid_range_written(r, round_start, off, usable))
                ret = -EIO; /* some piece had no live copy at all */
            continue;
        }

        uint32_t failed = 0;
        for (int i = 0; i < rd.nio; i++) {
            struct rk_io *io = &rd.io[i];
            if (!io->result)
                continue;
            if (is_read) {
                if (raid_read_repair(r, rd.slot[i], io->buf, io->len, rd.aoff[i]))
                    ret = -EIO;
            } else {
                failed |= 1u << rd.slot[i];
                raid_fail(r, rd.slot[i], io->result);
            }
        }
        if (!is_read && !raid_range_written(r, round_start, off, usable & ~failed))
            ret = -EIO;
    }
    rk_io_batch_destroy(&batch);
    if (!is_read)
        raid_write_end(r, &lk, locked);
    return ret;
}

static int raid_read(struct rk_dev *dev, void *buf, uint64_t len, uint64_t off)
{
    struct raid_priv *r = dev->priv;
    if (r->l.lvl->rw)
        return r->l.lvl->rw(r, RK_OP_READ, buf, len, off, 0);
    return raid_rw(r, RK_OP_READ, buf, len, off, 0);
}

static int raid_write(struct rk_dev *dev, const void *buf, uint64_t len, uint64_t off,
                      uint32_t flags)
{
    /* Member writes only read the buffer; rk_io has one non-const pointer for both ways. */
    struct raid_priv *r = dev->priv;
    if (r->l.lvl->rw)
        return r->l.lvl->rw(r, RK_OP_WRITE, (char *)buf, len, off, flags);
    return raid_rw(r, RK_OP_WRITE, (char *)buf, len, off, flags);
}

static int raid_discard(struct rk_dev *dev, uint64_t len, uint64_t off)
{
    struct raid_priv *r = dev->priv;
    if (r->l.lvl->rw)
        return r->l.lvl->rw(r, RK_OP_DISCARD, NULL, len, off, 0);
    return raid_rw(r, RK_OP_DISCARD, NULL, len, off, 0);
}

static int raid_write_zeroes(struct rk_dev *dev, uint64_t len, uint64_t off, uint32_t flags)
{
    struct raid_priv *r = dev->priv;
    if (r->l.lvl->rw)
        return r->l.lvl->rw(r, RK_OP_WRITE_ZEROES, NULL, len, off, flags);
    return raid_rw(r, RK_OP_WRITE_ZEROES, NULL, len, off, flags);
}

/* Flush every writable member in parallel; a member that cannot flush is failed like one that
 * cannot write, and the flush fails only when the remaining slots no longer hold all data. */
static int raid_flush(struct rk_dev *dev)
{
    struct raid_priv *r = dev->priv;
    struct rk_io io[RK_MAX_MEMBERS];
    uint32_t slot[RK_MAX_MEMBERS];
    struct rk_io_batch batch;
    uint32_t usable = raid_write_mask(r), failed = 0;
    int n = 0;

    rk_io_batch_init(&batch);
    for (uint32_t i = 0; i < r->l.g.members; i++) {
        if (!(usable & (1u << i)))
            continue;
        memset(&io[n], 0, sizeof(io[n]));
        io[n].dev = r->members[i];
        io[n].op = RK_OP_FLUSH;
        slot[n++] = i;
    }
    if (rk_io_run(&batch, io, n)) {
        for (int i = 0; i < n; i++) {
            if (io[i].result) {
                failed |= 1u << slot[i];
                raid_fail(r, slot[i], io[i].result);
            }
        }
    }
    rk_io_batch_destroy(&batch);
    return r->l.lvl->survives(&r->l, usable & ~failed) ? 0 : -EIO;
}

static void raid_close(struct rk_dev *dev)
{
    struct raid_priv *r = dev->priv;
    if (!r)
        return;
    raid_mgmt_destroy(r); /* stops a running rebuild/scrub first */
    if (r->l.lvl->close)
        r->l.lvl->close(r);
    pthread_mutex_destroy(&r->fail_lock);
    free(r);
}

static const struct rk_dev_ops raid_ops = {
    .kind = "raid",
    .read = raid_read,
    .write = raid_write,
    .flush = raid_flush,
    .discard = raid_discard,
    .write_zeroes = raid_write_zeroes,
    .close = raid_close,
};

int rk_raid_open(const struct rk_raid_geom *g, struct rk_dev *const *members,
                 const struct rk_raid_events *ev, struct rk_dev **out)
{
    struct raid_priv *r = NULL;
    struct rk_dev *dev = NULL;
    uint32_t present = 0, bs = 512;
    bool direct = false;
    int ret;

    if (!g || !members || !out)
        return -EINVAL;
    r = calloc(1, sizeof(*r));
    if (!r)
        return -ENOMEM;
    pthread_mutex_init(&r->fail_lock, NULL);
    ret = raid_layout_init(&r->l, g);
    if (ret)
        goto out;
    for (uint32_t i = 0; i < g->members; i++) {
        struct rk_dev *m = members[i];
        r->members[i] = m;
        if (!m) {
            atomic_init(&r->state[i], RK_SLOT_MISSING);
            continue;
        }
        /* The member must hold its whole data area, block aligned. */
        if (m->size < g->data_offset || m->size - g->data_offset < g->data_size[i] ||
            g->data_offset % m->block_size) {
            rk_err("raid: slot %u (%s): %llu bytes cannot hold data area %llu+%llu", i, m->name,
                   (unsigned long long)m->size, (unsigned long long)g->data_offset,
                   (unsigned long long)g->data_size[i]);
            ret = -EINVAL;
            goto out;
        }
        atomic_init(&r->state[i], RK_SLOT_ACTIVE);
        present |= 1u << i;
        if (m->block_size > bs)
            bs = m->block_size;
        direct |= m->direct;
    }
    if (!r->l.lvl->survives(&r->l, present)) {
        ret = -ENODEV;
        goto out;
    }
    if (ev)
        r->ev = *ev;
    if (r->l.lvl->open) {
        ret = r->l.lvl->open(r);
        if (ret)
            goto out;
    }
    dev = rk_dev_alloc(&raid_ops, r, r->l.lvl->name);
    if (!dev) {
        ret = -ENOMEM;
        goto out;
    }
    dev->size = r->l.size;
    dev->block_size = bs;
    dev->opt_io_size = g->chunk;
    dev->direct = direct;
    ret = raid_mgmt_init(r, dev);
    if (ret)
        goto out;
    *out = dev;
    return 0;
out:
    if (dev) {
        dev->priv = NULL;
        rk_dev_close(dev);
    }
    if (r->l.lvl && r->l.lvl->close)
        r->l.lvl->close(r); /* a no-op unless open() ran */
    pthread_mutex_destroy(&r->fail_lock);
    free(r);
    return ret;
}

int rk_raid_slot_state(struct rk_dev *raid, uint32_t slot)
{
    struct raid_priv *r = raid_priv_of(raid);
    if (!r || slot >= r->l.g.members)
        return -EINVAL;
    return atomic_load(&r->state[slot]);
}

int rk_raid_fail_slot(struct rk_dev *raid, uint32_t slot)
{
    struct raid_priv *r = raid_priv_of(raid);
    if (!r || slot >= r->l.g.members)
        return -EINVAL;
    pthread_mutex_lock(&r->fail_lock);
    int s = atomic_load(&r->state[slot]);
    bool refuse = false, do_fail = false;
    if (s != RK_SLOT_FAILED && s != RK_SLOT_MISSING) {
        /* Only slots that hold data count: a rebuilding slot is not yet a full copy. */
        refuse = !r->l.lvl->survives(&r->l, raid_read_mask(r) & ~(1u << slot));
        do_fail = !refuse;
    }
    pthread_mutex_unlock(&r->fail_lock);
    if (refuse)
        return -EBUSY;
    if (do_fail)
        raid_fail(r, slot, 0);
    return 0;
}

const struct rk_raid_geom *rk_raid_geometry(struct rk_dev *raid)
{
    struct raid_priv *r = raid_priv_of(raid);
    return r ? &r->l.g : NULL;
}

struct rk_dev *rk_raid_member(struct rk_dev *raid, uint32_t slot)
{
    struct raid_priv *r = raid_priv_of(raid);
    return r && slot < r->l.g.members ? r->members[slot] : NULL;
}
