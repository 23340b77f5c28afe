/*
 * The partial parity log of raid5/raid6 (docs/FORMAT.md "Partial parity log"; md's
 * "Partial Parity Log" design, extended to raid6).
 *
 * Write step: before the member writes of a window that is not a whole-stripe write, an entry
 * (stripe, modified ranges, partial parity of the unmodified data for P and, raid6, for Q) is
 * written with FUA on every parity member the window updates. Only then are data and parity
 * written (r5_write_window). Whole-stripe writes (and zeroing) log one header-only entry per
 * batch (r5_ppl_log_full, RK_PPL_FULL), which supersedes the older entries of those stripes.
 *
 * Ring: each member's region is its head block plus a ring of entries. An entry stays live
 * until its stripe write completed AND a member flush made that write durable; the retirement
 * point (every entry with seq < retired is void) is made durable in the head block before the
 * ring reuses any of the space, so every entry the replay could need is still intact. When an
 * entry does not fit, the writer waits for the oldest entry to complete, flushes the members
 * and writes the new head (reclaim); seq numbers are global, so a raid6 entry has the same seq
 * on P's and Q's member. Entries also retire after every successful FLUSH (r5_ppl_flush_end)
 * and at the completion of a FUA write (durable at once), with a FUA head write.
 *
 * Replay (dirty start, before serving; raid5_ppl_replay.c, docs/FORMAT.md "Replay"): per
 * column, the latest live entry covering it decides.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "core/util.h"
#include "raid/raid5_int.h"
#include "raid/raid5_ppl.h"
#include "raid/raid5_ppl_int.h"

/* Wait for cond (lock held). */
static void ppl_wait(struct r5_ppl *L)
{
    L->waiters++;
    pthread_cond_wait(&L->cond, &L->lock);
    L->waiters--;
}

int r5_ppl_open(struct raid_priv *r, struct r5_priv *p)
{
    const struct rk_raid_geom *g = &r->l.g;
    p->wstep = p->win;
    if (!g->ppl_size)
        return 0;
    if (g->ppl_offset % RK_PPL_BLOCK || g->ppl_size % RK_PPL_BLOCK ||
        g->ppl_size < 16 * RK_PPL_BLOCK || g->ppl_offset < RK_PPL_BLOCK ||
        g->ppl_offset > g->data_offset || g->ppl_size > g->data_offset - g->ppl_offset ||
        !g->ppl_id) {
        rk_err("raid: partial parity log region [%" PRIu64 ", +%" PRIu64 ") invalid", g->ppl_offset,
               g->ppl_size);
        return -EINVAL;
    }
    struct r5_ppl *L = calloc(1, sizeof(*L));
    if (!L)
        return -ENOMEM;
    pthread_mutex_init(&L->lock, NULL);
    pthread_cond_init(&L->cond, NULL);
    for (int s = 0; s < RK_MAX_MEMBERS; s++)
        pthread_cond_init(&L->m[s].cond, NULL);
    L->id = g->ppl_id;
    L->off = g->ppl_offset;
    L->size = g->ppl_size;
    L->ring = g->ppl_size - RK_PPL_BLOCK;
    L->cap = (uint32_t)(L->ring / RK_PPL_BLOCK);
    L->next_seq = 1;
    const char *env = getenv("RAIDKIT_PPL_HASH");
    L->hash = !(env && strcmp(env, "0") == 0);
    env = getenv("RAIDKIT_PPL_WINDOW");
    L->win_on = !(env && strcmp(env, "0") == 0);
    if (sodium_init() < 0) {
        rk_err("raid: libsodium cannot start; partial parity log entries carry no digests");
        L->hash = false;
    }
    p->ppl = L;
    L->hbuf = rk_buf_alloc((size_t)g->members * RK_PPL_BLOCK);
    if (!L->hbuf)
        return -ENOMEM;
    for (uint32_t s = 0; s < g->members; s++)
        if (!(L->m[s].q = calloc(L->cap, sizeof(struct ppl_ent))) ||
            !(L->m[s].stage = rk_buf_alloc(L->ring)))
            return -ENOMEM;
    /* An entry (header + partial parities of one window) takes at most a quarter of the ring,
     * so the ring always holds several in flight. */
    uint64_t np = r5_nparity(&r->l), room = L->ring / 4 - RK_PPL_BLOCK;
    uint64_t step = room / np / RK_PPL_BLOCK * RK_PPL_BLOCK;
    step = step < RK_PPL_BLOCK ? RK_PPL_BLOCK : step;
    if (step < p->wstep)
        p->wstep = step;
    uint64_t sbytes = g->chunk * (g->members - np);
    L->win_rows = PPL_WIN_BYTES / sbytes > g->members ? PPL_WIN_BYTES / sbytes : g->members;
    return 0;
}

