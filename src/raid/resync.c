/* The resync job (job.h, kind RK_JOB_RESYNC): after an unclean shutdown, or as the initial sync
 * of an array whose members could not be zeroed, bring every unsynced region (bitmap.h) back in
 * sync through the level's scrub hook with repair: copy levels copy the first live copy over
 * the others, parity levels recompute parity from the data. */
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/util.h"
#include "raid/bitmap.h"
#include "raid/job.h"
#include "raid/resync_fast.h"

/* Steps of RESYNC_STEP_MUL x raid_job_step_bytes, RESYNC_DEPTH in flight (job.h). */
#define RESYNC_DEPTH    4
#define RESYNC_STEP_MUL 4

struct resync_ctx {
    bool full;
    _Atomic uint64_t resynced, fast, mismatches, errors; /* steps run concurrently */
    uint64_t next_region;    /* resync_done: the first region not marked synced yet */
    double t0;               /* monotonic seconds at resync_begin (the finish log's time) */
    struct resync_pool pool; /* scratch of the fast path, one per step in flight */
};

static double resync_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void resync_begin(struct raid_priv *r, void *ctx, uint64_t start, uint64_t end)
{
    struct resync_ctx *c = ctx;
    struct raid_bitmap *bm = r->bm;
    uint64_t n = 0;
    c->t0 = resync_now();
    for (uint64_t i = 0; i < bm->nregions; i++)
        n += atomic_load(&bm->unsynced[i]) != BM_SYNCED;
    rk_info("resync started (%s): %" PRIu64 " of %" PRIu64 " regions of %" PRIu64
            " bytes, member data [%" PRIu64 ", %" PRIu64 ")",
            c->full ? "full" : "bitmap", n, bm->nregions, bm->region, start, end);
}

struct resync_add {
    uint64_t bytes;
    bool full;
};

static void resync_count(struct rk_raid_progress *p, void *arg)
{
    struct resync_add *a = arg;
    p->resynced += a->bytes;
    p->full = a->full;
}

/* Resync the unsynced regions' parts inside [pos, pos+len) (resync_done marks a region synced
 * once every step up to its end is done). Read errors are counted and skipped, like scrub
 * does. Runs concurrently with other steps of the job on disjoint ranges. */
/* Resync [a, b) of the member data areas: the fast path on a healthy array, else (or when it
 * declines) the level's scrub hook with repair. Adds bytes done and mismatches to c. */
static int resync_run(struct raid_priv *r, struct resync_ctx *c, uint64_t a, uint64_t b)
{
    uint64_t mm = 0;
    int rc = resync_fast_step(r, &c->pool, a, b - a, c->full, &mm);
    if (!rc)
        c->fast += b - a;
    else if (rc == -EAGAIN)
        rc = r->l.lvl->scrub(r, a, b - a, RAID_SCRUB_REPAIR | RAID_SCRUB_RESYNC, &mm);
    if (rc == -EIO)
        c->errors++;
    else if (rc)
        return rc;
    c->resynced += b - a;
    c->mismatches += mm;
    raid_job_count(r, mm, mm, 0);
    return 0;
}

static int resync_step(struct raid_priv *r, void *ctx, uint64_t pos, uint64_t len)
{
    struct resync_ctx *c = ctx;
    struct raid_bitmap *bm = r->bm;
    uint64_t end = pos + len, used = r->l.member_used, done = 0, ra = 0, rb = 0;
    /* Runs of adjacent unsynced regions go as one range. */
    for (uint64_t i = pos / bm->region; i < bm->nregions && i * bm->region < end; i++) {
        uint64_t rs = i * bm->region, re = rs + bm->region < used ? rs + bm->region : used;
        if (atomic_load(&bm->unsynced[i]) == BM_SYNCED)
            continue;
        uint64_t a = rs > pos ? rs : pos, b = re < end ? re : end;
        if (a >= b)
            continue;
        if (rb != a && rb > ra) {
            int rc = resync_run(r, c, ra, rb);
            if (rc)
                return rc;
            done += rb - ra;
            ra = rb = 0;
        }
        if (rb != a)
            ra = a;
        rb = b;
    }
    if (rb > ra) {
        int rc = resync_run(r, c, ra, rb);
        if (rc)
            return rc;
        done += rb - ra;
    }
    struct resync_add add = {.bytes = done, .full = c->full};
    raid_job_update(r, resync_count, &add);
    return 0;
}

/* Every step before pos is done: mark the regions that end at or before pos synced (which
 * releases their pins); called in order, before the checkpoint of pos. */
