/* The generic RAID engine: the rk_dev of an array (open, close, flush), its slot states and
 * member failures, and the public rk_raid_* functions of an open array. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "raid/raid_int.h"
#include "raid/badrange.h"
#include "raid/bitmap.h"
#include "raid/job.h"
#include "raid/rangelock.h"

/*
 * The engine names no level: a request goes to the level's rw hook (raid_copies_rw for the
 * copy levels, the parity levels' own), the layout comes from the level registry (geom.c). Slot
 * states are atomics and the data path takes no engine lock; fail_lock only serialises
 * rk_raid_fail_slot's "would this lose data" check against itself. Member failures are recorded
 * by fail.c. The lock order is written down in raid_int.h.
 */

static int raid_read(struct rk_dev *dev, void *buf, uint64_t len, uint64_t off)
{
    struct raid_priv *r = dev->priv;
    return r->l.lvl->rw(r, RK_OP_READ, buf, len, off, 0);
}

/* Every request that changes member data (write, write-zeroes, discard): refused once a failure
 * could not be recorded; the write-intent bitmap's bits for the regions it touches are durable
 * before the level sends anything to a member (bitmap.h); completed by raid_fail_settle. */
static int raid_rw_change(struct raid_priv *r, enum rk_op op, char *buf, uint64_t len, uint64_t off,
                          uint32_t flags)
{
    if (atomic_load(&r->writes_stopped))
        return -EIO;
    struct raid_bm_hold h;
    int ret = raid_bitmap_begin(r, off, len, &h);
    if (ret)
        return ret;
    ret = r->l.lvl->rw(r, op, buf, len, off, flags);
    raid_bitmap_end(r, &h);
    return raid_fail_settle(r, ret);
}

static int raid_write(struct rk_dev *dev, const void *buf, uint64_t len, uint64_t off,
                      uint32_t flags)
{
    /* Member writes only read the buffer; rk_io has one non-const pointer for both ways. */
    struct raid_priv *r = dev->priv;
    return raid_rw_change(r, RK_OP_WRITE, (char *)buf, len, off, flags);
}

static int raid_discard(struct rk_dev *dev, uint64_t len, uint64_t off)
{
    struct raid_priv *r = dev->priv;
    return raid_rw_change(r, RK_OP_DISCARD, NULL, len, off, 0);
}

static int raid_write_zeroes(struct rk_dev *dev, uint64_t len, uint64_t off, uint32_t flags)
{
    struct raid_priv *r = dev->priv;
    return raid_rw_change(r, RK_OP_WRITE_ZEROES, NULL, len, off, flags);
}

/* Flush every writable member in parallel; a member that cannot flush is failed like one that
 * cannot write, and the flush fails when the remaining slots no longer hold all data. A flush
 * that skipped or lost a FAILED slot completes only once that failure is recorded
 * (raid_fail_settle), and fails with -EIO when it could not be. */
static int raid_flush(struct rk_dev *dev)
{
    struct raid_priv *r = dev->priv;
    if (atomic_load(&r->writes_stopped))
        return -EIO;
    /* Writes the level holds (raid5/6 stripe gathering) reach the members first. */
    int held = r->l.lvl->drain ? r->l.lvl->drain(r, 0, UINT64_MAX) : 0;
    uint64_t mark[RK_MAX_MEMBERS];
    if (r->l.lvl->flush_begin)
        r->l.lvl->flush_begin(r, mark);
    int ret = raid_fail_settle(r, raid_members_round(r, RK_OP_FLUSH, NULL, 0, 0, 0));
    if (!ret && r->l.lvl->flush_end)
        r->l.lvl->flush_end(r, mark);
    return ret ? ret : held;
}

/* Free r and what it holds: stop a running job first, then the level's state (a no-op unless
 * its open() ran) and the management state. */
static void raid_priv_free(struct raid_priv *r)
{
    raid_job_destroy(r);
    raid_bitmap_destroy(r);
    if (r->l.lvl && r->l.lvl->close)
        r->l.lvl->close(r);
    raid_badtab_destroy(r);
    raid_rangelock_destroy(r);
    pthread_mutex_destroy(&r->fail_lock);
    pthread_mutex_destroy(&r->rec_lock);
    pthread_cond_destroy(&r->rec_cond);
    free(r);
}

static void raid_close(struct rk_dev *dev)
{
    struct raid_priv *r = dev->priv;
    if (r && r->l.lvl->drain)
        r->l.lvl->drain(r, 0,
                        UINT64_MAX); /* held writes reach the members while everything still runs */
    if (r)
        raid_priv_free(r);
}

const struct rk_dev_ops raid_dev_ops = {
    .kind = "raid",
    .read = raid_read,
    .write = raid_write,
    .flush = raid_flush,
    .discard = raid_discard,
    .write_zeroes = raid_write_zeroes,
    .close = raid_close,
    .map = raid_alloc_map,
    .zero_fast = raid_alloc_zero_fast,
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
    pthread_mutex_init(&r->rec_lock, NULL);
    pthread_cond_init(&r->rec_cond, NULL);
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
    ret = raid_rangelock_init(r);
    if (!ret)
        ret = raid_badtab_init(r);
    if (!ret)
        ret = raid_job_init(r);
    if (ret)
        goto out;
    if (r->l.lvl->open) {
        ret = r->l.lvl->open(r);
        if (ret)
            goto out;
    }
    dev = rk_dev_alloc(&raid_dev_ops, r, r->l.lvl->name);
    if (!dev) {
        ret = -ENOMEM;
        goto out;
    }
    dev->size = r->l.size;
    dev->block_size = bs;
    dev->opt_io_size = g->chunk;
    dev->direct = direct;
    *out = dev;
    return 0;
out:
    raid_priv_free(r);
    return ret;
}

int rk_raid_log_start(struct rk_dev *raid, int mode)
{
    struct raid_priv *r = raid_priv_of(raid);
    if (!r)
        return -EINVAL;
    return r->l.lvl->log_start ? r->l.lvl->log_start(r, mode) : 0;
}

int rk_raid_distrust_unsynced(struct rk_dev *raid)
{
    struct raid_priv *r = raid_priv_of(raid);
    if (!r)
        return -EINVAL;
    r->distrust_unsynced = true;
    return 0;
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
        refuse = !r->l.lvl->survives(&r->l, raid_slot_mask(r, RAID_STATES_READ) & ~(1u << slot));
        do_fail = !refuse;
    }
    pthread_mutex_unlock(&r->fail_lock);
    if (refuse)
        return -EBUSY;
    return do_fail ? raid_fail(r, slot, 0) : 0;
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
