/*
 * The partial parity log's step for whole-stripe writes (docs/FORMAT.md "Partial parity log",
 * docs/ARCHITECTURE.md "Durability"): a header-only entry (RK_PPL_FULL) of the rows, durable
 * before their member writes, as md's PPL logs full-stripe writes.
 *
 * Log windows. A sequential stream of full-stripe writes would pay one ordered FUA log write
 * per request (on an HDD a seek to the log region and back). Instead, a run that continues a
 * recent run opens a window: one entry covering rows [row, row + win_rows) ahead of it (32 MiB
 * of array data), and the stream's next runs inside it log nothing, they only wait until that
 * entry is durable. Covering rows that are never written keeps them consistent: the replay
 * recomputes a whole-stripe entry's rows from their data, or refuses them on a degraded start
 * (FORMAT.md "Replay"), whatever they hold; but it costs availability there (a degraded dirty
 * start is refused for them, and a partial entry logged later into them is not provable
 * without the window's rows' history), and a window never covers a row with an older live
 * partial entry (win_clip: the window would supersede the partial parity that repairs it, so a
 * degraded start would be refused there; availability, not safety).
 * What the replay relies on is that, per row, the seq order of the live entries is the order
 * of the writes, against every entry that is not a whole-stripe one (between two whole-stripe
 * entries the order does not change the replay's result, so windows may overlap); so any other
 * entry of a row (a partial-stripe write, zeroing, an exact whole-stripe entry) cuts that row
 * out of every window when it is logged (ppl_win_cut), under the row's stripe lock, which
 * every write under a window holds as well.
 * A window is only taken while its entry's members are still the slots' members (the same devices,
 * none of which left and came back since: r->joins). A window closes at
 * every member flush (client FLUSH, bitmap cleaner), at every reclaim, every PPL_WIN_RECLAIM
 * windows and when its stream moves on; its entry is complete (and retires like any other) once it
 * is closed and the last write under it ended.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include "raid/raid5_int.h"
#include "raid/raid5_ppl.h"
#include "raid/raid5_ppl_int.h"

/* The slots a whole-stripe entry of rows [row, row + count) goes to: the writable parity
 * members of those rows, every writable member once count >= members. */
static uint32_t full_slots(struct raid_priv *r, uint64_t row, uint64_t count)
{
    uint32_t wr = raid_slot_mask(r, RAID_STATES_WRITE), slots = 0;
    if (count >= r->l.g.members)
        return wr;
    for (uint64_t i = 0; i < count; i++) {
        struct r5_geo g;
        r5_geo(&r->l, row + i, &g);
        for (uint32_t b = g.nd; b < g.n; b++)
            slots |= wr & (1u << g.slot[b]);
    }
    return slots;
}

static void tok_slots(struct r5_ppl_tok *tok, uint32_t mask)
{
    tok->n = 0;
    for (uint32_t s = 0; s < RK_MAX_MEMBERS; s++)
        if (mask & (1u << s))
            tok->slot[tok->n++] = s;
}

/* The members window w's entry is on are still the ones a new entry would go to. */
static bool win_members_same(struct raid_priv *r, const struct ppl_win *w)
{
    if (w->slots != full_slots(r, w->row, w->span))
        return false;
    for (uint32_t s = 0; s < RK_MAX_MEMBERS; s++)
        if ((w->slots & (1u << s)) &&
            (w->dev[s] != r->members[s] || w->joins[s] != atomic_load(&r->joins[s])))
            return false;
    return true;
}

/* Window w is closed and nothing runs under it: its entry is complete. Lock held. */
static void win_finish(struct r5_ppl *L, struct ppl_win *w)
{
    for (uint32_t s = 0; w->seq && s < RK_MAX_MEMBERS; s++) {
        struct ppl_ent *e = (w->slots & (1u << s)) ? r5_ppl_ring_ent(L, &L->m[s], w->seq) : NULL;
        if (e) /* NULL: that ring was adopted meanwhile */
            e->done = true;
    }
    *w = (struct ppl_win){0};
    ppl_wake(L);
}

static void win_close(struct r5_ppl *L, struct ppl_win *w)
{
    if (!w->open)
        return;
    w->open = false;
    if (!w->holds)
        win_finish(L, w);
}

void ppl_win_close_all(struct r5_ppl *L)
{
    for (int i = 0; i < PPL_NWIN; i++)
        win_close(L, &L->win[i]);
}

void ppl_win_put(struct r5_ppl *L, struct ppl_win *w)
{
    if (--w->holds == 0 && !w->open)
        win_finish(L, w);
}