void r5_ppl_close(struct r5_priv *p)
{
    struct r5_ppl *L = p->ppl;
    if (!L)
        return;
    for (int s = 0; s < RK_MAX_MEMBERS; s++) {
        free(L->m[s].q);
        free(L->m[s].stage);
    }
    free(L->hbuf);
    for (int s = 0; s < RK_MAX_MEMBERS; s++)
        pthread_cond_destroy(&L->m[s].cond);
    pthread_cond_destroy(&L->cond);
    pthread_mutex_destroy(&L->lock);
    free(L);
    p->ppl = NULL;
}

/* Where an entry of size bytes fits in ring m (true and *pos), if it does. */
static bool ring_fit(const struct r5_ppl *L, const struct ppl_ring *m, uint64_t size, uint64_t *pos)
{
    if (m->count >= L->cap)
        return false;
    if (m->count == 0) {
        *pos = m->head + size <= L->ring ? m->head : 0;
        return true;
    }
    uint64_t tail = m->q[m->first].pos;
    if (m->head > tail) {
        if (m->head + size <= L->ring) {
            *pos = m->head;
            return true;
        }
        *pos = 0;
        return size <= tail;
    }
    *pos = m->head;
    return m->head + size <= tail;
}

int r5_ppl_write_heads(struct raid_priv *r, struct r5_ppl *L, uint64_t *upto)
{
    struct rk_io io[RK_MAX_MEMBERS];
    uint32_t slot[RK_MAX_MEMBERS];
    int n = 0, nfail = 0;
    for (uint32_t s = 0; s < r->l.g.members; s++) {
        if (!upto[s])
            continue;
        struct rk_ppl_head h = {.id = L->id, .retired = upto[s], .haskey = true};
        memcpy(h.key, L->key, sizeof(h.key));
        char *b = L->hbuf + (size_t)s * RK_PPL_BLOCK;
        rk_ppl_head_encode(&h, (uint8_t *)b);
        rk_io_init(&io[n], r->members[s], RK_OP_WRITE, b, RK_PPL_BLOCK, L->off, RK_WRITE_FUA);
        slot[n++] = s;
    }
    struct rk_io_batch bt;
    rk_io_batch_init(&bt);
    if (n && rk_io_run(&bt, io, n))
        for (int i = 0; i < n; i++)
            if (io[i].result) {
                raid_fail(r, slot[i], io[i].result);
                upto[slot[i]] = 0;
                nfail++;
            }
    rk_io_batch_destroy(&bt);
    return nfail;
}

/* Seq of the oldest entry of m not yet complete (next_seq when all are). */
static uint64_t ring_first_open(const struct r5_ppl *L, const struct ppl_ring *m)
{
    for (uint32_t i = 0; i < m->count; i++) {
        const struct ppl_ent *e = &m->q[(m->first + i) % L->cap];
        if (!e->done)
            return e->seq;
    }
    return L->next_seq;
}

/* Write the retirement points upto[] (0: leave that ring) into the heads of the writable
 * members and drop the retired entries. Lock held and busy set by the caller; the lock is
 * dropped during the I/O. Every entry below upto[s] must be complete and flushed. */
static void ppl_retire(struct raid_priv *r, struct r5_ppl *L, uint64_t *upto)
{
    uint32_t n = r->l.g.members;
    /* A ring not adopted yet (a member that joined since) keeps its entries: its head is
     * written by the adoption, above every seq. */
    for (uint32_t s = 0; s < n; s++)
        if (!ppl_ring_current(r, &L->m[s], s))
            upto[s] = 0;
    pthread_mutex_unlock(&L->lock);
    uint32_t wr = raid_slot_mask(r, RAID_STATES_WRITE);
    for (uint32_t s = 0; s < n; s++)
        if (!(wr & (1u << s)) || upto[s] <= L->m[s].retired)
            upto[s] = 0;
    r5_ppl_write_heads(r, L, upto);
    pthread_mutex_lock(&L->lock);
    for (uint32_t s = 0; s < n; s++) {
        struct ppl_ring *m = &L->m[s];
        if (!upto[s] || upto[s] <= m->retired)
            continue;
        m->retired = upto[s];
        while (m->count && m->q[m->first].seq < upto[s]) {
            m->first = (m->first + 1) % L->cap;
            m->count--;
        }
    }
}

