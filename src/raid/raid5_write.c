/*
 * raid5 and raid6 writes: each stripe under its stripe lock, in column windows. A window is
 * planned (read-modify-write, reconstruct-write or recover-first, and the member reads that
 * mode needs), computed (the new parity in the work buffers) and committed (one batch of
 * parallel member writes, then the stripe cache is updated). Runs of whole stripes skip the
 * reads; zeroing and discard of whole stripes use member write-zeroes.
 */
#include <errno.h>
#include <string.h>

#include "raid/bitmap.h"
#include "raid/raid5_int.h"

/* What one write window does, decided by r5w_plan. */
struct r5_plan {
    enum r5_mode mode;
    uint32_t cv;      /* data blocks valid in the stripe's cache entry at the start */
    uint32_t touched; /* data blocks the window writes */
    uint32_t full;    /* data blocks the window writes over its whole width */
    uint32_t pwrite;  /* parity blocks on writable slots (they get the new parity) */
    uint32_t need;    /* data blocks a reconstruct-write reads (neither full nor cached) */
    uint32_t bad;     /* blocks whose reads failed */
    uint32_t missing; /* R5_RECOVER: blocks rebuilt from the others */
};

/*
 * Choose the mode of window w of stripe g and read what it needs into q's block buffers: the
 * cheaper by member reads of read-modify-write (the touched data and the parity) and
 * reconstruct-write (the data chunks the write neither fully covers nor finds cached); when a
 * block it needs is on a slot that cannot be read, everything readable is read (R5_RECOVER).
 * A failed read excludes that block and plans again. Returns 0 or -EIO (too many missing).
 */
static int r5w_plan(struct r5_req *q, const struct r5_geo *g, const struct r5_wwin *w,
                    struct r5_plan *pl)
{
    struct raid_priv *r = q->r;
    uint64_t len = w->hi - w->lo, moff = g->row * r->l.g.chunk + w->lo;
    uint32_t nd = g->nd, dmask = (1u << nd) - 1;
    uint32_t wr = raid_slot_mask(r, RAID_STATES_WRITE);

    for (uint32_t k = 0; k < nd; k++) {
        if (w->a[k] < w->b[k])
            pl->touched |= 1u << k;
        if (w->a[k] == w->lo && w->b[k] == w->hi)
            pl->full |= 1u << k;
    }
    /* A parity slot that is gone needs no update, and with no parity left to update, data is
     * simply written (nothing to read). */
    for (uint32_t b = nd; b < g->n; b++)
        if (wr & (1u << g->slot[b]))
            pl->pwrite |= 1u << b;
    for (;;) {
        uint32_t rd = r5_blk_readable(r, g, moff, len) & ~pl->bad, want;
        pl->need = dmask & ~pl->full & ~pl->cv;
        uint32_t rmw_want = pl->pwrite ? pl->touched | pl->pwrite : 0;
        bool rmw_ok = (rmw_want & ~rd) == 0, rcw_ok = (pl->need & ~rd) == 0;
        int rmw_reads = __builtin_popcount(rmw_want), rcw_reads = __builtin_popcount(pl->need);
        /* Parity a resync has not reached yet was never valid: update it from the data
         * (reconstruct-write), never read-modify-write against it (bitmap.h). */
        if (rmw_ok &&
            (!rcw_ok || (rmw_reads <= rcw_reads && !raid_bitmap_unsynced(r, moff, len)))) {
            pl->mode = R5_RMW;
            want = rmw_want;
        } else if (rcw_ok) {
            pl->mode = R5_RCW;
            want = pl->need;
        } else {
            pl->mode = R5_RECOVER;
            pl->missing = ((1u << g->n) - 1) & ~rd;
            if ((uint32_t)__builtin_popcount(pl->missing) > g->np)
                return -EIO;
            want = rd;
        }
        struct r5_ios v = {.n = 0};
        for (uint32_t b = 0; b < g->n; b++)
            if (want & (1u << b))
                r5_io_add(&v, r, g->slot[b], RK_OP_READ, 0, r5_blk(q, b), len, moff);
        uint32_t failed = r5_io_run(q, &v);
        if (!failed)
            return 0;
        pl->bad |= r5_blk_mask_of_slots(g, failed);
    }
}

/* Read-modify-write over the touched columns only: P ^= old ^ new (Q ^= g^k (old ^ new)), and
 * the new data is copied into the data buffers. Only the parity blocks that were read are
 * meaningful: raid6 updates Q only when it is written; P's buffer is updated either way (when P
 * is not written it is scratch). */