void ppl_win_cut(struct r5_ppl *L, uint64_t row, uint64_t nrows, const struct ppl_win *keep)
{
    for (int i = 0; i < PPL_NWIN; i++) {
        struct ppl_win *w = &L->win[i];
        /* A window being logged is cut too: its seq may be older than this entry's. */
        if (w == keep || !w->used || row + nrows <= w->ulo || row >= w->uhi)
            continue;
        uint64_t before = row > w->ulo ? row - w->ulo : 0;
        uint64_t after = w->uhi > row + nrows ? w->uhi - row - nrows : 0;
        if (before >= after) /* keep the larger side the cut rows leave */
            w->uhi = row > w->ulo ? row : w->ulo;
        else
            w->ulo = row + nrows;
        if (w->ulo >= w->uhi)
            win_close(L, w);
    }
}

/* End of window rows [row, end) once its entry has seq: the first row at or after from with a
 * live partial entry older than seq. The window must not cover it: at replay a whole-stripe
 * entry supersedes the older entries of its rows, so a partial write still in flight there
 * would lose the partial parity that repairs its stripe. (Rows before from are the opening
 * run's own, whose stripe locks it holds: every older write there has ended, as for an exact
 * entry.) Lock held. */
static uint64_t win_clip(const struct r5_ppl *L, uint32_t members, uint64_t seq, uint64_t from,
                         uint64_t end)
{
    for (uint32_t s = 0; s < members; s++) {
        const struct ppl_ring *m = &L->m[s];
        for (uint32_t k = 0; k < m->count; k++) {
            const struct ppl_ent *e = &m->q[(m->first + k) % L->cap];
            if (e->partial && e->seq < seq && e->prow >= from && e->prow < end)
                end = e->prow;
        }
    }
    return end;
}

/*
 * Log one header-only entry of rows [row, row + nrows) and wait until it is durable. w: the
 * window it opens (reserved by the caller: used, its rows, one hold; count: the opening run's
 * rows), or NULL for an exact entry. Either cuts its rows out of the other windows.
 */
static int full_entry(struct r5_req *q, uint64_t row, uint64_t count, uint64_t nrows,
                      struct ppl_win *w, struct r5_ppl_tok *tok)
{
    struct r5_ppl *L = q->p->ppl;
    struct raid_priv *r = q->r;
    struct rk_ppl_entry e = {.id = L->id,
                             .row = row,
                             .len = r->l.g.chunk,
                             .flags = RK_PPL_FULL,
                             .nrows = (uint32_t)nrows};
    uint64_t pos[RK_MAX_MEMBERS];
    tok_slots(tok, full_slots(r, row, nrows));
    int nt = tok->n, ret = 0;
    tok->n = 0;
    if (nt && r5_ppl_alloc(r, L, tok->slot, &nt, RK_PPL_BLOCK, -1, &e.seq, pos))
        ret = -EIO;   /* the array was lost */
    if (ret || !nt) { /* nt 0: no writable parity slot, nothing to log */
        if (w) {
            pthread_mutex_lock(&L->lock);
            *w = (struct ppl_win){0};
            pthread_mutex_unlock(&L->lock);
        }
        return ret;
    }
    tok->seq = e.seq;
    tok->n = nt;
    if (w) {
        pthread_mutex_lock(&L->lock);
        e.nrows = (uint32_t)(win_clip(L, r->l.g.members, e.seq, row + count, row + nrows) - row);
        w->end = row + e.nrows;
        w->uhi = w->uhi < w->end ? w->uhi : w->end;
        w->ulo = w->ulo < w->uhi ? w->ulo : w->uhi;
        pthread_mutex_unlock(&L->lock);
    }
    for (int i = 0; i < nt; i++) {
        char *b = L->m[tok->slot[i]].stage + pos[i];
        rk_ppl_entry_encode(&e, (uint8_t *)b, b + RK_PPL_BLOCK);
    }
    pthread_mutex_lock(&L->lock);
    uint32_t mask = 0;
    for (int i = 0; i < nt; i++) {
        struct ppl_ent *x = r5_ppl_ring_ent(L, &L->m[tok->slot[i]], e.seq);
        if (x)
            x->ws = PPL_READY;
        mask |= 1u << tok->slot[i];
        if (w) { /* the member its entry went to; NULL: that ring was adopted since */
            w->dev[tok->slot[i]] = x ? L->m[tok->slot[i]].dev : NULL;
            w->joins[tok->slot[i]] = L->m[tok->slot[i]].joins;
        }
    }
    if (w) { /* its usable rows [ulo, uhi) are what cuts since the reservation left */
        w->seq = e.seq;
        w->slots = mask;
        w->span = nrows;
        w->open = w->ulo < w->uhi;
        tok->win = (int)(w - L->win) + 1;
        L->win_made++;
    }
    /* Windows may overlap: between two whole-stripe entries the replay's result does not depend
     * on their order (each recomputes or refuses its rows), so only other entries cut. */
    if (!w)
        ppl_win_cut(L, row, e.nrows, NULL);
    pthread_mutex_unlock(&L->lock);
    if (!r5_ppl_commit(r, L, tok->slot, nt, e.seq))
        return 0;
    return r5_alive(r) ? 0 : -EIO;
}

