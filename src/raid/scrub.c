/* The scrub job (job.h): walk the members' data areas in steps, let the level's scrub hook
 * compare (and repair) copies or parity, and read everything on levels without one. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/util.h"
#include "raid/bitmap.h"
#include "raid/job.h"

struct scrub_ctx {
    bool repair;
    char *buf; /* one step, for levels without a scrub hook */
};

/* Levels without redundancy: read the step on every live member, count read errors. */
static int scrub_read_all(struct raid_priv *r, uint64_t pos, uint64_t len, char *buf)
{
    const struct rk_raid_geom *g = &r->l.g;
    uint32_t active = raid_slot_mask(r, RAID_STATES_READ);
    int ret = 0;
    for (uint32_t s = 0; s < g->members; s++) {
        if (!(active & (1u << s)) || pos >= g->data_size[s])
            continue;
        uint64_t n = g->data_size[s] - pos < len ? g->data_size[s] - pos : len;
        if (rk_dev_read(r->members[s], buf, n, g->data_offset + pos)) {
            rk_warn("scrub: read error on slot %u in data bytes [%llu, %llu)", s,
                    (unsigned long long)pos, (unsigned long long)(pos + n));
            ret = -EIO;
        }
    }
    return ret;
}

/* Under the job lock: whether the running scrub has nothing to compare against (*arg). */
static void scrub_mark_uncompared(struct rk_raid_progress *p, void *arg)
{
    p->uncompared = *(const bool *)arg;
}

static void scrub_begin(struct raid_priv *r, void *ctx, uint64_t start, uint64_t end)
{
    struct scrub_ctx *c = ctx;
    rk_info("scrub (%s) started over %llu bytes of each member", c->repair ? "repair" : "check",
            (unsigned long long)end);
    /* Where no redundant copy or parity is left there is nothing to compare: say so rather
     * than let "0 mismatches" read like a clean bill of health. */
    int missing = (int)r->l.g.members - __builtin_popcount(raid_slot_mask(r, RAID_STATES_READ));
    int tolerated = r->l.lvl->max_failed(r->l.g.members);
    if (tolerated == 0)
        rk_warn("scrub: %s has no redundancy: it reads everything and reports read errors only",
                r->l.lvl->name);
    else if (missing >= tolerated && r->l.lvl->unmap)
        rk_warn("scrub: the array is degraded (%d of %u slots unavailable): data without a "
                "remaining copy is only read, not compared",
                missing, r->l.g.members);
    else if (missing >= tolerated)
        rk_warn("scrub: the array is degraded (%d of %u slots unavailable): no redundancy "
                "left, nothing can be compared: this scrub cannot find a mismatch",
                missing, r->l.g.members);
    else if (missing > 0 && !r->l.lvl->unmap)
        rk_warn("scrub: %d of %u slots unavailable: every stripe is checked against the parity "
                "left, but a mismatch cannot be located nor repaired",
                missing, r->l.g.members);
    bool uncompared = tolerated == 0 || (missing >= tolerated && !r->l.lvl->unmap);
    raid_job_update(r, scrub_mark_uncompared, &uncompared);
    if (tolerated > 0 && missing >= tolerated && !r->l.lvl->unmap)
        raid_job_no_rate(r); /* raid5/raid6 with no parity left to check read nothing */
}

