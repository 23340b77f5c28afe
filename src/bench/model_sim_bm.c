/* The write-intent bitmap in the HDD simulation (run_model_sim): a write waits until the bits of
 * the member regions it touches are durable, as src/raid/bitmap.c makes them (an area write,
 * FUA, on every member at once; one at a time, shared by the writers that came meanwhile). */
#include <math.h>
#include <stdlib.h>

#include "bench/model_sim_int.h"
#include "raid/bitmap.h"

double sim_bm_init(struct sim *s, const struct run_counts *a, const struct run_counts *b,
                   double creq, double cwrites)
{
    s->bm = NULL;
    if (!b->bm_region || !b->bm_size || b->bm_sets < a->bm_sets || b->bm_bits < a->bm_bits ||
        cwrites <= 0 || creq <= 0)
        return 0;
    struct sim_bm *bm = calloc(1, sizeof(*bm));
    if (!bm)
        return 0;
    bm->region = b->bm_region;
    bm->off = b->bm_off;
    bm->size = b->bm_size;
    bm->nreg = (s->span + bm->region - 1) / bm->region;
    if (bm->nreg < 1)
        bm->nreg = 1;
    bm->gen = calloc((size_t)bm->nreg, sizeof(*bm->gen));
    bm->pass = calloc((size_t)bm->nreg, sizeof(*bm->pass));
    if (!bm->gen || !bm->pass) {
        s->bm = bm;
        sim_bm_free(s);
        return 0;
    }
    /* Which writes find their region's bit clear: the trial set bm_bits bits over its region
     * entries (a sequential stream enters each region of the job once per pass, a random write
     * enters one). The simulation runs longer than the trial and clears no bit itself, so it
     * repeats the trial: a sequential stream finds the first bm_bits of every `entries` regions
     * it enters clear (fio's stream starts at the job's start and sets what it enters, so the
     * regions it finds clear come in one run), a random write finds its region clear at the
     * trial's rate. */
    bm->entries = cwrites;
    if (s->in->seq)
        bm->entries =
            cwrites * creq / ((double)bm->region * (double)sim_data_members(s->in->level, s->n));
    bm->bits = fmin(bm->entries, (double)(b->bm_bits - a->bm_bits));
    for (uint64_t i = 0; i < bm->nreg; i++)
        bm->pass[i] = UINT64_MAX; /* drawn at the first entry */
    bm->ahead_end = UINT64_MAX;
    bm->refill_at = UINT64_MAX;
    s->bm = bm;
    return (double)(b->bm_sets - a->bm_sets);
}

void sim_bm_free(struct sim *s)
{
    if (s->bm) {
        free(s->bm->gen);
        free(s->bm->pass);
    }
    free(s->bm);
    s->bm = NULL;
}

uint64_t sim_write_aoff(struct sim *s)
{
    uint64_t blocks = s->creq ? s->wspan / s->creq : 0;
    if (blocks < 1)
        return 0;
    if (!s->in->seq)
        return (sim_rand(s) % blocks) * s->creq;
    if (s->wpos + s->creq > blocks * s->creq) {
        s->wpos = 0;
        s->wpass++;
    }
    uint64_t off = s->wpos;
    s->wpos += s->creq;
    return off;
}

/* The member data range [*lo, *hi) write sl touches (src/raid/rangelock.c raid_member_span:
 * whole chunks of every row it reaches). */
static void sim_bm_span(const struct sim *s, const struct sim_slot *sl, uint64_t *lo, uint64_t *hi)
{
    uint64_t d = (uint64_t)sim_data_members(s->in->level, s->n);
    uint64_t chunk = s->in->geom && s->in->geom->chunk ? s->in->geom->chunk : 1;
    uint64_t row = chunk * d, last = sl->aoff + (s->creq ? s->creq : 1) - 1;
    *lo = sl->aoff / row * chunk;
    *hi = (last / row + 1) * chunk;
    if (d == 1) { /* a mirror's member range is the array's */
        *lo = sl->aoff;
        *hi = last + 1;
    }
}

/* Start the area write of every generation asked for so far, on every member. */
static void sim_bm_write(struct sim *s)
{
    struct sim_bm *bm = s->bm;
    struct emul_hreq r = {
        .off = bm->off, .len = bm->size, .dir = EMUL_DIR_WRITE, .kind = EMUL_H_IO};
    bm->writing = true;
    bm->wgen = bm->want;
    bm->nops = s->n;
    for (int m = 0; m < s->n; m++)
        if (emul_hq_add(&s->m[m], &s->hq[m], &r, true, bm, s->now, sim_hdd_done, s))
            sim_bm_done(s); /* queue full (never at fio's depths): counted as done */
}

/* A region whose bit is not being set: clear (gen 0) or set as the trial found them (its state
 * holds for the rest of a sequential stream's pass). */
