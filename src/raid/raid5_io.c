/* raid5 and raid6 member I/O: the per-request scratch (a pool buffer cut into block windows and
 * a completion batch), parallel member ios of one stripe window, and the parity helpers the read,
 * write and scrub paths share. */
#include <errno.h>
#include <string.h>

#include "raid/raid5_int.h"

void r5_req_init(struct r5_req *q, struct raid_priv *r, uint32_t wflags)
{
    q->r = r;
    q->p = r->level_priv;
    q->buf = NULL;
    q->wflags = wflags;
    rk_io_batch_init(&q->batch);
}

void r5_req_buf(struct r5_req *q)
{
    if (!q->buf)
        q->buf = stripe_pool_get(&q->p->pool);
}

void r5_req_done(struct r5_req *q)
{
    if (q->buf)
        stripe_pool_put(&q->p->pool, q->buf);
    rk_io_batch_destroy(&q->batch);
}

char *r5_blk(struct r5_req *q, uint32_t b)
{
    return q->buf + (uint64_t)b * q->p->win;
}

void r5_io_add(struct r5_ios *v, struct raid_priv *r, uint32_t slot, enum rk_op op, uint32_t flags,
               void *buf, uint64_t len, uint64_t moff)
{
    rk_io_init(&v->io[v->n], r->members[slot], op, buf, len, r->l.g.data_offset + moff, flags);
    v->slot[v->n++] = slot;
}

uint32_t r5_io_run(struct r5_req *q, struct r5_ios *v)
{
    uint32_t failed = 0;
    if (rk_io_run(&q->batch, v->io, v->n))
        for (int i = 0; i < v->n; i++)
            if (v->io[i].result)
                failed |= 1u << v->slot[i];
    return failed;
}

void r5_fail_writes(struct r5_req *q, struct r5_ios *v)
{
    for (int i = 0; i < v->n; i++)
        if (v->io[i].result)
            raid_fail(q->r, v->slot[i], v->io[i].result);
}

int r5_io_write(struct r5_req *q, struct r5_ios *v, bool *failed)
{
    bool f = r5_io_run(q, v) != 0;
    if (failed)
        *failed = f;
    if (!f)
        return 0;
    r5_fail_writes(q, v);
    return r5_alive(q->r) ? 0 : -EIO;
}

void r5_parity_gen(uint32_t np, uint32_t nd, uint64_t len, void **data, void *p, void *qb)
{
    if (np == 2)
        rk_parity_pq((int)nd, len, data, p, qb);
    else
        rk_parity_xor((int)nd, len, data, p);
}

int r5_recover_blocks(struct r5_req *q, const struct r5_geo *g, uint64_t len, uint32_t missing)
{
    void *blocks[RK_MAX_MEMBERS];
    int miss[2], nmiss = 0;
    if ((uint32_t)__builtin_popcount(missing) > g->np)
        return -EIO;
    for (uint32_t b = 0; b < g->n; b++) {
        blocks[b] = r5_blk(q, b);
        if (missing & (1u << b))
            miss[nmiss++] = (int)b;
    }
    if (nmiss && rk_parity_recover(q->p->pctx, (int)g->nd, (int)g->np, len, blocks, miss, nmiss))
        return -EIO;
    return 0;
}