static void r5w_rmw(struct r5_req *q, const struct r5_geo *g, const struct r5_wwin *w,
                    const struct r5_plan *pl)
{
    uint32_t nd = g->nd;
    char *pbuf = r5_blk(q, nd), *qbuf = g->np == 2 ? r5_blk(q, nd + 1) : NULL;
    int npar = qbuf && (pl->pwrite & (1u << (nd + 1))) ? 2 : 1;
    if (!pl->pwrite)
        return;
    for (uint32_t k = 0; k < nd; k++) {
        if (!(pl->touched & (1u << k)))
            continue;
        uint64_t off = w->a[k] - w->lo, n = w->b[k] - w->a[k];
        char *d = r5_blk(q, k) + off;
        rk_parity_rmw(npar, (int)k, n, pbuf + off, npar == 2 ? qbuf + off : NULL, d, w->src[k]);
        memcpy(d, w->src[k], n);
    }
}

/* Reconstruct-write (and recover-first): assemble every data block of the window (read,
 * cached, or the new bytes themselves), rebuild what is missing, and compute the parity from
 * the data. Returns 0 or -EIO (recovery impossible). */
static int r5w_rcw(struct r5_req *q, const struct r5_geo *g, const struct r5_wwin *w,
                   struct r5_centry *ce, const struct r5_plan *pl)
{
    uint64_t lo = w->lo, len = w->hi - w->lo;
    uint32_t nd = g->nd;
    bool rcw = pl->mode == R5_RCW;
    void *data[RK_MAX_MEMBERS];
    if (pl->mode == R5_RECOVER && r5_recover_blocks(q, g, len, pl->missing))
        return -EIO;
    for (uint32_t k = 0; k < nd; k++) {
        uint32_t kb = 1u << k;
        if (rcw && (pl->full & kb)) {
            data[k] = (void *)w->src[k]; /* only read by the parity code */
            continue;
        }
        if (rcw && (pl->cv & kb)) {
            char *ck = ce->data + (uint64_t)k * q->r->l.g.chunk + lo;
            if (!(pl->touched & kb)) {
                data[k] = ck; /* only read by the parity code */
                continue;
            }
            memcpy(r5_blk(q, k), ck, len);
        }
        data[k] = r5_blk(q, k);
        if (pl->touched & kb)
            memcpy(r5_blk(q, k) + (w->a[k] - lo), w->src[k], w->b[k] - w->a[k]);
    }
    r5_parity_gen(g->np, nd, len, data, r5_blk(q, nd), g->np == 2 ? r5_blk(q, nd + 1) : NULL);
    return 0;
}

/* Write new data where written, the new parity, and (recover mode) the data blocks whose reads
 * failed (repair), in one batch; then update or drop the cache entry ce. Returns 0 or -EIO
 * when failed writes lost data. */
static int r5w_commit(struct r5_req *q, const struct r5_geo *g, const struct r5_wwin *w,
                      struct r5_centry *ce, const struct r5_plan *pl)
{
    struct raid_priv *r = q->r;
    uint64_t base = g->row * r->l.g.chunk, len = w->hi - w->lo;
    uint32_t wr = raid_slot_mask(r, RAID_STATES_WRITE);
    struct r5_ios v = {.n = 0};
    bool failed;
    for (uint32_t b = 0; b < g->n; b++) {
        uint32_t s = g->slot[b];
        if (!(wr & (1u << s)))
            continue;
        if (b >= g->nd || (pl->mode == R5_RECOVER && (pl->bad & (1u << b))))
            r5_io_add(&v, r, s, RK_OP_WRITE, q->wflags, r5_blk(q, b), len, base + w->lo);
        else if (pl->touched & (1u << b))
            r5_io_add(&v, r, s, RK_OP_WRITE, q->wflags, (void *)w->src[b], w->b[b] - w->a[b],
                      base + w->a[b]);
    }
    int ret = r5_io_write(q, &v, &failed);
    if (!ce)
        return ret;
    /* No parity written (a parity slot failed meanwhile): the buffers were never filled. */
    if (failed || pl->bad || pl->mode == R5_RECOVER || !pl->pwrite)
        r5c_forget(ce);
    else
        r5c_update(q, g, w, ce, pl->mode, pl->touched, pl->need, pl->cv, pl->full);
    return ret;
}

/* Write one window of one stripe (stripe lock held, q holds a buffer). ce (NULL: none) is the
 * stripe's cache entry: its valid chunks are not read by reconstruct-write (so a write that
 * completes a cached stripe reads nothing), and it is updated or dropped after. Between the
 * parity computation and the member writes, the partial parity log entry is made durable
 * (r5_ppl_log; nothing when the array has no log). */