/* Read errors count as bad ranges and the scrub goes on; other errors end it. */
static int scrub_step(struct raid_priv *r, void *ctx, uint64_t pos, uint64_t len)
{
    struct scrub_ctx *c = ctx;
    uint64_t mm = 0;
    /* A repair writes members like any write: the regions' bits are durable first, so a
     * crash in the middle of a repair write is resynced (docs/ARCHITECTURE.md). */
    struct raid_bm_hold h = {.first = 1, .last = 0};
    if (c->repair && r->l.lvl->scrub && raid_bitmap_begin_member(r, pos, len, &h)) {
        rk_err("scrub: cannot set the write-intent bits of data bytes [%llu, %llu): stopped",
               (unsigned long long)pos, (unsigned long long)(pos + len));
        return -EIO;
    }
    int rc = r->l.lvl->scrub ? r->l.lvl->scrub(r, pos, len, c->repair ? RAID_SCRUB_REPAIR : 0, &mm)
                             : scrub_read_all(r, pos, len, c->buf);
    raid_bitmap_end(r, &h);
    /* The hook counts repaired mismatches itself (raid_job_mismatch): a degraded raid6 finds
     * mismatches it cannot repair. */
    raid_job_count(r, mm, 0, rc == -EIO);
    return rc == -EIO ? 0 : rc;
}

struct scrub_result {
    int err;
    uint64_t mismatches, bad_ranges;
};

/* Under the job lock: read the counters; a finished scrub becomes the last scrub's result. */
static void scrub_record(struct rk_raid_progress *p, void *arg)
{
    struct scrub_result *res = arg;
    res->mismatches = p->mismatches;
    res->bad_ranges = p->bad_ranges;
    if (res->err)
        return;
    p->scrubbed = true;
    p->last_mismatches = p->mismatches;
    p->last_repaired = p->repaired;
    p->last_errors = p->bad_ranges;
    p->last_uncompared = p->uncompared;
    p->last_finished = (int64_t)time(NULL);
}

static int scrub_finish(struct raid_priv *r, void *ctx, uint64_t pos, int err)
{
    struct scrub_ctx *c = ctx;
    struct scrub_result res = {.err = err};
    if (!err)
        raid_job_mismatch_keep(r);
    raid_job_update(r, scrub_record, &res);
    if (err)
        rk_warn("scrub stopped: %s", strerror(-err));
    else
        rk_info("scrub finished: %llu mismatches%s, %llu unreadable ranges",
                (unsigned long long)res.mismatches, c->repair ? " (repaired)" : "",
                (unsigned long long)res.bad_ranges);
    free(c->buf);
    free(c);
    return err;
}

static const struct raid_job_ops scrub_ops = {
    .kind = RK_JOB_SCRUB,
    .begin = scrub_begin,
    .step = scrub_step,
    .finish = scrub_finish,
};

int rk_raid_scrub_start(struct rk_dev *raid, bool repair, uint64_t rate)
{
    struct raid_priv *r = raid_priv_of(raid);
    if (!r)
        return -EINVAL;
    struct scrub_ctx *c = calloc(1, sizeof(*c));
    if (c && !r->l.lvl->scrub)
        c->buf = rk_buf_alloc(raid_job_step_bytes(r, rate));
    if (!c || (!r->l.lvl->scrub && !c->buf)) {
        free(c);
        return -ENOMEM;
    }
    c->repair = repair;
    struct raid_job_spec spec = {.ops = &scrub_ops,
                                 .ctx = c,
                                 .start = 0,
                                 .end = r->l.member_used,
                                 .rate = rate,
                                 .repair = repair};
    int ret = raid_job_start(r, &spec);
    if (ret) {
        free(c->buf);
        free(c);
    }
    return ret;
}

const char *rk_raid_mismatch_kind_name(int kind)
{
    static const char *const names[] = {"parity",   "located", "unlocated",   "degraded",
                                        "majority", "tie",     "unknown-copy"};
    return kind >= 0 && kind < (int)(sizeof(names) / sizeof(names[0])) ? names[kind] : "?";
}

const char *rk_raid_fix_name(int fixed)
{
    static const char *const names[] = {"none", "data", "parity", "copy"};
    return fixed >= 0 && fixed < (int)(sizeof(names) / sizeof(names[0])) ? names[fixed] : "?";
}

const char *rk_raid_mismatch_parity_name(int parity)
{
    static const char *const names[] = {NULL, "P", "Q", "P+Q"};
    return parity >= 0 && parity < (int)(sizeof(names) / sizeof(names[0])) ? names[parity] : NULL;
}