/* Flush every writable member (so every completed stripe write is durable), write the new
 * retirement points into the heads and drop the retired entries. Lock held, not busy; the lock
 * is dropped during the I/O (busy keeps other reclaims and adoptions out). */
static void ppl_reclaim_work(struct raid_priv *r, struct r5_ppl *L)
{
    uint64_t upto[RK_MAX_MEMBERS];
    uint32_t n = r->l.g.members;
    L->busy = true;
    ppl_win_close_all(L); /* their entries complete once their writes are done */
    L->win_made = 0;
    for (uint32_t s = 0; s < n; s++)
        upto[s] = ring_first_open(L, &L->m[s]);
    pthread_mutex_unlock(&L->lock);
    raid_members_round(r, RK_OP_FLUSH, NULL, 0, 0, 0); /* in parallel; a failed slot is failed */
    pthread_mutex_lock(&L->lock);
    ppl_retire(r, L, upto);
    L->busy = false;
    ppl_wake(L);
}

/* Make room for a writer that does not fit in ring blocked (lock held; returns with it held,
 * after waiting or working): wait while another thread is busy or while the oldest entry of
 * blocked is still in flight, else reclaim. Returns 0, or -EIO when a reclaim retired nothing
 * of blocked (its member's flush or head write failed, e.g. every member lost power): the ring
 * can never drain, so the writer must fail instead of retrying forever. */
static int ppl_reclaim(struct raid_priv *r, struct r5_ppl *L, const struct ppl_ring *blocked)
{
    ppl_win_close_all(L); /* an open window's entry would never complete */
    if (L->busy || (blocked->count && !blocked->q[blocked->first].done)) {
        ppl_wait(L);
        return 0;
    }
    uint64_t retired = blocked->retired;
    ppl_reclaim_work(r, L);
    return blocked->retired == retired ? -EIO : 0;
}

/* Bytes of ring m in use (from its oldest live entry to its head). */
static uint64_t ring_used(const struct r5_ppl *L, const struct ppl_ring *m)
{
    if (!m->count)
        return 0;
    uint64_t tail = m->q[m->first].pos;
    return m->head > tail ? m->head - tail : L->ring - tail + m->head;
}

/* Ring slot belongs to another member than the one this session set up (a member added since,
 * maybe one that was in the array before): seq numbers continue above every entry its log
 * holds, its head voids them all, and its ring starts empty. Lock held, not busy; returns with
 * it held. Returns 0, or -EIO when the head write failed (the slot was failed; its ring stays
 * unadopted). */
static int ppl_adopt(struct raid_priv *r, struct r5_ppl *L, uint32_t slot)
{
    struct rk_dev *dev = r->members[slot];
    uint32_t joins = atomic_load(&r->joins[slot]);
    struct ppl_scan sc = {.next = 1};
    L->busy = true;
    pthread_mutex_unlock(&L->lock);
    r5_ppl_scan_slot(r, L, slot, &sc);
    free(sc.buf[slot]);
    free(sc.f);
    pthread_mutex_lock(&L->lock);
    if (sc.next > L->next_seq)
        L->next_seq = sc.next;
    uint64_t retired = L->next_seq, upto[RK_MAX_MEMBERS] = {0};
    upto[slot] = retired;
    pthread_mutex_unlock(&L->lock);
    int ret = r5_ppl_write_heads(r, L, upto) ? -EIO : 0;
    pthread_mutex_lock(&L->lock);
    struct ppl_ring *m = &L->m[slot];
    m->dev = ret ? NULL : dev;
    m->joins = joins;
    m->retired = retired;
    m->head = m->first = m->count = 0;
    L->busy = false;
    ppl_wake(L);
    ppl_ring_wake(m); /* their entries on this ring are gone */
    return ret;
}

int r5_ppl_join(struct raid_priv *r, uint32_t slot)
{
    struct r5_priv *p = r->level_priv;
    struct r5_ppl *L = p ? p->ppl : NULL;
    int ret = 0;
    if (!L)
        return 0;
    pthread_mutex_lock(&L->lock);
    ppl_win_close_all(L); /* the slot's member changed: no window is taken over it again */
    /* Not only at its first entry (r5_ppl_alloc): the member may become readable (its rebuild
     * ends) before any entry goes to it, and a returning member may be the same device. */
    while (L->on && !ret && !ppl_ring_current(r, &L->m[slot], slot) &&
           (raid_slot_mask(r, RAID_STATES_WRITE) & (1u << slot))) {
        if (L->busy)
            ppl_wait(L);
        else
            ret = ppl_adopt(r, L, slot);
    }
    pthread_mutex_unlock(&L->lock);
    return ret;
}