static int r5_write_window(struct r5_req *q, const struct r5_geo *g, const struct r5_wwin *w,
                           struct r5_centry *ce)
{
    struct r5_plan pl = {.cv = r5c_known(ce, g->nd, w)};
    int ret = r5w_plan(q, g, w, &pl);
    if (ret)
        return ret;
    if (pl.mode == R5_RMW)
        r5w_rmw(q, g, w, &pl);
    else if ((ret = r5w_rcw(q, g, w, ce, &pl)))
        return ret;
    struct r5_ppl_tok tok;
    ret = r5_ppl_log(q, g, w, pl.touched, pl.pwrite, &tok);
    if (!ret)
        ret = r5w_commit(q, g, w, ce, &pl);
    r5_ppl_done(q, &tok);
    return ret;
}

/*
 * Whole stripes [row, row+count) from buf (count fits the work buffer and one io batch): parity
 * computed from the new data alone, then every member write of every stripe in one parallel
 * batch, so a large sequential write costs one round trip per batch, and no reads.
 */
static int r5_full_stripes(struct r5_req *q, const char *buf, uint64_t row, uint64_t count)
{
    struct raid_priv *r = q->r;
    uint64_t chunk = r->l.g.chunk;
    struct r5_ios v = {.n = 0};
    struct r5_geo g;
    stripe_lock_range(&q->p->locks, row, count);
    r5c_drop(q->p, row, count);
    uint32_t wr = raid_slot_mask(r, RAID_STATES_WRITE);
    for (uint64_t i = 0; i < count; i++) {
        r5_geo(&r->l, row + i, &g);
        const char *src = buf + i * chunk * g.nd;
        void *data[RK_MAX_MEMBERS];
        char *par = r5_blk(q, (uint32_t)(i * g.np));
        for (uint32_t k = 0; k < g.nd; k++)
            data[k] = (void *)(src + k * chunk); /* only read by the parity code */
        r5_parity_gen(g.np, g.nd, chunk, data, par, par + q->p->win);
        for (uint32_t b = 0; b < g.n; b++) {
            if (!(wr & (1u << g.slot[b])))
                continue;
            void *from = b < g.nd ? data[b] : par + (uint64_t)(b - g.nd) * q->p->win;
            r5_io_add(&v, r, g.slot[b], RK_OP_WRITE, q->wflags, from, chunk, (row + i) * chunk);
        }
    }
    /* Logged (header only) before any member write: it supersedes the stripes' older entries. */
    struct r5_ppl_tok tok;
    int ret = r5_ppl_log_stream(q, row, count, &tok);
    if (!ret)
        ret = r5_io_write(q, &v, NULL);
    r5_ppl_done(q, &tok);
    stripe_unlock_range(&q->p->locks, row, count);
    return ret;
}

/* Cut the part [soff, soff+n) of one stripe into the touched columns [ca[k], cb[k]) of each
 * data chunk; returns the union [*hlo, *hhi) of those columns. */
static void r5_columns(const struct raid_layout *l, uint64_t soff, uint64_t n, uint64_t *ca,
                       uint64_t *cb, uint64_t *hlo, uint64_t *hhi)
{
    uint64_t chunk = l->g.chunk;
    uint32_t nd = l->g.members - r5_nparity(l);
    *hlo = chunk;
    *hhi = 0;
    for (uint32_t k = 0; k < nd; k++) {
        uint64_t s = k * chunk, e = s + chunk;
        uint64_t a = soff > s ? soff : s, b = soff + n < e ? soff + n : e;
        if (a < b) {
            ca[k] = a - s;
            cb[k] = b - s;
            *hlo = ca[k] < *hlo ? ca[k] : *hlo;
            *hhi = cb[k] > *hhi ? cb[k] : *hhi;
        } else {
            ca[k] = cb[k] = 0;
        }
    }
}

/* Write buf (NULL: zeros) over array range [off, off+n), which lies inside one stripe, window
 * by window under the stripe lock (q holds a buffer). stream: the request continues a
 * sequential stream (r5c_stream): a sub-chunk piece first fills the stripe's cache entry. */
static int r5_write_stripe(struct r5_req *q, const char *buf, uint64_t n, uint64_t off, bool stream)
{
    const struct raid_layout *l = &q->r->l;
    uint64_t chunk = l->g.chunk, win = q->p->wstep, sbytes = r5_stripe_bytes(l);
    uint64_t row = off / sbytes, soff = off % sbytes;
    uint64_t ca[RK_MAX_MEMBERS], cb[RK_MAX_MEMBERS], hlo, hhi;
    struct r5_geo g;
    int ret = 0;

    r5_columns(l, soff, n, ca, cb, &hlo, &hhi);
    r5_geo(l, row, &g);
    stripe_lock_range(&q->p->locks, row, 1);
    struct r5_centry *ce = NULL;
    if (r5c_usable(q->r, &g))
        ce = r5c_get(q->p, row, true);
    else
        r5c_drop(q->p, row, 1);
    if (ce && stream && n < chunk) {
        uint32_t touched = 0;
        for (uint32_t k = 0; k < g.nd; k++)
            touched |= ca[k] < cb[k] ? 1u << k : 0;
        r5c_fill(q, &g, ce, touched);
    }
    for (uint64_t lo = hlo; lo < hhi && !ret; lo += win) {
        struct r5_wwin w;
        w.lo = lo;
        w.hi = lo + win < hhi ? lo + win : hhi;
        for (uint32_t k = 0; k < g.nd; k++) {
            uint64_t a = ca[k] > w.lo ? ca[k] : w.lo, b = cb[k] < w.hi ? cb[k] : w.hi;
            if (a >= b) {
                w.a[k] = w.b[k] = w.lo;
                w.src[k] = NULL;
                continue;
            }
            w.a[k] = a;
            w.b[k] = b;
            /* Array offset of column a of chunk k, relative to the request start. */
            uint64_t rel = row * sbytes + k * chunk + a - off;
            w.src[k] = buf ? buf + rel : q->p->zero;
        }
        ret = r5_write_window(q, &g, &w, ce);
    }
    if (ret)
        r5c_forget(ce);
    r5c_put(q->p, ce);
    stripe_unlock_range(&q->p->locks, row, 1);
    return ret;
}

