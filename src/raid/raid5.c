/* raid5 and raid6 (Linux md left-symmetric layouts): the request hook, open/close and the level
 * tables. The level's jobs live in raid5_layout/io/cache/read/write/rebuild.c (raid5_int.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "raid/raid5_int.h"
#include "raid/rangelock.h"

static int raid5_max_failed(uint32_t members)
{
    return 1;
}

static int raid6_max_failed(uint32_t members)
{
    return 2;
}

int r5_rw_direct(struct raid_priv *r, enum rk_op op, char *buf, uint64_t len, uint64_t off,
                 uint32_t flags, bool stream)
{
    struct r5_req q;
    struct raid_range node;
    bool locked = false;
    int ret;
    /* More slots gone than the parity covers: no write may succeed, even one whose data and
     * parity slots are all gone (nothing would reach a member; tests/unit/test_ppl_dead.c). */
    if (op != RK_OP_READ && !r5_alive(r))
        return -EIO;
    r5_req_init(&q, r, flags & RK_WRITE_FUA);
    if (op != RK_OP_READ) {
        /*
         * While a rebuild or scrub runs, writes also take the member range lock of the whole
         * rows they touch (parity columns included): the job computes a row under that lock and
         * writes it afterwards, so a write in between would be overwritten. The array range of
         * whole stripes [first, last] maps to exactly those rows. Taken before any pool buffer,
         * because a job holding the range lock needs a buffer to make progress.
         */
        uint64_t sbytes = r5_stripe_bytes(&r->l);
        uint64_t first = off / sbytes, last = (off + len - 1) / sbytes;
        locked = raid_write_begin(r, &node, first * sbytes, (last - first + 1) * sbytes);
    }
    switch (op) {
    case RK_OP_READ:
        ret = r5_read(&q, buf, len, off);
        break;
    case RK_OP_WRITE:
        ret = r5_write(&q, buf, len, off, stream);
        break;
    case RK_OP_DISCARD:
        ret = r5_zero(&q, len, off, false, 0);
        break;
    case RK_OP_WRITE_ZEROES:
        ret = r5_zero(&q, len, off, true, flags);
        break;
    default:
        ret = -EINVAL;
    }
    r5_req_done(&q);
    if (op != RK_OP_READ)
        raid_write_end(r, &node, locked);
    return ret;
}

/* The level's request hook (raid_int.h): writes go through stripe gathering when it is on;
 * every other request first has the held writes of its range written out (raid5_gather.c). */
static int r5_rw(struct raid_priv *r, enum rk_op op, char *buf, uint64_t len, uint64_t off,
                 uint32_t flags)
{
    struct r5_priv *p = r->level_priv;
    if (p->gather) {
        if (op == RK_OP_WRITE)
            return r5g_write(r, buf, len, off, flags);
        r5g_drain(r, off, len); /* a write-out error stays recorded for the next flush */
    }
    bool stream = op == RK_OP_WRITE && r5c_stream(p, off, len, NULL, NULL);
    return r5_rw_direct(r, op, buf, len, off, flags, stream);
}

static void r5_close(struct raid_priv *r)
{
    struct r5_priv *p = r->level_priv;
    if (!p)
        return;
    r5g_close(p);
    stripe_pool_destroy(&p->pool);
    stripe_locks_destroy(&p->locks);
    rk_parity_ctx_destroy(p->pctx);
    r5c_close(p);
    r5_ppl_close(p);
    free(p->suspect);
    free(p->zero);
    free(p);
    r->level_priv = NULL;
}

static int r5_open(struct raid_priv *r)
{
    struct r5_priv *p = calloc(1, sizeof(*p));
    if (!p)
        return -ENOMEM;
    p->win = r->l.g.chunk < R5_WIN ? r->l.g.chunk : R5_WIN;
    /* Block buffers of a window: n members plus two for the scrub's recomputed parity. */
    uint64_t bufsize = (uint64_t)(r->l.g.members + 2) * p->win + R5_BUF_EXTRA;
    uint64_t nbuf = R5_POOL_BYTES / bufsize;
    nbuf = nbuf < 2 ? 2 : nbuf > STRIPE_POOL_MAX ? STRIPE_POOL_MAX : nbuf;
    stripe_locks_init(&p->locks);
    int ret = stripe_pool_init(&p->pool, (int)nbuf, bufsize);
    if (ret) {
        stripe_locks_destroy(&p->locks);
        free(p);
        return ret;
    }
    r->level_priv = p;
    p->zero = rk_buf_alloc(p->win);
    ret = p->zero ? rk_parity_ctx_create(0, &p->pctx) : -ENOMEM;
    if (!ret)
        ret = r5_ppl_open(r, p);
    if (ret) {
        r5_close(r);
        return ret;
    }
    memset(p->zero, 0, p->win);
    r5c_open(r, p);
    ret = r5g_open(r, p);
    if (ret)
        r5_close(r);
    return ret;
}

const struct raid_level raid_level_raid5 = {
    .level = RK_LEVEL_RAID5,
    .name = "raid5",
    .min_members = 3,
    .max_failed = raid5_max_failed,
    .setup = r5_setup,
    .map = r5_map,
    .survives = r5_survives,
    .rw = r5_rw,
    .reconstruct = r5_reconstruct,
    .scrub = r5_scrub,
    .open = r5_open,
    .close = r5_close,
    .log_start = r5_ppl_start,
    .log_join = r5_ppl_join,
    .drain = r5g_drain,
    .flush_begin = r5_ppl_flush_begin,
    .flush_end = r5_ppl_flush_end,
    .write_hole = true,
};

const struct raid_level raid_level_raid6 = {
    .level = RK_LEVEL_RAID6,
    .name = "raid6",
    .min_members = 4,
    .max_failed = raid6_max_failed,
    .setup = r5_setup,
    .map = r5_map,
    .survives = r5_survives,
    .rw = r5_rw,
    .reconstruct = r5_reconstruct,
    .scrub = r5_scrub,
    .open = r5_open,
    .close = r5_close,
    .log_start = r5_ppl_start,
    .log_join = r5_ppl_join,
    .drain = r5g_drain,
    .flush_begin = r5_ppl_flush_begin,
    .flush_end = r5_ppl_flush_end,
    .write_hole = true,
};