static void resync_done(struct raid_priv *r, void *ctx, uint64_t pos)
{
    struct resync_ctx *c = ctx;
    struct raid_bitmap *bm = r->bm;
    uint64_t used = r->l.member_used;
    for (uint64_t i = c->next_region; i < bm->nregions; i++) {
        uint64_t rs = i * bm->region, re = rs + bm->region < used ? rs + bm->region : used;
        if (rs >= pos || re > pos)
            break;
        raid_bitmap_synced(r, i);
        c->next_region = i + 1;
    }
}

/* Flush the members so that [0, pos) is durable, then let the volume record pos. */
static void resync_checkpoint(struct raid_priv *r, void *ctx, uint64_t pos)
{
    (void)ctx;
    if (raid_flush_writable(r) && r->ev.resync_checkpoint)
        r->ev.resync_checkpoint(r->ev.ctx, pos);
}

static int resync_finish(struct raid_priv *r, void *ctx, uint64_t pos, int err)
{
    struct resync_ctx *c = ctx;
    (void)pos;
    if (!err && !raid_flush_writable(r))
        err = -EIO; /* durable before "no resync needed" is recorded */
    if (!err) {
        atomic_store(&r->bm->resync_pending, 0);
        double dt = resync_now() - c->t0;
        uint64_t bytes = atomic_load(&c->resynced);
        rk_info("resync finished: %" PRIu64 " bytes per member resynced in %.3f s (%.1f MB/s; "
                "%" PRIu64 " by the fast path%s), %" PRIu64 " regions differed (repaired), %" PRIu64
                " unreadable",
                bytes, dt, dt > 0 ? (double)bytes / dt / 1e6 : 0.0, atomic_load(&c->fast),
                c->full ? ", parity written unread" : "", atomic_load(&c->mismatches),
                atomic_load(&c->errors));
    } else {
        rk_warn("resync stopped: %s; it stays pending", strerror(-err));
    }
    if (r->ev.resync_done)
        r->ev.resync_done(r->ev.ctx, err);
    resync_pool_destroy(&c->pool);
    free(c);
    return err;
}

static const struct raid_job_ops resync_ops = {
    .kind = RK_JOB_RESYNC,
    .begin = resync_begin,
    .step = resync_step,
    .checkpoint = resync_checkpoint,
    .finish = resync_finish,
    .depth = RESYNC_DEPTH,
    .step_mul = RESYNC_STEP_MUL,
    .done = resync_done,
};

/* The walk of a bitmap resync: from the first unsynced region to the end of the last (an empty
 * walk [0, 0) when none is), so its time and rate limit follow the marked regions. */
static void resync_bounds(struct raid_bitmap *bm, uint64_t used, uint64_t *from, uint64_t *end)
{
    uint64_t lo = UINT64_MAX, hi = 0;
    for (uint64_t i = 0; i < bm->nregions; i++) {
        if (atomic_load(&bm->unsynced[i]) == BM_SYNCED)
            continue;
        if (lo == UINT64_MAX)
            lo = i * bm->region;
        hi = (i + 1) * bm->region;
    }
    if (hi > used)
        hi = used;
    *from = lo == UINT64_MAX || lo >= hi ? 0 : lo;
    *end = lo == UINT64_MAX || lo >= hi ? 0 : hi;
}

int rk_raid_resync_start(struct rk_dev *raid, bool full, uint64_t from, uint64_t rate)
{
    struct raid_priv *r = raid_priv_of(raid);
    if (!r || !r->bm)
        return -EINVAL;
    if (!r->l.lvl->reconstruct || !r->l.lvl->scrub)
        return -EOPNOTSUPP;
    struct resync_ctx *c = calloc(1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    resync_pool_init(&c->pool);
    c->full = full;
    from = from / r->bm->region * r->bm->region;
    if (from > r->l.member_used)
        from = 0;
    uint64_t end = r->l.member_used;
    if (full) {
        /* From the checkpoint on, plus the regions marked below it (a resume after a crash,
         * docs/ARCHITECTURE.md "Resync"): the walk starts at the first unsynced region. */
        raid_bitmap_mark_all(r, from);
        uint64_t lo, hi;
        resync_bounds(r->bm, end, &lo, &hi);
        if (hi > lo && lo < from)
            from = lo;
    } else {
        resync_bounds(r->bm, end, &from, &end);
    }
    c->next_region = from / r->bm->region;
    struct raid_job_spec spec = {
        .ops = &resync_ops, .ctx = c, .start = from, .end = end, .rate = rate};
    int ret = raid_job_start(r, &spec);
    if (ret) {
        resync_pool_destroy(&c->pool);
        free(c);
    }
    return ret;
}