/* Remove slots[i] from slots[0..*n-1] (order kept). */
static void ppl_drop_slot(uint32_t *slots, int *n, int i)
{
    memmove(&slots[i], &slots[i + 1], (size_t)(*n - i - 1) * sizeof(*slots));
    (*n)--;
}

/* Reserve an entry of size bytes on the rings of slots[0..*n-1] (waiting for room); returns 0
 * with its seq and the position on each, or -EIO (nothing reserved) when a full ring cannot be
 * reclaimed (ppl_reclaim) or a ring cannot be adopted. A slot whose ring is full, or whose
 * adoption failed, and that is no longer writable (it failed after the caller chose it, or by
 * its head write: its ring cannot be used, and the write skips its parity, r5w_commit) is
 * dropped from slots[] and *n instead. */
int r5_ppl_alloc(struct raid_priv *r, struct r5_ppl *L, uint32_t *slots, int *n, uint64_t size,
                 int64_t prow, uint64_t *seq, uint64_t *pos)
{
    pthread_mutex_lock(&L->lock);
    for (int i = 0; i < *n;) {
        struct ppl_ring *m = &L->m[slots[i]];
        if (!ppl_ring_current(r, m, slots[i])) {
            uint32_t bit = 1u << slots[i];
            if (L->busy) {
                ppl_wait(L);
            } else if (ppl_adopt(r, L, slots[i])) {
                /* Its head write failed (and failed the slot): retrying would loop forever. */
                if (raid_slot_mask(r, RAID_STATES_WRITE) & bit) {
                    pthread_mutex_unlock(&L->lock);
                    return -EIO;
                }
                ppl_drop_slot(slots, n, i);
            }
            i = 0;
        } else if (!ring_fit(L, m, size, &pos[i])) {
            uint32_t bit = 1u << slots[i];
            if (!(raid_slot_mask(r, RAID_STATES_WRITE) & bit) || ppl_reclaim(r, L, m)) {
                /* Failed before, or by the reclaim's flush or head write: no entry there. */
                if (raid_slot_mask(r, RAID_STATES_WRITE) & bit) {
                    pthread_mutex_unlock(&L->lock);
                    return -EIO;
                }
                ppl_drop_slot(slots, n, i);
            }
            i = 0;
        } else {
            i++;
        }
    }
    *seq = L->next_seq++;
    for (int i = 0; i < *n; i++) {
        struct ppl_ring *m = &L->m[slots[i]];
        m->q[(m->first + m->count++) % L->cap] =
            (struct ppl_ent){.seq = *seq,
                             .pos = pos[i],
                             .size = size,
                             .ws = PPL_FILLING,
                             .partial = prow >= 0,
                             .prow = prow >= 0 ? (uint64_t)prow : 0};
        m->head = pos[i] + size;
    }
    pthread_mutex_unlock(&L->lock);
    return 0;
}

/* Seq of the oldest entry of m not yet durable (next_seq when all are). */
static uint64_t ring_first_volatile(const struct r5_ppl *L, const struct ppl_ring *m)
{
    for (uint32_t i = 0; i < m->count; i++) {
        const struct ppl_ent *e = &m->q[(m->first + i) % L->cap];
        if (!e->durable)
            return e->seq;
    }
    return L->next_seq;
}

/* Retire, without a member flush, the durable prefix of the rings of slots[0..n-1] (all rings
 * when slots is NULL) that has one: a FUA head write each. Lock held, not busy. */
static void ppl_retire_durable(struct raid_priv *r, struct r5_ppl *L, const uint32_t *slots, int n)
{
    uint64_t upto[RK_MAX_MEMBERS] = {0};
    bool any = false;
    for (int i = 0; i < n; i++) {
        uint32_t s = slots ? slots[i] : (uint32_t)i;
        const struct ppl_ring *m = &L->m[s];
        if (ppl_ring_current(r, m, s) && m->count && m->q[m->first].durable) {
            upto[s] = ring_first_volatile(L, m);
            any = true;
        }
    }
    if (!any)
        return;
    L->busy = true;
    ppl_retire(r, L, upto);
    L->busy = false;
    ppl_wake(L);
}