int r5_ppl_log_full(struct r5_req *q, uint64_t row, uint64_t count, struct r5_ppl_tok *tok)
{
    struct r5_ppl *L = q->p->ppl;
    tok->n = 0;
    tok->win = 0;
    if (!L || !L->on || !count)
        return 0;
    return full_entry(q, row, count, count, NULL, tok);
}

/* A run at row is near an end of a recent run (slack rows either side: a stream's requests
 * arrive a few at a time, not strictly in order). Lock held. */
static bool near_recent(const struct r5_ppl *L, uint64_t row, uint64_t slack)
{
    for (int i = 0; i < PPL_NWIN; i++)
        if (L->recent[i] && row + slack >= L->recent[i] && row <= L->recent[i] + slack)
            return true;
    return false;
}

int r5_ppl_log_stream(struct r5_req *q, uint64_t row, uint64_t count, struct r5_ppl_tok *tok)
{
    struct r5_ppl *L = q->p->ppl;
    struct raid_priv *r = q->r;
    tok->n = 0;
    tok->win = 0;
    if (!L || !L->on || !count)
        return 0;
    if (!L->win_on)
        return full_entry(q, row, count, count, NULL, tok);
    uint64_t slack = 2 * (count > r->l.g.members ? count : r->l.g.members);
    struct ppl_win *w = NULL;
    pthread_mutex_lock(&L->lock);
    for (int i = 0; i < PPL_NWIN; i++) {
        struct ppl_win *x = &L->win[i];
        if (!x->open || row < x->ulo || row + count > x->uhi)
            continue;
        if (!win_members_same(r, x)) {
            win_close(L, x); /* a member failed, joined or was replaced since: log afresh */
            continue;
        }
        x->holds++;
        L->recent[L->recent_i++ % PPL_NWIN] = row + count;
        tok->seq = x->seq;
        tok->win = i + 1;
        tok_slots(tok, x->slots);
        pthread_mutex_unlock(&L->lock);
        /* The entry may still be on its way (its creator's log write): wait for it. */
        if (!r5_ppl_commit(r, L, tok->slot, tok->n, tok->seq))
            return 0;
        return r5_alive(r) ? 0 : -EIO;
    }
    bool stream = near_recent(L, row, slack);
    /* The stream moved past the end of a window: close it (its late writes may still end). */
    for (int i = 0; i < PPL_NWIN; i++) {
        struct ppl_win *x = &L->win[i];
        if (x->open && row + count > x->uhi && row <= x->uhi + slack) {
            win_close(L, x);
            stream = true;
        }
    }
    L->recent[L->recent_i++ % PPL_NWIN] = row + count;
    for (int pass = 0; stream && !w && pass < 2; pass++) {
        if (pass) /* every slot taken: close the idle ones (their entries complete) */
            for (int i = 0; i < PPL_NWIN; i++)
                if (!L->win[i].holds)
                    win_close(L, &L->win[i]);
        for (int i = 0; !w && i < PPL_NWIN; i++)
            if (!L->win[i].used)
                w = &L->win[i];
    }
    uint64_t rows = r->l.min_data / r->l.g.chunk, nrows = count;
    if (w) {
        nrows = count > L->win_rows ? count : L->win_rows;
        nrows = nrows < rows - row ? nrows : rows - row;
        nrows = nrows > UINT32_MAX ? UINT32_MAX : nrows;
        /* Reserved with its rows, so entries logged before it opens cut it too. */
        *w = (struct ppl_win){.row = row,
                              .end = row + nrows,
                              .ulo = row,
                              .uhi = row + nrows,
                              .holds = 1,
                              .used = true};
    }
    pthread_mutex_unlock(&L->lock);
    return full_entry(q, row, count, nrows, w, tok);
}