int r5_write(struct r5_req *q, const char *buf, uint64_t len, uint64_t off, bool stream)
{
    const struct raid_layout *l = &q->r->l;
    uint64_t chunk = l->g.chunk, sbytes = r5_stripe_bytes(l);
    uint32_t members = l->g.members, np = r5_nparity(l);
    int ret = 0;
    stream = stream && buf;
    r5_req_buf(q);
    while (len) {
        uint64_t soff = off % sbytes, n;
        if (buf && soff == 0 && len >= sbytes && chunk <= q->p->win) {
            /* A run of whole stripes: as many per batch as parity buffers and ios allow. */
            uint64_t count = len / sbytes, max = (members + 2) / np;
            if (max > R5_BATCH_IOS / members)
                max = R5_BATCH_IOS / members;
            count = count < max ? count : max;
            n = count * sbytes;
            ret = r5_full_stripes(q, buf, off / sbytes, count);
        } else {
            n = sbytes - soff < len ? sbytes - soff : len;
            ret = r5_write_stripe(q, buf, n, off, stream);
        }
        if (ret)
            return ret;
        if (buf)
            buf += n;
        off += n;
        len -= n;
    }
    return 0;
}

/*
 * Whole stripes [row, row+count): zero data and parity on every writable slot with one member
 * write-zeroes each (the stripes are contiguous rows on every member). Zeros are consistent
 * parity (P and Q of zero data are zero), which member discard would not guarantee: a member
 * may keep old data on discard, so discard requests also zero.
 */
static int r5_zero_stripes(struct r5_req *q, uint64_t row, uint64_t count, uint32_t flags)
{
    struct raid_priv *r = q->r;
    uint64_t chunk = r->l.g.chunk;
    struct r5_ios v = {.n = 0};
    stripe_lock_range(&q->p->locks, row, count);
    r5c_drop(q->p, row, count);
    uint32_t wr = raid_slot_mask(r, RAID_STATES_WRITE);
    for (uint32_t s = 0; s < r->l.g.members; s++)
        if (wr & (1u << s))
            r5_io_add(&v, r, s, RK_OP_WRITE_ZEROES, flags, NULL, count * chunk, row * chunk);
    struct r5_ppl_tok tok;
    int ret = r5_ppl_log_full(q, row, count, &tok);
    if (!ret)
        ret = r5_io_write(q, &v, NULL);
    r5_ppl_done(q, &tok);
    stripe_unlock_range(&q->p->locks, row, count);
    return ret;
}

/* Whole stripes are zeroed on the members; the partial stripes at the ends are written with
 * zeros (write-zeroes) or left alone (discard: advisory, and a partial-stripe discard could only
 * break parity). */
int r5_zero(struct r5_req *q, uint64_t len, uint64_t off, bool zero, uint32_t flags)
{
    uint64_t sbytes = r5_stripe_bytes(&q->r->l);
    uint64_t end = off + len;
    uint64_t first = (off + sbytes - 1) / sbytes, last = end / sbytes; /* whole: [first, last) */
    int ret = 0;
    if (first >= last)
        return zero ? r5_write(q, NULL, len, off, false) : 0;
    if (zero && off < first * sbytes)
        ret = r5_write(q, NULL, first * sbytes - off, off, false);
    /* In pieces whose row count fits a whole-stripe log entry (u32). */
    for (uint64_t row = first; !ret && row < last;) {
        uint64_t count = last - row < (1u << 30) ? last - row : (1u << 30);
        ret = r5_zero_stripes(q, row, count, zero ? flags : 0);
        row += count;
    }
    if (!ret && zero && last * sbytes < end)
        ret = r5_write(q, NULL, end - last * sbytes, last * sbytes, false);
    return ret;
}