void r5_ppl_done(struct r5_req *q, const struct r5_ppl_tok *tok)
{
    struct r5_ppl *L = q->p->ppl;
    bool fua = q->wflags & RK_WRITE_FUA;
    if (!L || !tok->n)
        return;
    pthread_mutex_lock(&L->lock);
    if (tok->win) { /* the window's entry completes when it closed and its last write ended */
        ppl_win_put(L, &L->win[tok->win - 1]);
        fua = false;
    }
    for (int i = 0; i < tok->n && !tok->win; i++) {
        struct ppl_ent *e = r5_ppl_ring_ent(L, &L->m[tok->slot[i]], tok->seq);
        if (e) {
            e->done = true;
            e->durable = fua;
        }
    }
    ppl_wake(L);
    /* Reclaim early, before writers have to wait: once a ring is half full and its oldest entry
     * is complete, this writer (its own stripe write is done) flushes and retires. */
    bool reclaimed = false;
    for (int i = 0; i < tok->n && !L->busy; i++) {
        const struct ppl_ring *m = &L->m[tok->slot[i]];
        if (m->count && m->q[m->first].done && ring_used(L, m) > L->ring / 2) {
            ppl_reclaim_work(q->r, L);
            reclaimed = true;
            break;
        }
    }
    /* Each window's entry makes the replay recompute its rows: a reclaim after PPL_WIN_RECLAIM
     * windows bounds that work (it closes them; the next run opens a new one). */
    if (!reclaimed && !L->busy && L->win_made >= PPL_WIN_RECLAIM) {
        ppl_reclaim_work(q->r, L);
        reclaimed = true;
    }
    /* A FUA write is durable at its reply: retire it (with the durable entries before it) at
     * once, so a replay never needs it. */
    if (fua && !reclaimed && !L->busy)
        ppl_retire_durable(q->r, L, tok->slot, tok->n);
    pthread_mutex_unlock(&L->lock);
}

/* The partial parities of window w: the new parity (already in q's P and Q buffers) minus the
 * new data of every touched range, PP into pp and (np == 2) PQ into pq. */
static void ppl_partial(struct r5_req *q, const struct r5_geo *g, const struct r5_wwin *w,
                        uint32_t touched, char *pp, char *pq)
{
    uint32_t nd = g->nd;
    uint64_t len = w->hi - w->lo;
    if (pp)
        memcpy(pp, r5_blk(q, nd), len);
    if (pq)
        memcpy(pq, r5_blk(q, nd + 1), len);
    for (uint32_t k = 0; k < nd; k++) {
        if (!(touched & (1u << k)))
            continue;
        uint64_t off = w->a[k] - w->lo, n = w->b[k] - w->a[k];
        /* Minus the new data: in GF(2^8) subtracting is adding, P's term is D, Q's g^k·D. */
        if (pp)
            rk_parity_xor_into(n, pp + off, w->src[k]);
        if (pq)
            rk_parity_mul_into((int)k, n, pq + off, w->src[k]);
    }
}

/*
 * Each parity member gets the entry of its own parity: P's member PP (RK_PPL_HAS_P), Q's member
 * PQ (RK_PPL_HAS_Q), with the same seq, encoded in place in the rings' stage buffers and made
 * durable by r5_ppl_commit (possibly in one member write with other writers' entries).
 */
