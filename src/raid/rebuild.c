/* The rebuild job (job.h): walk a REBUILDING slot's data area in steps, reconstruct each from the
 * other slots and write it, checkpoint; and the slot replacement that precedes it
 * (rk_raid_add_member). */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "raid/badrange.h"
#include "raid/bitmap.h"
#include "raid/job.h"

#define MiB (1024ull * 1024ull)
/* Consecutive unreadable bytes after which the sources count as gone. */
#define REBUILD_MAX_BAD_RUN (4 * MiB)

struct rebuild_ctx {
    uint32_t slot;
    bool readd;        /* re-add: only regions whose bitmap bit is set */
    uint64_t resynced; /* bytes reconstructed and written so far */
    uint64_t bad_run;  /* unreadable bytes since the last step that reconstructed something */
    int fail_err;      /* a step's error that fails the slot when the job ends */
    char *buf;         /* one step */
};

/* Reconstruct and write one step; unreadable chunks are recorded and skipped (their bytes
 * added to *bad). Returns 0, -ENODEV (no source left), -EIO (too many bad ranges to track) or
 * the target's write error. */
static int rebuild_chunks(struct raid_priv *r, uint32_t slot, uint64_t pos, uint64_t len, char *buf,
                          uint64_t *bad)
{
    const struct raid_level *lvl = r->l.lvl;
    struct rk_dev *dst = r->members[slot];
    uint64_t doff = r->l.g.data_offset, chunk = r->l.g.chunk;
    int rc = lvl->reconstruct(r, slot, pos, len, buf);
    if (!rc)
        return rk_dev_write(dst, buf, len, doff + pos, 0);
    if (rc != -EIO)
        return rc;
    /* Narrow the failure down to chunks: the rest of the step is still rebuilt. */
    for (uint64_t o = pos; o < pos + len; o += chunk) {
        rc = lvl->reconstruct(r, slot, o, chunk, buf);
        if (!rc) {
            rc = rk_dev_write(dst, buf, chunk, doff + o, 0);
            if (rc)
                return rc;
            continue;
        }
        if (rc != -EIO)
            return rc;
        *bad += chunk;
        if (raid_bad_add(r, slot, o, chunk))
            return -EIO; /* too many bad ranges to track */
        raid_job_count(r, 0, 0, 1);
    }
    return 0;
}

static void rebuild_begin(struct raid_priv *r, void *ctx, uint64_t start, uint64_t end)
{
    struct rebuild_ctx *c = ctx;
    rk_info("%s of slot %u started at data offset %llu of %llu",
            c->readd ? "re-add (regions the write-intent bitmap marks)" : "rebuild", c->slot,
            (unsigned long long)start, (unsigned long long)end);
}

static void rebuild_count(struct rk_raid_progress *p, void *arg)
{
    const struct rebuild_ctx *c = arg;
    p->resynced = c->resynced;
    p->readd = c->readd;
}

/* A re-add step: reconstruct the parts of [pos, pos+len) in regions whose bit is set now.
 * Read under the range lock: a write into the range since the member left set its region's
 * bit before it reached a member, and no bit is cleared while this slot is REBUILDING. */
static int readd_chunks(struct raid_priv *r, struct rebuild_ctx *c, uint64_t pos, uint64_t len,
                        uint64_t *bad)
{
    uint64_t region = r->bm->region, end = pos + len;
    for (uint64_t a = pos; a < end;) {
        uint64_t i = a / region, b = (i + 1) * region < end ? (i + 1) * region : end;
        if (raid_bitmap_region_set(r, i)) {
            int rc = rebuild_chunks(r, c->slot, a, b - a, c->buf, bad);
            if (rc)
                return rc;
            c->resynced += b - a;
        }
        a = b;
    }
    return 0;
}

static int rebuild_step(struct raid_priv *r, void *ctx, uint64_t pos, uint64_t len)
{
    struct rebuild_ctx *c = ctx;
    uint32_t slot = c->slot;
    if (atomic_load(&r->state[slot]) != RK_SLOT_REBUILDING) {
        rk_err("rebuild of slot %u: the slot failed; rebuild abandoned", slot);
        return -EIO;
    }
    uint64_t bad = 0;
    int rc;
    if (c->readd) {
        rc = readd_chunks(r, c, pos, len, &bad);
    } else {
        rc = rebuild_chunks(r, slot, pos, len, c->buf, &bad);
        c->resynced += len;
    }
    raid_job_update(r, rebuild_count, c);
    /* A source that fails every read for this long is gone, not a few bad sectors: stop
     * instead of recording the rest of the slot as unreadable. */
    c->bad_run = bad && bad == len ? c->bad_run + bad : 0;
    if (!rc && c->bad_run >= REBUILD_MAX_BAD_RUN)
        rc = -ENODEV;
    if (rc == -ENODEV) {
        rk_err("rebuild of slot %u: no live source left at data offset %llu; the array is "
               "offline",
               slot, (unsigned long long)pos);
    } else if (rc) {
        rk_err("rebuild of slot %u: writing the new member failed: %s", slot, strerror(-rc));
        c->fail_err = rc;
    }
    return rc;
}

/* Flush the target and persist the checkpoint. */
static void rebuild_checkpoint(struct raid_priv *r, void *ctx, uint64_t pos)
{
    struct rebuild_ctx *c = ctx;
    if (rk_dev_flush(r->members[c->slot]))
        return; /* not durable: keep the older checkpoint */
    if (r->ev.rebuild_checkpoint)
        r->ev.rebuild_checkpoint(r->ev.ctx, c->slot, pos);
}

