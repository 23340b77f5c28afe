/* The fast path of a resync step on a healthy array (resync_fast.h): big parallel member I/Os
 * for the copy levels (copy the first live copy over the others) and the parity levels
 * (recompute the parity of every row from the data, rewrite what differs). */
#include "raid/resync_fast.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "raid/badrange.h"
#include "raid/raid5_int.h"

/* Scratch bytes of one step in flight at most (members x piece): larger steps go in pieces. */
#define RESYNC_FAST_BYTES (16ull * 1024 * 1024)

void resync_pool_init(struct resync_pool *p)
{
    memset(p, 0, sizeof(*p));
    pthread_mutex_init(&p->lock, NULL);
}

void resync_pool_destroy(struct resync_pool *p)
{
    for (int i = 0; i < RAID_JOB_DEPTH_MAX; i++) {
        free(p->s[i].mem);
        free(p->s[i].io);
        free(p->s[i].slot);
    }
    pthread_mutex_destroy(&p->lock);
}

/* A free scratch of at least size bytes and cap ios, or NULL (none free, or no memory). */
static struct resync_scratch *pool_get(struct resync_pool *p, uint64_t size, int cap)
{
    struct resync_scratch *s = NULL;
    pthread_mutex_lock(&p->lock);
    for (int i = 0; i < RAID_JOB_DEPTH_MAX && !s; i++)
        if (!p->s[i].busy) {
            s = &p->s[i];
            s->busy = true;
        }
    pthread_mutex_unlock(&p->lock);
    if (!s)
        return NULL;
    if (s->size < size) {
        free(s->mem);
        s->size = 0;
        if (!(s->mem = rk_buf_alloc(size)))
            goto fail;
        s->size = size;
    }
    if (s->cap < cap) {
        free(s->io);
        free(s->slot);
        s->cap = 0;
        s->io = calloc((size_t)cap, sizeof(*s->io));
        s->slot = calloc((size_t)cap, sizeof(*s->slot));
        if (!s->io || !s->slot)
            goto fail;
        s->cap = cap;
    }
    return s;
fail:
    pthread_mutex_lock(&p->lock);
    s->busy = false;
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

static void pool_put(struct resync_pool *p, struct resync_scratch *s)
{
    pthread_mutex_lock(&p->lock);
    s->busy = false;
    pthread_mutex_unlock(&p->lock);
}

/* A list of ios in a scratch: [base, base+n); last[slot] = index of the slot's latest io. */
struct fio_list {
    struct resync_scratch *s;
    int base, n, max;
    int last[RK_MAX_MEMBERS];
};

static void list_init(struct fio_list *v, struct resync_scratch *s, int base, int max)
{
    v->s = s;
    v->base = base;
    v->n = 0;
    v->max = max;
    for (int i = 0; i < RK_MAX_MEMBERS; i++)
        v->last[i] = -1;
}

/* Add op of len bytes at data-area offset moff of slot from/to buf, merged into the slot's
 * latest io when it continues it on the member and in the buffer. */
static void list_add(struct fio_list *v, struct raid_priv *r, uint32_t slot, enum rk_op op,
                     char *buf, uint64_t len, uint64_t moff)
{
    uint64_t off = r->l.g.data_offset + moff;
    int k = v->last[slot];
    if (k >= 0) {
        struct rk_io *io = &v->s->io[v->base + k];
        if (io->off + io->len == off && (char *)io->buf + io->len == buf) {
            io->len += len;
            return;
        }
    }
    k = v->n++;
    rk_io_init(&v->s->io[v->base + k], r->members[slot], op, buf, len, off, 0);
    v->s->slot[v->base + k] = slot;
    v->last[slot] = k;
}

/* Run the ios of v in parallel; writes that fail fail their slot. Returns the failed count. */
static int list_run(struct fio_list *v, struct raid_priv *r)
{
    if (!v->n)
        return 0;
    struct rk_io_batch b;
    rk_io_batch_init(&b);
    int bad = rk_io_run(&b, v->s->io + v->base, v->n);
    rk_io_batch_destroy(&b);
    for (int i = 0; bad && i < v->n; i++) {
        struct rk_io *io = &v->s->io[v->base + i];
        if (io->result && io->op == RK_OP_WRITE)
            raid_fail(r, v->s->slot[v->base + i], io->result);
    }
    list_init(v, v->s, v->base, v->max);
    return bad;
}

/* Is slot's place at member_off the first copy of array offset aoff (lowest data-area offset,
 * then lowest slot)? Each array chunk of a step is copied once, from where it is found first. */
static bool fast_first(const struct rk_raid_extent *c, int n, uint32_t slot, uint64_t member_off)
{
    for (int i = 0; i < n; i++)
        if (c[i].member_off < member_off || (c[i].member_off == member_off && c[i].slot < slot))
            return false;
    return true;
}

/* Copy levels: queue the reads (from the lowest slot) and writes (to every other copy) of the
 * array chunks first found in the step; rd / wr flush when full. 0, or -EAGAIN. */
static int fast_copies(struct raid_priv *r, struct resync_scratch *s, uint64_t off, uint64_t len)
{
    const struct raid_layout *l = &r->l;
    uint32_t members = l->g.members;
    struct fio_list rd, wr;
    list_init(&rd, s, 0, s->cap / 2);
    list_init(&wr, s, s->cap / 2, s->cap - s->cap / 2);
    for (uint32_t sl = 0; sl < members; sl++) {
        for (uint64_t q = off, run = 0; q < off + len; q += run) {
            uint64_t aoff, mrun;
            struct rk_raid_extent c[RK_MAX_MEMBERS];
            if (!l->lvl->unmap(l, sl, q, off + len - q, &aoff, &run))
                continue;
            int n = l->lvl->map(l, aoff, c, RK_MAX_MEMBERS, &mrun);
            if (!fast_first(c, n, sl, q))
                continue;
            int src = 0;
            for (int i = 0; i < n; i++) {
                if (raid_bad_hit(r, c[i].slot, c[i].member_off, run))
                    return -EAGAIN;
                if (c[i].slot < c[src].slot)
                    src = i;
            }
            if (rd.n + 1 > rd.max || wr.n + n > wr.max) {
                if (list_run(&rd, r))
                    return -EAGAIN;
                list_run(&wr, r);
            }
            char *buf = s->mem + sl * len + (q - off);
            list_add(&rd, r, c[src].slot, RK_OP_READ, buf, run, c[src].member_off);
            for (int i = 0; i < n; i++)
                if (i != src)
                    list_add(&wr, r, c[i].slot, RK_OP_WRITE, buf, run, c[i].member_off);
        }
    }
    if (list_run(&rd, r))
        return -EAGAIN;
    list_run(&wr, r);
    return 0;
}

/* Parity levels, compare mode: read every member's [off, off+len) at once, then per row
 * recompute the parity from the data (into the two scratch chunks after the members' buffers)
 * and queue the write of each parity block that differs. Rewrite mode (a full resync: the
 * parity is presumed wrong, as after a create over members that could not be zeroed): read only
 * the data chunks, compute each row's parity straight into its place in the parity slot's
 * buffer and write it, unread (md builds a new raid5 the same way, by recovering the parity
 * rather than checking it): every member byte is then read or written once, not read and then
 * maybe written. The step's stripes are locked meanwhile. */
static int fast_parity(struct raid_priv *r, struct resync_scratch *s, uint64_t off, uint64_t len,
                       bool rewrite, uint64_t *mismatches)
{
    const struct raid_layout *l = &r->l;
    struct r5_priv *p = r->level_priv;
    uint64_t chunk = l->g.chunk, first = off / chunk, rows = len / chunk;
    uint32_t members = l->g.members;
    char *np[2] = {s->mem + members * len, s->mem + members * len + chunk};
    struct fio_list rd, wr;
    int nrd = rewrite ? (int)(members * rows) : (int)members;
    list_init(&rd, s, 0, nrd);
    list_init(&wr, s, nrd, s->cap - nrd);
    int ret = 0;
    stripe_lock_range(&p->locks, first, rows);
    for (uint32_t sl = 0; sl < members; sl++) {
        if (!rewrite) {
            list_add(&rd, r, sl, RK_OP_READ, s->mem + sl * len, len, off);
            continue;
        }
        for (uint64_t i = 0; i < rows; i++) {
            struct r5_geo g;
            r5_geo(l, first + i, &g);
            if (g.blk_of_slot[sl] < g.nd)
                list_add(&rd, r, sl, RK_OP_READ, s->mem + sl * len + i * chunk, chunk,
                         off + i * chunk);
        }
    }
    if (list_run(&rd, r)) {
        ret = -EAGAIN;
        goto out;
    }
    bool wrote = false;
    for (uint64_t i = 0; i < rows; i++) {
        struct r5_geo g;
        r5_geo(l, first + i, &g);
        void *data[RK_MAX_MEMBERS], *out[2] = {np[0], np[1]};
        for (uint32_t k = 0; k < g.nd; k++)
            data[k] = s->mem + g.slot[k] * len + i * chunk;
        for (uint32_t k = 0; rewrite && k < g.np; k++)
            out[k] = s->mem + g.slot[g.nd + k] * len + i * chunk;
        r5_parity_gen(g.np, g.nd, chunk, data, out[0], out[1]);
        bool diff = false;
        for (uint32_t k = 0; k < g.np; k++) {
            uint32_t sl = g.slot[g.nd + k];
            char *cur = s->mem + sl * len + i * chunk;
            if (!rewrite) {
                if (!memcmp(cur, np[k], chunk))
                    continue;
                memcpy(cur, np[k], chunk);
                diff = true;
            }
            list_add(&wr, r, sl, RK_OP_WRITE, cur, chunk, off + i * chunk);
            wrote = true;
        }
        if (diff)
            ++*mismatches;
    }
    list_run(&wr, r);
    if (wrote)
        r5c_drop(p, first, rows); /* a cached copy of a stripe must not keep the old parity */
out:
    stripe_unlock_range(&p->locks, first, rows);
    return ret;
}

int resync_fast_step(struct raid_priv *r, struct resync_pool *p, uint64_t off, uint64_t len,
                     bool rewrite, uint64_t *mismatches)
{
    const struct raid_layout *l = &r->l;
    uint32_t members = l->g.members, all = raid_all_mask(members);
    uint64_t chunk = l->g.chunk;
    bool copies = l->lvl->unmap != NULL;
    bool parity = (l->lvl == &raid_level_raid5 || l->lvl == &raid_level_raid6) && r->level_priv;
    if ((!copies && !parity) || !len || off % chunk || len % chunk ||
        raid_slot_mask(r, RAID_STATES_READ) != all)
        return -EAGAIN;
    if (parity)
        for (uint32_t sl = 0; sl < members; sl++)
            if (raid_bad_hit(r, sl, off, len))
                return -EAGAIN;
    if (members * chunk > RESYNC_FAST_BYTES)
        return -EAGAIN; /* huge chunks: the scrub hook's windows need less memory */
    /* Pieces of at most RESYNC_FAST_BYTES over all members (whole chunks, at least one). */
    uint64_t sub = RESYNC_FAST_BYTES / members / chunk * chunk;
    sub = sub < chunk ? chunk : sub < len ? sub : len;
    uint64_t rows = sub / chunk;
    int cap = copies ? (int)(2 * members * (rows + 2)) : (int)((members + 2) * rows + members);
    struct resync_scratch *s = pool_get(p, members * sub + 2 * chunk, cap < 64 ? 64 : cap);
    if (!s)
        return -EAGAIN;
    int ret = 0;
    for (uint64_t o = off; o < off + len && !ret; o += sub) {
        uint64_t n = off + len - o < sub ? off + len - o : sub;
        ret = copies ? fast_copies(r, s, o, n) : fast_parity(r, s, o, n, rewrite, mismatches);
    }
    pool_put(p, s);
    return ret;
}