int r5_ppl_log(struct r5_req *q, const struct r5_geo *g, const struct r5_wwin *w, uint32_t touched,
               uint32_t pwrite, struct r5_ppl_tok *tok)
{
    struct r5_ppl *L = q->p->ppl;
    struct raid_priv *r = q->r;
    uint32_t nt = 0, blk[2];
    tok->n = 0;
    tok->win = 0;
    if (!L || !L->on || !touched)
        return 0;
    struct rk_ppl_entry e = {
        .id = L->id, .row = g->row, .lo = (uint32_t)w->lo, .len = (uint32_t)(w->hi - w->lo)};
    for (uint32_t b = g->nd; b < g->n; b++) {
        if (!(pwrite & (1u << b)))
            continue;
        blk[nt] = b;
        tok->slot[nt++] = g->slot[b];
    }
    if (!nt)
        return 0;
    for (uint32_t k = 0; k < g->nd; k++)
        if (touched & (1u << k))
            e.r[e.nranges++] = (struct rk_ppl_range){k, (uint32_t)w->a[k], (uint32_t)w->b[k]};
    e.flags = RK_PPL_HAS_P;
    uint32_t hashed = r5_ppl_digests(L, w, touched, g->nd, &e);
    uint64_t size = rk_ppl_entry_bytes(&e), pos[RK_MAX_MEMBERS];
    int na = (int)nt;
    if (r5_ppl_alloc(r, L, tok->slot, &na, size, (int64_t)g->row, &e.seq, pos))
        return -EIO; /* tok->n is 0: nothing to release */
    /* A parity slot dropped by r5_ppl_alloc (failed meanwhile): the rest keep their order. */
    for (uint32_t i = 0, j = 0; i < nt; i++)
        if (j < (uint32_t)na && tok->slot[j] == g->slot[blk[i]])
            blk[j++] = blk[i];
    nt = (uint32_t)na;
    if (!nt) /* every parity slot failed meanwhile: no parity is written, nothing to log */
        return 0;
    tok->seq = e.seq;
    tok->n = (int)nt;
    /* The ranges we reserved are ours alone until r5_ppl_commit marks them READY. */
    char *buf[2] = {NULL, NULL}, *pp = NULL, *pq = NULL;
    for (uint32_t i = 0; i < nt; i++) {
        buf[i] = L->m[tok->slot[i]].stage + pos[i];
        if (blk[i] == g->nd)
            pp = buf[i] + RK_PPL_BLOCK;
        else
            pq = buf[i] + RK_PPL_BLOCK;
    }
    ppl_partial(q, g, w, touched, pp, pq);
    for (uint32_t i = 0; i < nt; i++) {
        char *b = buf[i];
        e.flags = (blk[i] == g->nd ? RK_PPL_HAS_P : RK_PPL_HAS_Q) | hashed;
        memset(b + RK_PPL_BLOCK + e.len, 0, size - RK_PPL_BLOCK - e.len);
        rk_ppl_entry_encode(&e, (uint8_t *)b, b + RK_PPL_BLOCK);
    }
    pthread_mutex_lock(&L->lock);
    for (uint32_t i = 0; i < nt; i++) {
        struct ppl_ent *x = r5_ppl_ring_ent(L, &L->m[tok->slot[i]], e.seq);
        if (x) /* NULL: adopted meanwhile (r5_ppl_commit reports the slot failed) */
            x->ws = PPL_READY;
    }
    ppl_win_cut(L, g->row, 1, NULL); /* no older window may write this stripe after this entry */
    pthread_mutex_unlock(&L->lock);
    /* A parity member that cannot take its log entry is failed: its parity is not written. */
    if (!r5_ppl_commit(r, L, tok->slot, (int)nt, e.seq))
        return 0;
    return r5_alive(r) ? 0 : -EIO;
}

void r5_ppl_flush_begin(struct raid_priv *r, uint64_t *mark)
{
    struct r5_priv *p = r->level_priv;
    struct r5_ppl *L = p ? p->ppl : NULL;
    for (uint32_t s = 0; s < RK_MAX_MEMBERS; s++)
        mark[s] = 0;
    if (!L)
        return;
    pthread_mutex_lock(&L->lock);
    ppl_win_close_all(L); /* so this flush can retire their entries */
    for (uint32_t s = 0; L->on && s < r->l.g.members; s++)
        mark[s] = ring_first_open(L, &L->m[s]);
    pthread_mutex_unlock(&L->lock);
}

void r5_ppl_flush_end(struct raid_priv *r, const uint64_t *mark)
{
    struct r5_priv *p = r->level_priv;
    struct r5_ppl *L = p ? p->ppl : NULL;
    if (!L)
        return;
    pthread_mutex_lock(&L->lock);
    /* Every entry below its ring's mark was complete before this flush began: durable now. A
     * ring with no durable oldest entry writes nothing (an idle array's flushes cost nothing);
     * a thread reclaiming or adopting meanwhile retires on its own. */
    for (uint32_t s = 0; s < r->l.g.members; s++) {
        struct ppl_ring *m = &L->m[s];
        for (uint32_t k = 0; k < m->count; k++) {
            struct ppl_ent *e = &m->q[(m->first + k) % L->cap];
            if (e->seq >= mark[s])
                break;
            e->durable = true;
        }
    }
    if (!L->busy)
        ppl_retire_durable(r, L, NULL, (int)r->l.g.members);
    pthread_mutex_unlock(&L->lock);
}