static int rebuild_finish(struct raid_priv *r, void *ctx, uint64_t pos, int err)
{
    struct rebuild_ctx *c = ctx;
    uint32_t slot = c->slot;
    if (c->fail_err)
        raid_fail(r, slot, c->fail_err);
    if (!err) {
        err = rk_dev_flush(r->members[slot]);
        int want = RK_SLOT_REBUILDING;
        if (!err && !atomic_compare_exchange_strong(&r->state[slot], &want, RK_SLOT_ACTIVE))
            err = -EIO;
        if (!err)
            rk_info("%s of slot %u complete: %llu bytes resynced%s",
                    c->readd ? "re-add" : "rebuild", slot, (unsigned long long)c->resynced,
                    raid_bad_recorded(r) ? " (with unreadable ranges, see status)" : "");
    } else if (err == -EINTR) {
        rk_info("rebuild of slot %u stopped at data offset %llu (checkpointed)", slot,
                (unsigned long long)pos);
    }
    if (r->ev.rebuild_done)
        r->ev.rebuild_done(r->ev.ctx, slot, err);
    free(c->buf);
    free(c);
    return err;
}

static const struct raid_job_ops rebuild_ops = {
    .kind = RK_JOB_REBUILD,
    .begin = rebuild_begin,
    .step = rebuild_step,
    .checkpoint = rebuild_checkpoint,
    .finish = rebuild_finish,
};

struct add_member {
    uint32_t slot;
    struct rk_dev *member;
};

/* With the job lock held (no job runs): put the member into its FAILED or MISSING slot. */
static int add_member_idle(struct raid_priv *r, void *arg)
{
    const struct add_member *a = arg;
    int ret = 0;
    pthread_mutex_lock(&r->fail_lock);
    int s = atomic_load(&r->state[a->slot]);
    if (s != RK_SLOT_FAILED && s != RK_SLOT_MISSING) {
        ret = -EBUSY;
    } else {
        r->members[a->slot] = a->member;
        atomic_fetch_add(&r->joins[a->slot], 1);
        atomic_store(&r->state[a->slot], RK_SLOT_REBUILDING);
    }
    pthread_mutex_unlock(&r->fail_lock);
    return ret;
}

int rk_raid_add_member(struct rk_dev *raid, uint32_t slot, struct rk_dev *member)
{
    struct raid_priv *r = raid_priv_of(raid);
    if (!r || !member || slot >= r->l.g.members)
        return -EINVAL;
    if (!r->l.lvl->reconstruct)
        return -EOPNOTSUPP;
    const struct rk_raid_geom *g = &r->l.g;
    if (member->size < g->data_offset || member->size - g->data_offset < g->data_size[slot] ||
        member->block_size > raid->block_size || g->data_offset % member->block_size)
        return -EINVAL;
    struct add_member a = {.slot = slot, .member = member};
    int ret = raid_job_idle_do(r, add_member_idle, &a);
    /* The slot's new contents come from its rebuild: ranges the last one could not
     * reconstruct say nothing about them (the slot serves no reads until then). */
    if (!ret)
        raid_bad_drop(r, slot);
    /* Before its rebuild can make it readable: what its own log holds is void (raid5/6). */
    if (!ret && r->l.lvl->log_join)
        ret = r->l.lvl->log_join(r, slot);
    /* The new member carries the write-intent bitmap from now on (F13: else only from the
     * next bit change, and a re-add right after its rebuild found no valid area). A failed
     * area write already failed the member(s) that took it: the rebuild start says so. */
    if (!ret && raid_bitmap_join(r))
        rk_warn("raid: slot %" PRIu32 " joined, but the write-intent bitmap could not be written "
                "to the members",
                slot);
    return ret;
}

/* Start the rebuild job of slot; readd: only the regions the bitmap marks. */
static int rebuild_start(struct raid_priv *r, uint32_t slot, uint64_t from, uint64_t rate,
                         bool readd)
{
    if (!r->l.lvl->reconstruct)
        return -EOPNOTSUPP;
    if (atomic_load(&r->state[slot]) != RK_SLOT_REBUILDING || !r->members[slot])
        return -EBUSY;
    uint64_t end = r->l.member_used;
    from -= from % r->l.g.chunk;
    if (from > end)
        from = end;
    struct rebuild_ctx *c = calloc(1, sizeof(*c));
    if (c)
        c->buf = rk_buf_alloc(raid_job_step_bytes(r, rate));
    if (!c || !c->buf) {
        free(c);
        return -ENOMEM;
    }
    c->slot = slot;
    c->readd = readd;
    struct raid_job_spec spec = {
        .ops = &rebuild_ops, .ctx = c, .start = from, .end = end, .rate = rate, .slot = slot};
    int ret = raid_job_start(r, &spec);
    if (ret) {
        free(c->buf);
        free(c);
    }
    return ret;
}

int rk_raid_rebuild_start(struct rk_dev *raid, uint32_t slot, uint64_t from, uint64_t rate)
{
    struct raid_priv *r = raid_priv_of(raid);
    if (!r || slot >= r->l.g.members)
        return -EINVAL;
    return rebuild_start(r, slot, from, rate, false);
}

int rk_raid_readd_start(struct rk_dev *raid, uint32_t slot, uint64_t from, uint64_t rate)
{
    struct raid_priv *r = raid_priv_of(raid);
    if (!r || slot >= r->l.g.members)
        return -EINVAL;
    if (!r->bm || !r->bm->area_off)
        return -ENOENT;
    return rebuild_start(r, slot, from, rate, true);
}