static void sim_bm_draw(struct sim *s, uint64_t i)
{
    struct sim_bm *bm = s->bm;
    if (bm->gen[i] <= bm->done && (!s->in->seq || bm->pass[i] != s->wpass)) {
        bool fresh = s->in->seq ? fmod((double)bm->nent++, bm->entries) < bm->bits
                                : sim_unit(s) * bm->entries < bm->bits;
        bm->gen[i] = fresh ? 0 : bm->done;
        bm->pass[i] = s->wpass;
    }
}

/* Set the regions of the look-ahead window from ahead_end on that the trial found clear
 * (drawn now, as their entry), up to the first set one and at most one window: they take the
 * generation asked for next (want + 1). Returns how many. */
static uint64_t sim_bm_window(struct sim *s)
{
    struct sim_bm *bm = s->bm;
    uint64_t want = bm_ahead_regions(bm->region), n = 0, from = bm->ahead_end;
    for (uint64_t j = from; j < bm->nreg && j < from + want; j++, n++) {
        sim_bm_draw(s, j);
        if (bm->gen[j] != 0)
            break;
        bm->gen[j] = bm->want + 1; /* pending for a write of this span, not a stream step */
        bm->ahead_end = j + 1;
    }
    /* bitmap.c bm_arm_refill: a write in the window's second half asks for the next one */
    uint64_t half = want / 2;
    bm->refill_at = bm->ahead_end < bm->nreg && bm->ahead_end > half && n > 0 ? bm->ahead_end - half
                                                                              : UINT64_MAX;
    return n;
}

/* bitmap.c bm_refill: a stream write in region i >= refill_at has the cleaner set the next
 * window in an area write of its own; no request waits for it. */
static void sim_bm_refill(struct sim *s, uint64_t i)
{
    struct sim_bm *bm = s->bm;
    if (i < bm->refill_at || i >= bm->ahead_end || bm->ahead_run < BM_AHEAD_RUN)
        return;
    bm->refill_at = UINT64_MAX;
    if (!sim_bm_window(s))
        return;
    bm->want++;
    if (!bm->writing)
        sim_bm_write(s);
}

/* bitmap.c bm_get's stream look-ahead: a sequential stream sets clear region i (not yet in an
 * area write); once BM_AHEAD_RUN regions were set one after the other, the regions ahead that
 * the trial found clear are set with it (sim_bm_window). */
static void sim_bm_ahead(struct sim *s, uint64_t i)
{
    struct sim_bm *bm = s->bm;
    /* bitmap.c bm_stream_goes_on: the next region, or every region between is set */
    bool on = i >= bm->ahead_end && i - bm->ahead_end <= BM_AHEAD_MAX;
    for (uint64_t j = bm->ahead_end; on && j < i; j++)
        on = bm->gen[j] != 0;
    bm->ahead_run = on ? bm->ahead_run + 1 : 1;
    bm->ahead_end = i + 1;
    bm->refill_at = UINT64_MAX;
    if (bm->ahead_run >= BM_AHEAD_RUN)
        sim_bm_window(s);
}

bool sim_bm_wait(struct sim *s, struct sim_slot *sl)
{
    struct sim_bm *bm = s->bm;
    if (!bm)
        return false;
    uint64_t lo, hi;
    sim_bm_span(s, sl, &lo, &hi);
    uint64_t first = lo / bm->region, last = (hi - 1) / bm->region;
    bool clear = false, pending = false;
    for (uint64_t i = first; i <= last && i < bm->nreg; i++) {
        sim_bm_draw(s, i);
        if (bm->gen[i] == 0 && s->in->seq)
            sim_bm_ahead(s, i); /* region i is clear: want + 1 is asked for below */
        clear |= bm->gen[i] == 0;
        pending |= bm->gen[i] > bm->done;
    }
    if (!clear && !pending) {
        if (s->in->seq)
            sim_bm_refill(s, last);
        return false;
    }
    /* bitmap.c bm_get: a clear bit is set in the image, a new generation; a bit set by another
     * writer whose area write has not ended is waited for at the generation asked for now. */
    if (clear)
        bm->want++;
    for (uint64_t i = first; i <= last && i < bm->nreg; i++)
        if (bm->gen[i] == 0)
            bm->gen[i] = bm->want;
    sl->bmgen = bm->want;
    sl->bmwait = true;
    sl->ready = false;
    sl->nops = 0;
    sl->t = s->now;
    if (!bm->writing)
        sim_bm_write(s);
    return true;
}

void sim_bm_done(struct sim *s)
{
    struct sim_bm *bm = s->bm;
    if (--bm->nops > 0)
        return;
    bm->done = bm->wgen;
    bm->writing = false;
    bm->ended = true; /* not from here: this runs inside a member's queue */
}

void sim_bm_kicks(struct sim *s)
{
    struct sim_bm *bm = s->bm;
    if (!bm || !bm->ended)
        return;
    bm->ended = false;
    for (int i = 0; i < s->depth; i++) {
        struct sim_slot *sl = &s->slot[i];
        if (sl->bmwait && sl->bmgen <= bm->done) {
            sl->bmwait = false;
            sim_hdd_start(s, sl);
        }
    }
    if (!bm->writing && bm->done < bm->want)
        sim_bm_write(s);
}
